"""The SHA-256 of a weights file, read once per process while the file stays the same.

A run pins the digest of the weights it reads (model contract 1.4: the driver's
``pinned_config``), and the encoder its workers build checks the file against that
pin before loading it. With the local executor both happen in one process, a few
hundred milliseconds apart, and each read and hashed the whole file: 58 ms for
MiniLM's 91 MB, about five times that for MPNet's 438 MB.

The digest is therefore remembered, keyed by what changes whenever the file does:
its device and inode (a file renamed over it is another inode), size, and
modification and status-change times in nanoseconds (a write in place moves both;
``ctime`` cannot be set back by an unprivileged process). The key is read with
``fstat`` on the very stream that is hashed, before and after: a file that changed
while it was being read is not remembered. So a pin is still checked against the
bytes on disk whenever they may differ from the ones hashed; only a second read of
the same unchanged file is saved.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MAX_REMEMBERED = 64
"""Digests kept per process (a run reads one weights file; a server a few)."""

_remembered: dict[tuple[int, int, int, int, int], str] = {}


def _identity(stat: os.stat_result) -> tuple[int, int, int, int, int]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``: streamed (no copy in memory), or remembered
    from an earlier call in this process if the file has not changed since."""
    with path.open("rb") as stream:
        before = _identity(os.fstat(stream.fileno()))
        known = _remembered.get(before)
        if known is not None:
            return known
        digest = hashlib.file_digest(stream, "sha256").hexdigest()
        unchanged = _identity(os.fstat(stream.fileno())) == before
    if unchanged and len(_remembered) < MAX_REMEMBERED:
        _remembered[before] = digest
    return digest


def forget() -> None:
    """Drop every remembered digest (for tests that hash one file many times)."""
    _remembered.clear()
