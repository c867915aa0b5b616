"""The server's warm-up: ready means warm, and a stop during the warm-up is never ready.

In process, with an engine whose model is a stand-in (its warm-up held until the test
lets it end), so that the order of a stop and the warm-up's end is the test's to choose.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from structlog.testing import capture_logs

from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from tests.fresh_logging import logging_as_in_a_fresh_process


class HeldWarmUp:
    """An embedder whose warm-up (its first ``encode``) lasts until ``release`` is set."""

    def __init__(self) -> None:
        self.warming = threading.Event()
        self.release = threading.Event()
        self.closed = False

    def encode(self, texts: list[str]) -> np.ndarray:
        self.warming.set()
        assert self.release.wait(30), "the test never ended the warm-up"
        return np.zeros((len(texts), 4), np.float32)

    def drain(self, timeout: float) -> int:
        time.sleep(timeout)
        return 0

    def abandon(self) -> None:
        pass  # a warm-up is not a pass: it runs to its end, as the real one does

    def close(self) -> None:
        self.closed = True


def wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.01)


def test_a_stop_during_the_warm_up_is_never_followed_by_ready() -> None:
    # SIGTERM while /healthz said loading: the server waited for the warm-up, then logged
    # "ready" after "Shutting down" and set the ready gauge to 1 on its way out.
    model = HeldWarmUp()
    metrics = ServeMetrics()
    engine = Engine(model, Limits(), metrics)  # type: ignore[arg-type]
    failures: list[BaseException] = []
    with logging_as_in_a_fresh_process(), capture_logs() as logs:
        engine.start(failures.append)
        assert model.warming.wait(30)
        stopper = threading.Thread(target=engine.stop, kwargs={"timeout": 30})
        stopper.start()
        wait_for(engine._stop.is_set, "asked to stop")
        model.release.set()  # the warm-up ends after the stop began
        stopper.join(30)
        assert not stopper.is_alive()
    events = [line["event"] for line in logs]
    assert "ready" not in events, events
    assert "stopped while the model was warming up: never ready" in events
    assert engine.state == "stopping"
    assert metrics.ready._value.get() == 0
    assert not metrics.warm
    assert failures == []
    assert model.closed, "the model is released all the same"


def test_a_warm_up_that_ends_before_any_stop_is_ready() -> None:
    model = HeldWarmUp()
    model.release.set()
    engine = Engine(model, Limits(), ServeMetrics())  # type: ignore[arg-type]
    with logging_as_in_a_fresh_process(), capture_logs() as logs:
        engine.start(lambda err: None)
        wait_for(lambda: engine.state == "ready", "ready")
        engine.stop()
    assert [line["event"] for line in logs] == ["ready"]
    assert engine.state == "stopping"
