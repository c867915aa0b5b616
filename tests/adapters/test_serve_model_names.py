"""The ``model`` an embedding request names is not checked (clients configured with
OpenAI's model name work unchanged), but a name that is not the one served is logged
once: a client that meant another model was answered with this server's vectors, a 200,
and nothing anywhere said so. At most :data:`MAX_NAMES_NOTED` names, so that a client
sending a new name each time fills neither the log nor the server's memory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import pytest
from structlog.testing import capture_logs

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.catalog import MAX_NAMES_NOTED, ModelNames
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from tests.adapters.in_process import ReadyEngine
from tests.fresh_logging import logging_as_in_a_fresh_process

NOTED = "an embedding request names a model this server does not serve"


@pytest.fixture(autouse=True)
def fresh_logging() -> Iterator[None]:
    with logging_as_in_a_fresh_process():
        yield


class AnsweringEngine(ReadyEngine):
    """Answers every text with a zero vector at once."""

    def submit(self, texts: list[str], characters: int, loop: Any, queries: bool = False) -> Any:
        future = loop.create_future()
        future.set_result(None)
        rows = np.zeros((len(texts), self.dimension), np.float32)
        pending = SimpleNamespace(result=lambda: rows, tokens=3, cancel=lambda: False)
        return pending, future


def warnings_for(names: list[str | None]) -> list[dict[str, Any]]:
    engine: Any = AnsweringEngine()
    index: Any = None  # no search here
    app = build_app(Served(engine, index, Limits(), ServeMetrics(), "embed-docs"))

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            for name in names:
                body = {"input": "a"} if name is None else {"input": "a", "model": name}
                answer = await client.post("/v1/embeddings", json=body)
                assert answer.status_code == 200, answer.text

    with capture_logs() as logs:
        asyncio.run(scenario())
    return [line for line in logs if line["event"].startswith(NOTED)]


def test_an_unknown_model_name_is_logged_once_and_still_answered() -> None:
    sent = ["text-embedding-3-small", "embed-docs", None, "text-embedding-3-small", "e5"]
    logged = warnings_for(sent)
    assert [line["asked"] for line in logged] == ["text-embedding-3-small", "e5"]
    assert all(line["log_level"] == "warning" for line in logged)
    assert all(line["served"] == "embed-docs" for line in logged)


def test_at_most_a_bounded_number_of_names_is_logged() -> None:
    logged = warnings_for([f"model-{i}" for i in range(MAX_NAMES_NOTED + 4)])
    assert len(logged) == MAX_NAMES_NOTED
    assert [line["further_names_logged"] for line in logged][-2:] == [True, False]


def test_the_names_kept_are_bounded_too() -> None:
    names = ModelNames("m")
    for i in range(1000):
        names.note(f"n{i}")
    assert len(names._noted) == MAX_NAMES_NOTED
