"""Another output whose manifest this output's would replace: outputs of one stem in one
folder share the manifest's name.

``out/t.jsonl`` and ``out/t.npy`` both publish ``out/t.manifest.json`` (and
``out/t.errors.jsonl``). A run of the second replaced the first's manifest without a word,
and ``seamline search out/t.jsonl`` then refused the first ("describes another output").
So a run refuses, before any work, to publish over the manifest of another output that
is still there; once that output is gone (or has a name of its own), nothing is lost.

The manifest is read as untrusted input: only the names it lists *inside its own folder*
(relative, no ``..``) are looked at, and only to ask whether something is there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from seamline.contracts.errors import UserError
from seamline.contracts.sink_kit._parts import read_published_manifest

_NAMES = 64
"""The most file names of another output's manifest looked at (a page of data)."""


def other_output(
    manifest_path: Path, sink: str, primary: str, destination: Path, own: set[Path]
) -> list[str]:
    """The files of another output that the manifest at ``manifest_path`` describes and that
    are still there (empty: no manifest, this output's own, or the other output is gone).

    The manifest is this output's own when ``sink`` wrote it for ``destination``: its
    ``primary`` file is the destination, or its staged parts lie in the destination's
    staging folder (``.t.jsonl.shards``). ``own`` are this output's paths besides (the
    manifest, the errors file), which both outputs name alike and are not counted.
    """
    manifest = read_published_manifest(manifest_path)
    outputs = manifest.get("outputs") if manifest else None
    if not isinstance(outputs, dict):
        return []  # none, or from before manifests listed their files: not judged
    if describes(outputs, sink, primary, destination):
        return []
    base = manifest_path.parent
    mine = {os.path.abspath(path) for path in own}
    named = list(_names(outputs))[:_NAMES]
    return [
        name
        for name in named
        if _inside(name) and os.path.abspath(base / name) not in mine and _there(base / name)
    ]


def refuse_another_output(
    manifest_path: Path, sink: str, primary: str, destination: Path, own: set[Path]
) -> None:
    """A ``UserError`` when this run would replace the manifest of another output still
    there (:func:`other_output`), before any work."""
    other = other_output(manifest_path, sink, primary, destination, own)
    if other:
        shown = ", ".join(repr(name) for name in other[:3])
        raise UserError(
            f"{sink} sink: {str(manifest_path)!r} is the manifest of another output in that "
            f"folder ({shown}), which this run would replace with its own, leaving that "
            "output without one (search refuses it then); nothing was written. Give this "
            "output another name (outputs of one name in one folder share the manifest), or "
            "remove the other output and its manifest first"
        )


def describes(outputs: Mapping[str, Any], sink: str, primary: str, destination: Path) -> bool:
    """Whether a published manifest's ``outputs`` (read as untrusted: only compared) are
    those of ``sink``'s output at ``destination``: its ``primary`` file is the destination
    or, where it names none, its staged parts (if any) lie in the destination's staging
    folder (``.t.jsonl.shards``). Another sink's, or another name's, are not: outputs of one
    stem in one folder share the manifest's name."""
    if outputs.get("sink") != sink:
        return False
    files = outputs.get("files")
    named = files.get(primary) if isinstance(files, dict) else None
    if named is not None:
        return bool(named == destination.name)
    staging = f".{destination.name}.shards"
    return all(staging in PurePosixPath(name).parts for name in _part_names(outputs.get("parts")))


def _names(outputs: Mapping[str, Any]) -> Iterator[str]:
    """Every file name ``outputs`` lists, its own and its parts'."""
    files = outputs.get("files")
    if isinstance(files, dict):
        yield from (name for name in files.values() if isinstance(name, str))
    yield from _part_names(outputs.get("parts"))


def _part_names(parts: Any) -> Iterator[str]:
    if not isinstance(parts, list):
        return
    for part in parts[:_NAMES]:
        files = part.get("files") if isinstance(part, dict) else None
        if isinstance(files, dict):
            yield from (name for name in files.values() if isinstance(name, str))


def _inside(name: str) -> bool:
    """A relative name inside the manifest's folder (the only names looked at)."""
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\0" not in name


def _there(path: Path) -> bool:
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False
