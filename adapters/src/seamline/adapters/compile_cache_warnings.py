"""JAX's warnings about compile cache entries: one log line, and the broken entry removed.

An entry cut short (a full disk while JAX wrote it: JAX writes in place) is never
repaired: JAX does not overwrite an entry that exists, so every later run warned
``Error -5 while decompressing data: incomplete or truncated stream`` and compiled
again, and JAX's raw ``UserWarning`` (two lines, a source path) went to stderr among
the JSON log lines. Here such a warning becomes one seamline log line, and the entry
that failed is removed, so the next run writes it whole.

Only that entry: the cache may be shared by every pipeline and process of the user,
and removing all of a program's entries (``jit_seamline_step-*``, every pipeline's)
on one failed write cost every other pipeline its compiled steps, silently. JAX's
warning names only the program, so the entry's key is taken from the debug lines JAX
logs, in the same thread, just before it reads (``Cache hit for key: '<key>'``) or
writes (``PERSISTENT COMPILATION CACHE MISS for '<program>' with key '<key>'``) an
entry. Those lines are kept from JAX's loggers by a filter here, and never shown
unless their loggers would show them anyway. Where the key is not known (JAX logged no
key for this program in this thread), nothing is removed: a partial entry left by a
failed write is then removed when a later run fails to read it, at the cost of one
more compile. (JAX's file cache writes in place, not to a temporary file renamed: a
failed write leaves its partial entry under the entry's own name.)

An entry is removed only when what failed may be the entry itself (its contents could
not be decompressed or deserialised; a write cut short by a full disk or ``ulimit -f``),
never when the system refused the process for a moment (:func:`_system_refused`): out
of open files or memory, a permission, an I/O error. A server at its open-files limit
read every entry with ``OSError: [Errno 24] Too many open files`` and removed each of
them, whole, from a cache every pipeline shares.

A cache the run cannot write (a read-only folder, a prepared cache) is said once, at
start (:func:`seamline.adapters.compile_cache.enable_compile_cache`), and read; its
failed writes log nothing more: every program compiled warned that its entry could
not be written, though it was compiled as always, only not kept.
"""

from __future__ import annotations

import builtins
import errno
import logging
import re
import threading
import warnings
from pathlib import Path
from typing import Any

from seamline.contracts.logs import get_logger

log = get_logger("seamline.adapters.compile_cache")

JAX_SAID = re.compile(
    r"Error (reading|writing) persistent compilation cache entry for '([^'/]+)': (.*)", re.S
)
KEY = re.compile(r"[^'/\s]+-[0-9a-f]{16,}")
KEY_SAID = re.compile(f"'({KEY.pattern})'")
"""A cache key as JAX logs it: ``'<program>-<hex digest>'`` (the entry is ``<key>-cache``)."""
KEY_LOGGERS = ("jax._src.lru_cache", "jax._src.compilation_cache", "jax._src.compiler")
"""JAX's loggers that name a key before the entry is read (``lru_cache``) or written."""
_cache: list[Path] = []  # the directory seamline pointed JAX at, once it passed the check
_read_only: list[bool] = [False]  # said once at start: its failed writes are not news


_seen = threading.local()  # keys: {program: the last key JAX logged for it in this thread}


class _KeysSeen(logging.Filter):
    """Remembers, per thread, the last key one of JAX's loggers named for each program.

    Every read JAX makes logs its key first (``Cache hit``/``Cache miss for key``), and so
    does every write (``PERSISTENT COMPILATION CACHE MISS ... with key``): the last key
    of a program in the thread is that of the entry its warning is about. The loggers
    are set to DEBUG so that JAX makes these records at all; a record is let through
    only when the logger would have shown it without that.
    """

    def __init__(self, logger: logging.Logger, level: int) -> None:
        super().__init__()
        self.logger = logger
        self.level = level  # the logger's own level before, NOTSET: its parent's

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:  # "... with key %r", key
            keys = [a for a in record.args if isinstance(a, str) and KEY.fullmatch(a)]
        else:  # an f-string: "Cache hit for key: 'jit_f-0a1b...'"
            keys = KEY_SAID.findall(str(record.msg))
        for key in keys:
            self._remember(key)
        shown = self.level
        if shown == logging.NOTSET and self.logger.parent is not None:
            shown = self.logger.parent.getEffectiveLevel()
        return record.levelno >= shown

    def _remember(self, key: str) -> None:
        keys: dict[str, str] = _seen.__dict__.setdefault("keys", {})
        keys[key.rsplit("-", 1)[0]] = key

    def watching(self) -> bool:
        """Whether JAX still makes the records (someone may have set the level since)."""
        return self in self.logger.filters and self.logger.isEnabledFor(logging.DEBUG)


