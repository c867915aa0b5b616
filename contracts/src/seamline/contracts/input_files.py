"""The files a loader's input names, with their sizes and times.

One listing for the host, which fingerprints the input at the start of a run so that
``--resume`` after the input changed is refused, and for the sink kit, which then says
what changed: a refusal that said only "the input files under 'notes' (added, removed or
modified)" left the user to find which of thousands of files, often one nobody meant to
add (an editor's swap file, a ``.DS_Store``, a log written into the folder).

An input is a ``Path`` (a file, or a folder whose regular files are listed, symlinked
folders not followed), a glob pattern (:func:`~seamline.contracts.loader.
input_glob_files`, the loader's own matching) or a folder and a pattern in it
(:class:`Under`: :func:`~seamline.contracts.loader.input_glob_under`), as a loader's
configuration types it (:func:`input_entries`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from seamline.contracts.loader import (
    InputGlobField,
    InputGlobUnder,
    input_glob_files,
    input_glob_under,
)


class Under(NamedTuple):
    """A folder and the pattern in it that picks a loader's input files from it (a field
    marked :class:`~seamline.contracts.loader.InputGlobUnder` and the folder it names)."""

    root: Path
    pattern: str


InputEntry = Path | str | Under
"""One input of a loader: a path (``Path``), a glob pattern (``str``), or a folder and a
pattern in it (:class:`Under`)."""


class InputFile(NamedTuple):
    """One regular file of an input, as :func:`input_files` lists it."""

    name: str
    size: int
    mtime_ns: int
    """When its contents were last written, as the file says: ``touch -r``, ``cp -p``,
    ``rsync -a`` and an archive's extraction set it to another file's. The fingerprint
    holds this one: a folder copied with its times is the same input."""
    ctime_ns: int
    """When the file itself last changed (written, copied in, renamed, its time set), as
    the kernel stamps it: no tool sets it back, so it names a file added or edited since
    a time, whatever time the file was given."""

    @property
    def changed_ns(self) -> int:
        """The later of its two times: when it last changed, in any way."""
        return max(self.mtime_ns, self.ctime_ns)


def named_input_paths(config: BaseModel) -> list[tuple[str, Path | str]]:
    """Every input of a loader's configuration, in field order, with the name of the field
    each comes from: a ``Path`` value, or the string of a field typed
    :data:`~seamline.contracts.loader.InputGlob` (a glob pattern)."""
    paths: list[tuple[str, Path | str]] = []
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        values = value if isinstance(value, list | tuple) else [value]
        pattern = any(isinstance(mark, InputGlobField) for mark in field.metadata)
        paths.extend(
            (name, v) for v in values if isinstance(v, Path) or (pattern and isinstance(v, str))
        )
    return paths


def input_entries(config: BaseModel) -> list[InputEntry]:
    """The inputs of :func:`named_input_paths`, with each folder that a field marked
    :class:`~seamline.contracts.loader.InputGlobUnder` names as that folder and the pattern
    (:class:`Under`): its input is the files the pattern matches, not every file in it."""
    patterns = {
        mark.folder: getattr(config, name)
        for name, field in type(config).model_fields.items()
        for mark in field.metadata
        if isinstance(mark, InputGlobUnder) and isinstance(getattr(config, name), str)
    }
    return [
        Under(value, patterns[name]) if isinstance(value, Path) and name in patterns else value
        for name, value in named_input_paths(config)
    ]


def input_files(entry: InputEntry) -> Iterator[InputFile]:
    """Each regular file of ``entry`` (links followed): for a path or a folder with a
    pattern, named relative to the folder (``"."`` for a path that is the file itself);
    for a pattern, as matched."""
    if isinstance(entry, Path):
        yield from _walked(entry)
    elif isinstance(entry, Under):
        for path in input_glob_under(entry.root, entry.pattern):
            yield from _regular(str(path.relative_to(entry.root)), path)
    else:
        for name in input_glob_files(entry):
            yield from _regular(name, name)


def _regular(name: str, path: str | Path) -> Iterator[InputFile]:
    """``path`` as an input file named ``name``, where it is a regular file (or a link to one)."""
    try:
        found = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(found.st_mode):
        yield InputFile(name, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _walked(path: Path) -> Iterator[InputFile]:
    """The regular files at or under ``path``, named relative to it (``"."``: itself)."""
    try:
        info = path.stat()
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        yield InputFile(".", info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    for directory, _, names in os.walk(path):  # symlinked directories are not followed
        for name in names:
            full = os.path.join(directory, name)
            yield from _regular(os.path.relpath(full, path), full)


def shown_name(entry: InputEntry, name: str) -> str:
    """A file of ``entry`` (named as :func:`input_files` names it) as a user finds it from
    the working directory: ``notes/a.txt`` for ``a.txt`` under the path ``notes``."""
    if isinstance(entry, str):
        return name
    if isinstance(entry, Under):
        return os.path.join(entry.root, name)
    return str(entry) if name == "." else os.path.join(entry, name)


def shown_files(entries: Sequence[InputEntry]) -> Iterator[tuple[str, InputFile]]:
    """Each regular file of ``entries``, with the name :func:`shown_name` shows it by."""
    for entry in entries:
        for file in input_files(entry):
            yield shown_name(entry, file.name), file


def changed_since(entries: Sequence[InputEntry], since_ns: int) -> list[str]:
    """The files of ``entries`` changed at or after ``since_ns`` (a time in nanoseconds,
    as ``time.time_ns``), as :func:`shown_name` shows them, sorted.

    By :attr:`InputFile.changed_ns`: a file added or edited since then counts even where
    it was given an older time (``touch -r``, ``cp -p``, ``rsync -a``, an archive's),
    which its modification time alone hid; so does one renamed or whose mode changed. A
    removed file is not here at all.
    """
    return sorted(name for name, file in shown_files(entries) if file.changed_ns >= since_ns)
