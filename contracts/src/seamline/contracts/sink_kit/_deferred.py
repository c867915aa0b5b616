"""Stops held back while an output is published: a publication is never half done.

A sink publishes an output as a group of steps, each one quick (the checkpoint deleted,
then the manifest, the errors file and the primary file renamed into place, in order:
:mod:`._atomic`, :mod:`._checkpoint`). A Ctrl-C, or a SIGTERM or SIGHUP the CLI turns
into one, that fell between two of them left a new manifest beside the old files, the
files not yet renamed thrown away by the group's cleanup and no checkpoint to resume
from; into a LanceDB table with ``mode: append`` the rows were in and nothing recorded
them, and ``--resume`` added them again. :func:`stops_deferred` holds such a stop until
the last step is done, then lets it take its course: the stop comes right after the
publication, where the CLI tells it as one that found the output complete.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

DEFERRED = tuple(
    found
    for found in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None))
    if found is not None
)
"""The signals held back (Windows has no SIGHUP)."""


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP are recorded, not acted on; when it
    ends, the handlers found before are put back and each signal that came is raised
    again (:func:`signal.raise_signal`), in the order they came, so its own handler acts
    on it there: a ``KeyboardInterrupt`` right after the block, or the process ended.

    Keep the block to quick steps (renames, a file deleted): a stop waits for it. Blocks
    nest: an inner one hands what it recorded to the outer one's handler.

    Only in the main thread, the one Python runs signal handlers in (and the only one
    that may install them): elsewhere the block changes nothing. No signal raises
    anything in another thread, so there a publication is never cut by one; a process
    killed outright (SIGKILL, a power cut) is what the checkpoint's order is for. A
    handler installed outside Python (``signal.getsignal`` gives None) is left as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    found = {signum: signal.getsignal(signum) for signum in DEFERRED}
    before = {signum: handler for signum, handler in found.items() if handler is not None}
    came: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        came.append(signum)

    try:
        for signum in before:
            signal.signal(signum, record)
        yield
    finally:
        _put_back(list(before.items()))
        for signum in dict.fromkeys(came):  # once each, in the order they came
            signal.raise_signal(signum)


def _put_back(handlers: list[tuple[int, Any]]) -> None:
    """Install each of ``handlers``, all of them even when a signal's own handler, once
    back, raises in between (a loop would stop there, leaving the rest only recording)."""
    if not handlers:
        return
    (signum, handler), rest = handlers[0], handlers[1:]
    try:
        signal.signal(signum, handler)
    finally:
        _put_back(rest)
