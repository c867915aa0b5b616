"""Request bodies parsed and checked where they cannot stall the other clients.

One event loop answers every client, ``/healthz`` included, and Kubernetes restarts a pod
whose liveness probe waits past a second. Parsed and checked on the loop, one crafted
16 MiB body froze every answer for seconds, and was refused all the same: texts of
combining marks (each checked for being blank: 1.7 s), or five million empty arrays in a
field the server ignores (5.5 s, most of it the cyclic garbage collector walking the
server's whole heap again and again while the arrays were made).

So a body over :data:`INLINE_BYTES` is parsed and checked in a worker thread. A thread
alone is not enough: ``json.loads`` is C code that holds the GIL until it returns, so
the loop still waits for the parse itself. What keeps that wait short is the collector
paused while the body is parsed, checked and dropped (the empty arrays: 0.4 s), and one
such body at a time (several at once would otherwise take the GIL in turn ahead of the
loop). A small body, nearly every request, is checked on the loop as before.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio

from seamline.adapters.serve.bodies import parse_json
from seamline.adapters.serve.errors import ApiError

INLINE_BYTES = 64 * 1024
"""Bodies up to this size are parsed and checked on the event loop (well under 10 ms)."""

BREATHER_S = 0.01
"""The pause after each body checked in a thread before the next one starts: without it,
the next parse took the GIL again before the loop had read a waiting ``/healthz``."""

Checked = TypeVar("Checked")

_ONE_AT_A_TIME = anyio.CapacityLimiter(1)


async def checked(body: bytes, check: Callable[[Any], Checked]) -> Checked:
    """``check(parse_json(body))``: on the event loop for a small body, else in a worker
    thread, one at a time, the garbage collector paused meanwhile."""
    if len(body) <= INLINE_BYTES:
        return check(parse_json(body))
    async with _ONE_AT_A_TIME:
        try:
            return await anyio.to_thread.run_sync(_check_apart, body, check)
        finally:  # the loop's turn: answer what arrived during that parse before the next
            await anyio.sleep(BREATHER_S)


def _check_apart(body: bytes, check: Callable[[Any], Checked]) -> Checked:
    with _collector_paused():
        try:
            return check(parse_json(body))
        except ApiError as err:
            # Its traceback holds the frames that held the parsed body: drop it here, in
            # this thread and while the collector is paused, not on the event loop.
            refused = err.with_traceback(None)
    raise refused


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off (one thread at a time: the limiter above). What is
    parsed is freed by reference counting as its frames end, while still paused."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
