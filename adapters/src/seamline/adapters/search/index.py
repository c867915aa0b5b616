"""An index on disk, as its manifest describes it: which sink wrote it, and where its files are.

Every first-party sink publishes ``<stem>.manifest.json`` beside its output: the
pipeline, the model and its config, the run's ``attention`` section, and
``outputs`` (the sink and the location of each file or table, relative to the
manifest; or ``outputs.parts``, the files of every shard of a run split into shards,
read part after part). Search needs nothing else to find the vectors and rebuild
the model.

The manifest is untrusted input (whoever can write the folder can edit it): it is
read and validated by :mod:`seamline.contracts.manifest` before anything in it is
used, and the files it names are taken only from the manifest's own folder.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamline.contracts import ConfigError, Sink, UserError
from seamline.contracts.manifest import (
    MANIFEST_SUFFIX,
    Manifest,
    Outputs,
    manifest_json,
    manifest_path,
    output_files,
    parse_manifest,
    read_manifest_text,
    validate_manifest,
)
from seamline.contracts.readback import OutputReader
from seamline.contracts.sink_kit import checkpoint_path
from seamline.contracts.workdir import gone_under
from seamline.core import Located, Registry, parse_located

__all__ = ["Index", "manifest_path", "open_index", "read_manifest", "sink_named"]


@dataclass(frozen=True, slots=True)
class Index:
    """An index on disk, as its validated manifest describes it."""

    manifest_path: Path
    manifest: Manifest
    """The validated manifest (one with a ``model``)."""
    located: Located
    """The manifest as parsed (strict JSON), with the place of every value where it could be
    found (for problems with the model and attention it names)."""
    outputs: Outputs
    parts: tuple[dict[str, Path], ...]
    """The files of each part, by purpose, each in the manifest's folder: one part for a
    whole output, one per shard for a run split into shards (``outputs.parts``)."""

    @property
    def sink(self) -> str:
        return self.outputs.sink

    @property
    def files(self) -> dict[str, Path]:
        """The first part's files (the only part, for a whole output)."""
        return self.parts[0] if self.parts else {}

    def readers(self, registry: Registry) -> list[OutputReader]:
        """A reader of each part, of the sink the manifest names (:func:`sink_named`)."""
        sink = sink_named(registry, self.sink, self.located.where(("outputs", "sink")))
        reader = sink.reader
        if reader is None:
            raise ConfigError(
                f"outputs.sink: the {self.sink} sink that wrote it names no reader of its "
                "output (sink contract 1.4), so search cannot read it; ask its author for one",
                self.located.where(("outputs", "sink")),
            )
        return [reader(files, self.manifest_path, self.outputs) for files in self.parts]


def sink_named(registry: Registry, name: str, where: str) -> type[Sink[Any]]:
    """The sink class registered as ``name``, as a pipeline's sink is found: a registered
    name of a distribution trust allows (never an import path). A problem is located at
    ``where`` (the manifest's ``outputs.sink``)."""
    if not name:
        raise ConfigError(
            "outputs.sink: the manifest names no sink, so how to read its output is unknown; "
            "run the pipeline again to write the output anew",
            where,
        )
    try:
        info = registry.get("sink", name)
    except UserError as err:
        raise ConfigError(f"outputs.sink: {err}", where) from None
    assert info.cls is not None  # get() returns usable entries only
    return info.cls  # type: ignore[return-value]


SHOWN_OUTPUTS = 5
"""How many outputs of a folder a message names."""


def outputs_in(folder: Path) -> tuple[list[str], int]:
    """The names of the outputs whose manifests lie in ``folder`` (``emb.lance``,
    ``notes.jsonl``; at most ``SHOWN_OUTPUTS``), for a search given the folder itself, and
    how many more there are (the list said nothing of them)."""
    found: list[str] = []
    for manifest in sorted(folder.glob("*" + MANIFEST_SUFFIX)):
        found += _outputs_of(manifest)
    return found[:SHOWN_OUTPUTS], max(0, len(found) - SHOWN_OUTPUTS)


