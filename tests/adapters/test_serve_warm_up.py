"""The server's warm-up: ready means warm, and a stop during the warm-up is never ready.

Mostly in process, with an engine whose model is a stand-in (its warm-up held until the
test lets it end), so that the order of a stop and the warm-up's end is the test's to
choose; and one real server, its index searched before it says ready.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from structlog.testing import capture_logs

from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.index import IndexSearch
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.adapters.serving import TEXTS, pipeline_text, serving
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


def test_a_stop_during_a_warm_up_longer_than_the_wait_says_so_at_info() -> None:
    # SIGTERM 6-8 s after start (/healthz: loading): after the wait, the warning meant for
    # a runaway batch, "the engine did not stop in time", and nothing saying never ready.
    model = HeldWarmUp()
    metrics = ServeMetrics()
    engine = Engine(model, Limits(), metrics)  # type: ignore[arg-type]
    try:
        with logging_as_in_a_fresh_process(), capture_logs() as logs:
            engine.start(lambda err: None)
            assert model.warming.wait(30)
            engine.stop(timeout=0.1)  # the compile goes on past the wait
    finally:
        model.release.set()
    said = [(line["log_level"], line["event"]) for line in logs]
    assert said == [
        (
            "info",
            "stopped during the warm-up: never ready; not waiting for the compile to finish",
        )
    ], said
    assert metrics.ready._value.get() == 0


def test_a_batch_running_past_the_stop_is_still_a_warning() -> None:
    model = HeldWarmUp()
    model.release.set()
    engine = Engine(model, Limits(), ServeMetrics())  # type: ignore[arg-type]
    running = threading.Event()
    finish = threading.Event()

    def long_pass(timeout: float) -> int:
        running.set()
        finish.wait(30)  # one batch longer than the stop waits
        return 0

    model.drain = long_pass  # type: ignore[method-assign]
    try:
        with logging_as_in_a_fresh_process(), capture_logs() as logs:
            engine.start(lambda err: None)
            assert running.wait(30)
            engine.stop(timeout=0.1)
    finally:
        finish.set()
    warnings = [line["event"] for line in logs if line["log_level"] == "warning"]
    assert warnings == ["the engine did not stop in time; exiting without waiting for it"]


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


def events_of(log: Path) -> list[str]:
    """The ``event`` of each JSON log line the server wrote (its stderr, not a terminal)."""
    events = []
    for line in log.read_text().splitlines():
        try:
            events.append(json.loads(line)["event"])
        except (ValueError, KeyError, TypeError):
            continue
    return events


def test_with_an_index_the_server_is_ready_only_once_its_search_is_warm(
    tmp_path: Path, tiny_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /healthz said ready while the query model was built at the first search: behind a
    # readiness probe, each replica's first search took 6.6 to 7.0 s (the next 0.03 s).
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert Pipeline.from_yaml("p.yaml", registry=tiny_registry).run().output.documents
    with serving(tmp_path, Path("p.yaml"), ["--index", "out/emb.jsonl"]) as server:
        server.wait_ready()
        events = events_of(server.log)
        with server.client() as client:
            found = client.post("/v1/search", json={"query": TEXTS[2], "k": 1})
    assert found.status_code == 200, found.text
    assert found.json()["data"][0]["id"] == "d2"
    assert "the index is warm" in events, events
    assert events.index("the index is warm") < events.index("ready")


def test_an_index_not_written_yet_is_said_and_the_server_is_ready_anyway(
    tmp_path: Path, tiny_registry: Registry
) -> None:
    model = HeldWarmUp()
    model.release.set()
    index = IndexSearch(tiny_registry, tmp_path / "out" / "emb.jsonl")
    engine = Engine(model, Limits(), ServeMetrics(), warm_also=index.warm)  # type: ignore[arg-type]
    with logging_as_in_a_fresh_process(), capture_logs() as logs:
        engine.start(lambda err: None)
        wait_for(lambda: engine.state != "loading", "past loading")
        engine.stop()
        index.close()
    assert engine.state == "stopping", "it was ready"
    said = [line for line in logs if line["event"].startswith("the index cannot be searched")]
    assert len(said) == 1, logs
    assert said[0]["log_level"] == "info", "a pipeline served before its first run"
    assert "/v1/search opens it at its first search" in said[0]["event"]


def test_a_stop_during_the_models_warm_up_skips_the_index() -> None:
    model = HeldWarmUp()
    warmed: list[str] = []
    engine = Engine(model, Limits(), ServeMetrics(), warm_also=lambda: warmed.append("index"))  # type: ignore[arg-type]
    with logging_as_in_a_fresh_process(), capture_logs():
        engine.start(lambda err: None)
        assert model.warming.wait(30)
        stopper = threading.Thread(target=engine.stop, kwargs={"timeout": 30})
        stopper.start()
        wait_for(engine._stop.is_set, "asked to stop")
        model.release.set()
        stopper.join(30)
    assert warmed == []


class FailedWarmUp(HeldWarmUp):
    def encode(self, texts: list[str]) -> np.ndarray:
        raise ValueError(
            "/srv/app/models/minilm/model.safetensors: sha256 mismatch, "
            "/root/.cargo/registry/src/index.crates.io-1/safetensors-0.4/src/lib.rs:12:5"
        )


def test_a_failed_warm_up_says_why_without_the_servers_paths() -> None:
    # /healthz's `error` and every 503 not_ready carried the raw exception: the server's
    # folders and a library's source paths, which /v1/search's messages hide.
    from seamline.adapters.serve.app import Served, build_app

    engine = Engine(FailedWarmUp(), Limits(), ServeMetrics())  # type: ignore[arg-type]
    with logging_as_in_a_fresh_process(), capture_logs() as logs:
        engine.start(lambda err: None)
        wait_for(lambda: engine.state == "failed", "failed")
    assert "/srv/app/models" in str(logs), "the log keeps the whole error"
    app = build_app(Served(engine, None, Limits(), ServeMetrics(), "m"))  # type: ignore[arg-type]

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [
                await client.get("/healthz"),
                await client.post("/v1/embeddings", json={"input": "x"}),
            ]

    for answer in asyncio.run(scenario()):
        assert answer.status_code == 503
        assert "sha256 mismatch" in answer.text
        assert "/srv/" not in answer.text, answer.text
        assert "/root/" not in answer.text, answer.text
