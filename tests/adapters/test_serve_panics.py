"""``seamline serve`` answers a request whose model panicked, and keeps serving the others.

A third party's tokenizer panicked in ``prepare`` (pyo3's ``PanicException``, a
``BaseException``): the queue took it for a Ctrl-C and the engine's pass loop caught
``Exception`` only, so the engine thread ended silently. That request was never
answered, nor any later one, while ``/healthz`` said ready and the queue gauges 0. Now
a panic fails its request (400 when ``prepare`` failed on the text, as an exception
there is; else 500), and if the engine thread ever ends (here: a component's
``sys.exit()``), ``/healthz`` says so, waiting requests are answered and the server is
told to stop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.core.embedder import Embedder
from tests.core.panicky import EXIT_IN_COLLATE, PANIC_IN_COLLATE, PANIC_IN_PREPARE, panicky_registry
from tests.fresh_logging import logging_as_in_a_fresh_process


@pytest.fixture
def started() -> Iterator[tuple[Engine, list[BaseException]]]:
    embedder = Embedder(
        {"use": "toy"}, "native", {"batch_size": 4, "buckets": [8]}, registry=panicky_registry()
    )
    engine = Engine(embedder, Limits(), ServeMetrics())
    failures: list[BaseException] = []
    with logging_as_in_a_fresh_process():
        engine.start(failures.append)
        try:
            deadline = time.monotonic() + 60
            while engine.state == "loading" and time.monotonic() < deadline:
                time.sleep(0.01)
            assert engine.state == "ready", failures
            yield engine, failures
        finally:
            engine.stop()


def talk(engine: Engine, *posted: str) -> list[httpx.Response]:
    """POST each text to ``/v1/embeddings`` in turn (20 s each at most), then GET /healthz."""
    app = build_app(Served(engine, None, Limits(), engine.metrics, "m"))  # type: ignore[arg-type]

    async def scenario() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            answers = []
            for text in posted:
                body: dict[str, Any] = {"input": text, "model": "m"}
                answer = client.post("/v1/embeddings", json=body)
                answers.append(await asyncio.wait_for(answer, 20))
            answers.append(await client.get("/healthz"))
            return answers

    return asyncio.run(scenario())


def test_a_panic_fails_its_request_and_the_next_ones_are_answered(
    started: tuple[Engine, list[BaseException]],
) -> None:
    engine, failures = started
    prepared, collated, fine, health = talk(engine, PANIC_IN_PREPARE, PANIC_IN_COLLATE, "fine")
    assert prepared.status_code == 400, prepared.text
    error = prepared.json()["error"]
    assert error["code"] == "unembeddable"
    assert "prepare failed: PanicException" in error["message"]
    assert collated.status_code == 500, collated.text
    assert collated.json()["error"]["code"] == "internal_error"
    assert fine.status_code == 200, fine.text
    assert health.status_code == 200
    assert health.json()["status"] == "ready"
    assert not failures


def test_an_engine_thread_that_ends_is_no_longer_ready_and_answers_who_waits(
    started: tuple[Engine, list[BaseException]],
) -> None:
    engine, failures = started
    stopped, after, health = talk(engine, EXIT_IN_COLLATE, "fine")
    assert stopped.status_code == 503, stopped.text
    assert "the model stopped serving: SystemExit: 3" in stopped.json()["error"]["message"]
    assert after.status_code == 503, after.text
    assert health.status_code == 503
    assert health.json()["status"] == "failed"
    assert health.json()["error"] == "SystemExit: 3"
    assert engine.metrics.ready._value.get() == 0
    assert [type(f) for f in failures] == [SystemExit], "the server is told to stop"
