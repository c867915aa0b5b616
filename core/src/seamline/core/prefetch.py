"""Host work ahead of the device: a bounded producer thread.

Reading and tokenising run in a thread a bounded number of items ahead of the
consumer, so host work overlaps with compute and memory stays bounded however
large the corpus.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_DONE = object()


@dataclass(frozen=True, slots=True)
class _Raised:
    error: BaseException


def prefetched(items: Iterator[Any], depth: int) -> Iterator[Any]:
    """Run ``items`` in a producer thread, at most ``depth`` items ahead; 0 runs it inline.

    The thread runs in a copy of the caller's context, so spans it starts have the
    run as parent. An exception in the producer is re-raised in the consumer. The
    queue is first in, first out, which the orchestrator's checkpoints rely on.
    """
    if depth == 0:
        yield from items
        return
    channel: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        channel.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    _close(items)
                    return
            channel.put(_DONE)
        except BaseException as err:
            channel.put(_Raised(err))

    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(produce,), name="seamline-host", daemon=True
    )
    thread.start()
    try:
        while True:
            item = channel.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)


def _close(items: Iterator[Any]) -> None:
    """Close ``items`` here, in the thread that ran it, when the consumer stopped early.

    Left to the garbage collector, a loader's ``finally`` ran on another thread: a SQLite
    connection (and other clients bound to the thread that made them) refused to close
    there, with an "Exception ignored" report after a Ctrl-C.
    """
    close = getattr(items, "close", None)
    if callable(close):
        close()
