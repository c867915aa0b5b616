"""The files a loader's input names, with their sizes and times.

One listing for the host, which fingerprints the input at the start of a run so that
``--resume`` after the input changed is refused, and for the sink kit, which then says
what changed: a refusal that said only "the input files under 'notes' (added, removed or
modified)" left the user to find which of thousands of files, often one nobody meant to
add (an editor's swap file, a ``.DS_Store``, a log written into the folder).

An input is a ``Path`` (a file, or a folder whose regular files are listed, symlinked
folders not followed) or a glob pattern (:func:`~seamline.contracts.loader.
input_glob_files`, the loader's own matching), as a loader's configuration types it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from seamline.contracts.loader import input_glob_files

InputEntry = Path | str
"""One input of a loader: a path (``Path``) or a glob pattern (``str``)."""


def input_files(entry: InputEntry) -> Iterator[tuple[str, int, int]]:
    """``(name, size, mtime_ns)`` of each regular file of ``entry``: for a path, named
    relative to it (``"."`` for the file itself); for a pattern, as matched."""
    if isinstance(entry, Path):
        yield from _under(entry)
        return
    for name in input_glob_files(entry):
        try:
            found = os.stat(name)
        except OSError:
            continue
        yield name, found.st_size, found.st_mtime_ns


def _under(path: Path) -> Iterator[tuple[str, int, int]]:
    try:
        info = path.stat()
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        yield ".", info.st_size, info.st_mtime_ns
        return
    if not stat.S_ISDIR(info.st_mode):
        return
    for directory, _, names in os.walk(path):  # symlinked directories are not followed
        for name in names:
            full = os.path.join(directory, name)
            try:
                found = os.stat(full)
            except OSError:
                continue
            if stat.S_ISREG(found.st_mode):
                yield os.path.relpath(full, path), found.st_size, found.st_mtime_ns


def shown_name(entry: InputEntry, name: str) -> str:
    """A file of ``entry`` (named as :func:`input_files` names it) as a user finds it from
    the working directory: ``notes/a.txt`` for ``a.txt`` under the path ``notes``."""
    if isinstance(entry, str):
        return name
    return str(entry) if name == "." else os.path.join(entry, name)


def changed_since(entries: Sequence[InputEntry], since_ns: int) -> list[str]:
    """The files of ``entries`` modified at or after ``since_ns`` (a time in nanoseconds,
    as ``time.time_ns``), as :func:`shown_name` shows them, sorted.

    A file added or edited since then has a later time unless it was given an older one
    (``touch -r``, ``cp -p``, an archive's); a removed file is not here at all.
    """
    return sorted(
        shown_name(entry, name)
        for entry in entries
        for name, _, mtime in input_files(entry)
        if mtime >= since_ns
    )
