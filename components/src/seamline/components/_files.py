"""Read a file seamline did not just write: a regular file only, never blocking, bounded.

A loader reads the user's documents; a sink reads back its own checkpoint, staged run
and manifest, which anyone who can write the output folder could have replaced. In
either case the name may hold a FIFO (opening it for reading waits for a writer that
never comes), a device (``/dev/zero`` never ends) or a file far larger than anything
seamline writes there. So every such read goes through :func:`read_regular`: the file
is opened non-blocking, checked to be a regular file *on the open descriptor* (what is
read is what was checked, whatever is renamed over the name meanwhile), and at most
``limit + 1`` bytes are read, so that a caller can tell "too large" from "exactly the
limit" without holding more than the limit in memory.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class NotRegularFile(Exception):
    """The path opened is not a regular file; the message says what it is (``a FIFO ...``)."""


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: ``a FIFO (named pipe)``, ..."""
    return "a regular file" if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "not a file")


def read_regular(path: Path, limit: int | None, *, follow_links: bool = True) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (all of it when no limit).

    Raises :class:`NotRegularFile` for anything else (a FIFO, a device, a directory,
    and a symbolic link when ``follow_links`` is false), and ``OSError`` as ``open``
    does (``FileNotFoundError`` when there is nothing at ``path``).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError:
        if not follow_links and os.path.islink(path):
            raise NotRegularFile("a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(kind_of(mode))
        # One byte past the limit, so a huge file costs no more memory than the limit
        # allows even when it grows after it was checked.
        return handle.read() if limit is None else handle.read(limit + 1)
