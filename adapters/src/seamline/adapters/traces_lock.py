"""One run at a time writes a traces file: the first holds it, a second is refused.

A run empties its traces file when it starts (``OTEL_TRACES_EXPORTER=jsonl``, whose file
is ``seamline-trace.jsonl`` in the working folder unless named): a second run started
beside it (two cron jobs, two terminals) emptied the file under the first, whose trace
then lost most of its spans, both exiting 0. The process that empties a traces file
first takes an exclusive ``flock`` on it, kept until its telemetry is shut down; a
process that cannot take it is told, before its run starts, and empties nothing.

The lock is held by a descriptor of its own (a ``dup`` of the one opened, sharing its
lock), so that telemetry configured again in the same process (a new exporter of the
same file, opened before the old one is closed) finds the file held by its own process
and goes on. A worker appending to its driver's file (a Ray actor) takes no lock.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from seamline.contracts import UserError

_held: dict[tuple[int, int], int] = {}
"""``(device, inode)`` of each traces file this process holds → the descriptor holding it."""
_guard = threading.Lock()


def hold(path: Path, fd: int, where: str) -> None:
    """Hold the traces file open at ``fd`` (``path``, named in messages as set at ``where``)
    for this process, or a ``UserError`` when another process holds it."""
    if sys.platform == "win32":  # no flock: no lock (the file is still emptied as before)
        return
    import fcntl

    opened = os.fstat(fd)
    key = (opened.st_dev, opened.st_ino)
    with _guard:
        if key in _held:
            return  # this process's already: telemetry configured again
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"the traces file {str(path)!r} ({where}) is being written by another run "
                "that is still going (its process holds it): this run would empty it under "
                "that one. Give this run a traces file of its own, or run it when the other "
                "has ended"
            ) from None
        _held[key] = os.dup(fd)


def release_all() -> None:
    """Let go of every traces file this process holds (its telemetry shut down)."""
    with _guard:
        descriptors = list(_held.values())
        _held.clear()
    for descriptor in descriptors:
        os.close(descriptor)
