"""A Ctrl-C or SIGTERM that Python swallowed still stops the run before it publishes.

A signal's handler raises its ``KeyboardInterrupt`` in whatever Python code the main
thread runs at that moment. When that is a callback whose exceptions Python ignores (JAX's
garbage-collection callback ``_xla_gc_callback``, a ``__del__``, a weakref callback),
Python prints "Exception ignored in: ..." and drops it: the run went on, published over
the previous output and exited 0 (3 of 24 Ctrl-C's, and 3 of 24 SIGTERMs, sent in the
first seconds of a run). A user presses Ctrl-C precisely so that a wrong run does not
replace a good output.

While :func:`stops_kept` is active, such a dropped stop is kept (``sys.unraisablehook``
is where Python reports what it drops), and :func:`raise_kept_stop`, called where a run
may safely stop (between batches, before publishing), raises it again in the main
thread. The stop then takes the path every other Ctrl-C takes.

Used by the command's runs and by the library's calls that may run long (``Pipeline.run``,
``Embedder.encode`` and a ``submit``'s ``result()``, an index's ``find``): each block is
the call's only, and the host's hook is back once the last block ends. A stop is kept
only while the main thread (where Python delivers signals, and the only one a kept stop
is raised again in) is inside a block; one dropped while only other threads are (a
worker thread's ``result()`` beside an asyncio loop) goes to the host's hook as before,
never swallowed by a block that cannot raise it.

:func:`is_interrupt` says which ``BaseException`` is such a stop (or another of Python's
own), and which is a failure that merely is not an ``Exception``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

_kept: list[KeyboardInterrupt] = []
_lock = threading.Lock()
_users = [0]
"""The blocks active now (runs in several threads of one process overlap)."""
_main_users = [0]
"""Those of them in the main thread: the only one a stop can be raised again in."""
_before: list[Any] = []
"""The hook found when the first of them began, put back when the last one ends."""


@contextlib.contextmanager
def stops_kept() -> Iterator[None]:
    """Keep every ``KeyboardInterrupt`` Python drops inside the block; forget them after it.

    Anything else Python drops goes to the hook that was there before, as it did. The
    hook is the process's: blocks in several threads share one, installed by the first
    to begin and removed by the last to end (each restoring its own replaced the host's
    hook for good when two runs overlapped and the first to begin ended first), and only
    when it is still there (a host that replaced it meanwhile keeps its own).
    """
    main = threading.current_thread() is threading.main_thread()
    with _lock:
        if _users[0] == 0:
            _kept.clear()
            _before[:] = [sys.unraisablehook]
            sys.unraisablehook = _keep
        _users[0] += 1
        _main_users[0] += main
    try:
        yield
    finally:
        with _lock:
            _users[0] -= 1
            _main_users[0] -= main
            if _main_users[0] == 0:
                _kept.clear()  # the main thread's calls are over: no stale stop for a later one
            if _users[0] == 0:
                if sys.unraisablehook is _keep:
                    sys.unraisablehook = _before[0]
                _before.clear()
                _kept.clear()


def _keep(unraisable: Any) -> None:
    stop = unraisable.exc_value
    if isinstance(stop, KeyboardInterrupt) and _main_users[0] > 0:
        _kept.append(stop)  # raised again at the next safe point, not printed
        return
    (_before[0] if _before else sys.__unraisablehook__)(unraisable)


def raise_kept_stop() -> None:
    """Raise the stop Python dropped, if any, in the main thread (where signals arrive)."""
    if _kept and threading.current_thread() is threading.main_thread():
        with _lock:
            stop = _kept.pop(0) if _kept else None
            _kept.clear()
        if stop is not None:
            raise stop


INTERRUPTS: tuple[type[BaseException], ...] = (
    KeyboardInterrupt,  # Ctrl-C, and seamline's SIGTERM or SIGHUP (``Terminated``, one of it)
    SystemExit,
    GeneratorExit,
    asyncio.CancelledError,
)
"""What stops a call rather than failing it: Python's own ``BaseException`` classes."""


def is_interrupt(error: BaseException) -> bool:
    """Whether ``error`` stops the work (Ctrl-C, a SIGTERM, ``sys.exit()``, a generator
    closed, a task cancelled) rather than failing it; an exception group is one if any
    exception it holds is.

    Every other ``BaseException`` is a failure, to be taken as an ``Exception`` is: a
    Rust library's panic (pyo3's ``PanicException``, which the ``tokenizers`` library
    raises for a text its rules fail on) is one. Taken for an interrupt, a panic in a
    third party's ``prepare`` ended ``seamline run`` with a 175-line traceback, where
    an ``Exception`` sets the document aside, and on ``seamline serve`` it put the
    request back in the queue and ended the engine's thread: every later request hung.
    """
    if isinstance(error, BaseExceptionGroup):
        return error.subgroup(INTERRUPTS) is not None
    return isinstance(error, INTERRUPTS)
