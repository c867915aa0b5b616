"""A Ctrl-C that Python dropped still stops ``Embedder.encode`` and ``result()`` (core.stops).

A tester's Ctrl-C during ``encode`` landed 2 times in 25 in JAX's garbage-collection
callback: Python printed "Exception ignored in: <function _xla_gc_callback>" and the call
ran on for another minute. ``Pipeline.run`` and the command already kept such a stop for
their next safe point; the embedder's calls now do too, scoped to the call. Here a monitor
drops one the same way, from a ``__del__``, after the first batch.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from seamline.contracts import BatchDone
from seamline.core.embedder import Embedder
from tests.core.test_stops import drop_a_stop
from tests.core.toy import toy_registry


class DropsAStop:
    """A monitor that drops a Ctrl-C (as a GC callback would) after the first batch."""

    name = "drops-a-stop"

    def __init__(self) -> None:
        self.batches = 0

    def bind(self, publish: Any) -> None:
        pass

    def observe(self, event: Any) -> None:
        if isinstance(event, BatchDone):
            self.batches += 1
            if self.batches == 1:
                drop_a_stop()

    def close(self) -> None:
        pass


def built(monitor: DropsAStop) -> Embedder:
    return Embedder(
        {"use": "toy"},
        "native",
        {"batch_size": 2, "buckets": [16]},
        registry=toy_registry(),
        monitors=[monitor],
    )


TEXTS = [f"w{i} w{i}" for i in range(12)]  # six batches of two


def host_hook(unraisable: object) -> None:
    """The host's own hook (an IPython kernel's, an application's)."""


def test_a_ctrl_c_python_dropped_stops_encode_at_the_next_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "unraisablehook", host_hook)
    monitor = DropsAStop()
    with built(monitor) as embedder:
        with pytest.raises(KeyboardInterrupt):
            embedder.encode(TEXTS)  # ran every batch, its Ctrl-C printed and dropped
        assert monitor.batches < len(TEXTS) // 2, "the encode went on to the end"
        assert sys.unraisablehook is host_hook, "the host's hook is back after the call"
        vectors = embedder.encode(TEXTS[:2])  # nothing stale stops the next call
        assert vectors.shape[0] == 2


def test_a_stop_dropped_during_the_last_batch_still_stops_the_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "unraisablehook", host_hook)
    monitor = DropsAStop()
    with built(monitor) as embedder:
        pending = embedder.submit(TEXTS[:2])  # one batch: dropped after the last one
        with pytest.raises(KeyboardInterrupt):
            pending.result()
    assert sys.unraisablehook is host_hook


def test_a_worker_threads_call_keeps_no_stop_it_cannot_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the main thread receives SIGINT: while only a worker thread is embedding, a stop
    # the main thread drops goes to the host's hook, as before, never swallowed by the
    # worker's block (which could not raise it in the main thread).
    seen: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))
    inside, leave = threading.Event(), threading.Event()

    class Waits:
        name = "waits"

        def bind(self, publish: Any) -> None:
            pass

        def observe(self, event: Any) -> None:
            if isinstance(event, BatchDone):
                inside.set()
                leave.wait(10)

        def close(self) -> None:
            pass

    embedder = Embedder(
        {"use": "toy"},
        "native",
        {"batch_size": 2, "buckets": [16]},
        registry=toy_registry(),
        monitors=[Waits()],
    )
    worker = threading.Thread(target=lambda: embedder.encode(TEXTS[:2]))
    worker.start()
    try:
        assert inside.wait(10)
        drop_a_stop()  # the main thread, outside any call of its own
        assert seen == [KeyboardInterrupt], "the host's hook did not get the main thread's stop"
    finally:
        leave.set()
        worker.join(30)
        embedder.close()
    assert seen == [KeyboardInterrupt], "the worker's call raised or kept nothing more"