_watchers: list[_KeysSeen] = []


def route_cache_warnings(directory: Path, *, read_only: bool = False) -> None:
    """Turn JAX's warnings about ``directory``'s entries into log lines (and repairs).

    ``read_only``: the run cannot write it, already said; its failed writes log nothing.
    """
    _cache[:] = [directory]
    _read_only[0] = read_only
    if not getattr(warnings.showwarning, "seamline_cache", False):
        warnings.showwarning = _shown_by(warnings.showwarning)
    if not _watchers:
        for name in KEY_LOGGERS:
            logger = logging.getLogger(name)
            watcher = _KeysSeen(logger, logger.level)
            logger.addFilter(watcher)
            logger.setLevel(logging.DEBUG)
            _watchers.append(watcher)


def failed_key(program: str) -> str | None:
    """The key of the entry of ``program`` this thread just failed to read or write;
    None where JAX may not have logged it (a level set since: the key could be stale)."""
    keys: dict[str, str] = _seen.__dict__.get("keys", {})
    key = keys.pop(program, None)
    return key if _watchers and all(w.watching() for w in _watchers) else None


def _shown_by(shown: Any) -> Any:
    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        said = JAX_SAID.match(str(message))
        if said is None or not _cache:
            shown(message, category, *args, **kwargs)
            return
        doing, program, error = said.groups()
        key = failed_key(program)
        if doing == "writing" and _read_only[0]:
            return  # said once at start: this cache keeps nothing
        kept = _system_refused(doing, error)
        removed = 0 if kept else _remove_entry(_cache[0], program, key)
        log.warning(
            f"compile cache entry could not be {'read' if doing == 'reading' else 'written'}; "
            "compiled instead",
            program=program,
            error=error.strip().splitlines()[0] if error.strip() else "",
            directory=str(_cache[0]),
            entry=f"{key}-cache" if key is not None else None,
            entries_removed=removed,
        )

    show.seamline_cache = True  # type: ignore[attr-defined]
    return show


TRANSIENT = frozenset(
    {
        errno.EMFILE,  # this process's open files
        errno.ENFILE,  # the system's
        errno.ENOMEM,
        errno.ENOBUFS,
        errno.EAGAIN,
        errno.EINTR,
        errno.EBUSY,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.EIO,  # a disk or network filesystem failing: not this entry's contents
        errno.ETIMEDOUT,
        errno.ESTALE,
    }
)
"""Errors of the system, not of an entry: a read or write they fail changed nothing in the
entry (a write they fail did not open it, or stopped before it was written)."""
ERRNO = re.compile(r"\[Errno (\d+)\]")


def _system_refused(doing: str, error: str) -> bool:
    """Whether JAX's ``error`` (``"OSError: [Errno 24] Too many open files: ..."``) says the
    system refused the process, the entry being none the worse: then it is kept.

    A read that failed in the operating system or for memory (any ``OSError``, a
    ``MemoryError``, XLA's ``RESOURCE_EXHAUSTED``, a lock's ``Timeout``) never saw the
    entry's contents. A write is different: one cut short by a full disk (``ENOSPC``) or
    ``ulimit -f`` (``EFBIG``) left a partial entry under the entry's own name, which
    JAX would never overwrite: removed, unless the error is one of :data:`TRANSIENT`.
    """
    kind = error.split(":", 1)[0].strip()
    if kind in ("MemoryError", "Timeout") or "RESOURCE_EXHAUSTED" in error:
        return True
    builtin = getattr(builtins, kind, None)
    if not (isinstance(builtin, type) and issubclass(builtin, OSError)):
        return False  # zlib's error, zstd's, XLA's: the contents are broken
    if doing == "reading":
        return True
    number = ERRNO.search(error)
    return number is not None and int(number.group(1)) in TRANSIENT


def _remove_entry(directory: Path, program: str, key: str | None) -> int:
    """Remove the entry ``<key>-cache`` (JAX writes it again), 1 if it was removed.

    Nothing when the key is unknown or is not one of ``program``'s: every other entry
    is another program's or pipeline's, whole as far as anyone knows.
    """
    if key is None or key.rsplit("-", 1)[0] != program or "/" in key:
        return 0
    try:
        (directory / f"{key}-cache").unlink()
    except OSError:
        return 0  # another process removed it, or it cannot be: JAX warns again next time
    return 1
