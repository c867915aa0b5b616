"""Folders a loader's pattern would look into and cannot: refused, never passed over.

``Path.glob`` and ``glob.glob`` skip a folder they may not list without a word. A notes
folder whose ``team/`` lost its read permission was read as if ``team/`` were empty:
its documents were left out, exit 0, and ``mode: sync`` deleted their rows from the
table; an unreadable ``root`` was "matches no file". A file that cannot be read is an
error record (its rows kept); a folder that cannot be listed names no document, so the
run is refused before anything is read, naming the folder and the two ways out.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
from collections.abc import Sequence
from pathlib import Path, PurePath

from seamline.contracts import UserError
from seamline.contracts.untrusted import cut


def could_enter(parts: Sequence[str], folder: Sequence[str], *, hidden: bool) -> bool:
    """Whether the pattern ``parts`` (its last part names files) may look into ``folder``
    (its parts, relative to where the pattern starts). ``hidden``: whether a ``*`` or
    ``**`` matches a name beginning with a dot (``Path.glob``: yes; ``glob.glob``: no)."""
    if not folder:
        return True
    if len(parts) <= 1:  # only the files' part is left: no folder below is looked into
        return False
    head, name = parts[0], folder[0]
    if not hidden and name.startswith(".") and not head.startswith("."):
        return False
    if head == "**":
        return True
    return fnmatch.fnmatchcase(name, head) and could_enter(parts[1:], folder[1:], hidden=hidden)


def refuse_unlistable(root: Path, parts: Sequence[str], loader: str, *, hidden: bool) -> None:
    """A ``UserError`` naming the first folder under ``root`` that the pattern ``parts``
    would look into and that cannot be listed (``root`` itself included)."""
    failed: list[OSError] = []
    for folder, names, _ in os.walk(root, onerror=failed.append):
        if failed:
            break
        inside = Path(folder).relative_to(root).parts
        names[:] = [n for n in names if could_enter(parts, (*inside, n), hidden=hidden)]
    if not failed:
        return
    err = failed[0]
    where = err.filename if isinstance(err.filename, str) else str(root)
    raise UserError(
        f"{loader} loader: cannot list the folder {cut(where)!r} ({err.strerror or err}): "
        "the files in it would be left out without a word (and a sync would delete their "
        f"rows). {_unlistable_fix(err)}"
    )


def _unlistable_fix(err: OSError) -> str:
    """What to do about a folder that cannot be listed: "give the run read access" was
    said of one whose path is longer than the system allows, which no access mends."""
    avoid = "set the loader's pattern so that it does not look there"
    if err.errno == errno.ENAMETOOLONG:
        return (
            "Its path is longer than the system allows (PATH_MAX, 4096 bytes on Linux): "
            f"move its files to a folder nearer the root, or {avoid}"
        )
    if err.errno in (errno.EACCES, errno.EPERM):
        return f"Give the run read access to it, or {avoid}"
    return f"Mend the folder, or {avoid}"


def pattern_start(pattern: str) -> tuple[Path, list[str]]:
    """``pattern`` split where its first wildcard begins: the folder to walk from, and the
    parts from there (``data/**/*.parquet`` → ``data``, ``["**", "*.parquet"]``)."""
    parts = list(PurePath(pattern).parts)
    fixed = 0
    while fixed < len(parts) - 1 and not glob.has_magic(parts[fixed]):
        fixed += 1
    return Path(*parts[:fixed]) if fixed else Path("."), parts[fixed:]


def absent(path: Path) -> str:
    """Why ``path`` names nothing to read, in words: a link loop, or nothing there.

    ``Path.exists()`` is False for a symbolic link that leads back to itself, so such a
    path was said to not exist, and ``Path.resolve()`` raised ``RuntimeError: Symlink
    loop``, which a run reported as its own failure, advising ``--resume``.
    """
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "is a symbolic link loop: following its links leads back round to it"
    return "does not exist"
