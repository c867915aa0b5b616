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
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

_kept: list[KeyboardInterrupt] = []


@contextlib.contextmanager
def stops_kept() -> Iterator[None]:
    """Keep every ``KeyboardInterrupt`` Python drops inside the block; forget them after it.

    Anything else Python drops goes to the hook that was there before, as it did.
    """
    before = sys.unraisablehook

    def keep(unraisable: Any) -> None:
        stop = unraisable.exc_value
        if isinstance(stop, KeyboardInterrupt):
            _kept.append(stop)  # raised again at the next safe point, not printed
            return
        before(unraisable)

    sys.unraisablehook = keep
    try:
        yield
    finally:
        sys.unraisablehook = before
        _kept.clear()


def raise_kept_stop() -> None:
    """Raise the stop Python dropped, if any, in the main thread (where signals arrive)."""
    if _kept and threading.current_thread() is threading.main_thread():
        stop = _kept[0]
        _kept.clear()
        raise stop