def _outputs_of(manifest: Path) -> list[str]:
    """The names a search of the output ``manifest`` describes is given by: its files (a
    part's, for a run split into shards) whose manifest it is, the errors file aside.

    Taken from the manifest, not from the files beside it: an npy output's
    ``emb.index.jsonl`` was suggested (and is the output of no manifest), and the output of
    a run split into shards, which has no file under its name (``ray.jsonl``: its parts lie
    in ``.ray.jsonl.shards/``), was not suggested at all. (A manifest that names no outputs:
    the files beside it of that stem.)
    """
    try:
        outputs = parse_manifest(read_manifest_text(manifest), str(manifest)).outputs
    except (OSError, UserError):
        outputs = None  # searching it says what is wrong with it
    if outputs is None:  # the files beside it, then
        stem = manifest.name[: -len(MANIFEST_SUFFIX)]
        names = {e.name for e in manifest.parent.glob(glob.escape(stem) + ".*")}
        names -= {manifest.name, f"{stem}.errors.jsonl"}
    else:
        files = outputs.parts[0].files if outputs.parts else outputs.files
        names = {Path(name).name for purpose, name in files.items() if purpose != "errors"}
    return sorted(
        name
        for name in names - {"", ".", ".."}
        if manifest_path(manifest.parent / name) == manifest
    )


def refuse_unpublished(index: Path) -> None:
    """Refuse ``index`` saying ``--resume`` where a run stopped before publishing it.

    A first run interrupted after its commits leaves a checkpoint and no manifest (nor,
    for most sinks, the output): "run the pipeline again" would throw the committed work
    away, so the checkpoint's presence (where the sink kit keeps it) says to resume.
    """
    checkpoint = checkpoint_path(index)
    if checkpoint.is_file():
        raise UserError(
            f"{index} is not published: a run writing it stopped before publishing (its "
            f"checkpoint {checkpoint} is there); run that pipeline again with --resume to "
            "finish and publish it"
        )


def open_index(index: Path) -> Index:
    """Read and validate the manifest of ``index``, and find its files from it."""
    path = manifest_path(index)
    if not index.exists() and not path.exists():
        gone_under(index)  # from a deleted folder: cd again, though the name may exist
        refuse_unpublished(index)
        raise UserError(f"index {index} does not exist: run a pipeline whose sink writes it")
    try:
        text = read_manifest_text(path)
    except FileNotFoundError:
        inside, more = outputs_in(index) if index.is_dir() else ([], 0)
        if inside:
            others = f", and {more} more" if more else ""
            raise UserError(
                f"{index} is a folder of outputs, not one: name the output to search, by its "
                f"sink's path ({', '.join(str(index / name) for name in inside)}{others})"
            ) from None
        refuse_unpublished(index)
        raise UserError(
            f"{path} is missing, so the model that made {index} is unknown; re-run the pipeline "
            "that writes it: its sink publishes the manifest beside its output"
        ) from None
    located = _located(text, str(path))
    manifest = validate_manifest(located.data, str(path), located.where)
    if manifest.model is None:
        raise ConfigError(
            "not a seamline manifest (no 'model' section): search embeds the query with the "
            "model that made the index, and this manifest names none",
            located.where(()),
        )
    if manifest.outputs is None:
        raise ConfigError(
            "the manifest names no outputs (it was written before manifests listed their "
            "files): run the pipeline again to write the output anew",
            located.where(()),
        )
    outputs = manifest.outputs
    parts = output_files(outputs, path, located.where)
    files = {name: path for part in parts for name, path in part.items()}
    if index != path and files and not _names_this_output(index, files.values(), outputs.parts):
        # Outputs of one stem in one folder (emb.jsonl, emb.lance) share the manifest name:
        # the last run's manifest describes its own output, not this one.
        raise UserError(
            f"{path} describes another output ({', '.join(str(f) for f in files.values())}) "
            f"of a {outputs.sink} sink, not {index}: a later run with the same name "
            f"in {path.parent} replaced its manifest. Run the pipeline that writes {index} "
            "again, and give outputs of different sinks different names"
        )
    return Index(path, manifest, located, outputs, parts)


def _names_this_output(index: Path, files: Iterable[Path], parts: object) -> bool:
    """Whether the manifest's files are ``index``'s output.

    A whole output's files are where the sink's path says; a sharded run's parts keep
    each file's name in a folder of their own. A sharded ``emb.jsonl``'s manifest was
    once taken for ``emb.parquet``'s or ``emb.lance``'s (no such output there) and its
    rows searched under that name, exit 0.
    """
    if parts is None:
        return index.resolve() in {f.resolve() for f in files}
    return index.name in {f.name for f in files}


def _located(text: str, source: str) -> Located:
    """The manifest's data as strict JSON reads it, with the place of each value.

    The values come from JSON (a YAML parser reads ``1e-05`` as a string); the places
    from the located YAML parse of the same text, where it succeeds (JSON is YAML's
    flow style). Where it does not, a problem names the file and the field alone.
    """
    data = manifest_json(text, source)
    try:
        places = parse_located(text, source)
    except ConfigError:
        return Located(data, source)
    return Located(data, source, places.values, places.keys)


def read_manifest(index: Path) -> Manifest:
    """The validated manifest of ``index``."""
    return open_index(index).manifest
