"""A server-side error of ``seamline serve`` is in its log and on the request's span.

A search of an index whose records file had gone was answered 503 ``index_unavailable``
with its reason, but the server logged nothing (without ``--access-log``) and the
request's span was an ERROR with no description and no ``error.type``: the operator
could not see why. A client's refusal (4xx) stays out of the warnings and leaves the
span's status unset, as OpenTelemetry's HTTP conventions ask of a server span.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.errors import SERVER_ERROR, ApiError
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from tests.adapters.in_process import ReadyEngine
from tests.faults.call_scenarios import recorded_spans
from tests.fresh_logging import logging_as_in_a_fresh_process

GONE = "cannot search notes.jsonl: notes.jsonl does not exist; run the pipeline again"


class BrokenIndex:
    """An index whose every search fails as :class:`~.index.IndexSearch` says it does."""

    def __init__(self, failure: Exception) -> None:
        self.failure = failure

    def find(self, asked: Any) -> dict[str, Any]:
        raise self.failure


@pytest.fixture(autouse=True)
def fresh_logging() -> Iterator[None]:
    """structlog as a new process has it: a test before, in the same worker, may have
    configured a level filter (the CLI's, warning), which ``capture_logs`` keeps and
    which then drops the info and debug lines counted here."""
    with logging_as_in_a_fresh_process():
        yield


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


def post(failure: Exception, path: str, body: Any) -> httpx.Response:
    engine: Any = ReadyEngine()
    index: Any = BrokenIndex(failure)
    app = build_app(Served(engine, index, Limits(), ServeMetrics(), "m"))

    async def scenario() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, json=body)

    return asyncio.run(scenario())


def request_span(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = [s for s in spans.get_finished_spans() if s.name == name]
    return span


def test_a_5xx_refusal_is_logged_and_explained_on_its_span(
    spans: InMemorySpanExporter,
) -> None:
    failure = ApiError(503, GONE, code="index_unavailable", kind=SERVER_ERROR)
    with capture_logs() as logs:
        answer = post(failure, "/v1/search", {"query": "resume"})
    assert answer.status_code == 503
    (line,) = [line for line in logs if line["log_level"] == "warning"]
    assert line["code"] == "index_unavailable"
    assert line["status"] == 503
    assert line["reason"] == GONE
    assert line["endpoint"] == "search"
    span = request_span(spans, "POST /v1/search")
    assert span.status.status_code is trace.StatusCode.ERROR
    assert span.status.description == GONE
    assert span.attributes is not None
    assert span.attributes["error.type"] == "index_unavailable"
    assert span.attributes["http.response.status_code"] == 503


def test_not_ready_is_an_info_line_not_a_warning(spans: InMemorySpanExporter) -> None:
    # Clients retry through a warm-up's 503s (Retry-After): a warning for each buried the
    # failures an operator looks for among dozens of lines.
    failure = ApiError(503, "the model is loading", code="not_ready", kind=SERVER_ERROR)
    with capture_logs() as logs:
        answer = post(failure, "/v1/search", {"query": "resume"})
    assert answer.status_code == 503
    assert [(line["log_level"], line["code"]) for line in logs] == [("info", "not_ready")]
    span = request_span(spans, "POST /v1/search")
    assert span.status.status_code is trace.StatusCode.ERROR


def test_a_failure_of_the_server_names_its_type_on_the_span(
    spans: InMemorySpanExporter,
) -> None:
    with capture_logs() as logs:
        answer = post(RuntimeError("disk on fire"), "/v1/search", {"query": "resume"})
    assert answer.status_code == 500
    assert "disk on fire" not in answer.text, "the details are the server's, not the client's"
    assert [line["log_level"] for line in logs] == ["error"]
    span = request_span(spans, "POST /v1/search")
    assert span.status.status_code is trace.StatusCode.ERROR
    assert span.status.description == "RuntimeError: disk on fire"
    assert span.attributes is not None
    assert span.attributes["error.type"] == "RuntimeError"


def test_a_long_reason_is_bounded(spans: InMemorySpanExporter) -> None:
    failure = ApiError(503, "x" * 100_000, code="index_unavailable", kind=SERVER_ERROR)
    with capture_logs() as logs:
        post(failure, "/v1/search", {"query": "resume"})
    (line,) = logs
    assert len(line["reason"]) <= 500
    description = request_span(spans, "POST /v1/search").status.description
    assert description is not None
    assert len(description) <= 500


def test_a_clients_refusal_is_no_warning_and_leaves_the_span_unset(
    spans: InMemorySpanExporter,
) -> None:
    with capture_logs() as logs:
        answer = post(RuntimeError("never reached"), "/v1/embeddings", {"input": []})
    assert answer.status_code == 400
    assert [line["log_level"] for line in logs] == ["debug"]
    assert logs[0]["code"] == answer.json()["error"]["code"]
    assert "reason" not in logs[0], "what the client sent stays out of the log"
    span = request_span(spans, "POST /v1/embeddings")
    assert span.status.status_code is trace.StatusCode.UNSET
    assert span.attributes is not None
    assert "error.type" not in span.attributes


def test_a_callers_request_id_is_on_the_requests_span(spans: InMemorySpanExporter) -> None:
    engine: Any = ReadyEngine()
    index: Any = BrokenIndex(RuntimeError())
    app = build_app(Served(engine, index, Limits(), ServeMetrics(), "m"))

    async def scenario() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(
                "/v1/embeddings", json={"input": []}, headers={"x-request-id": "proxy-7"}
            )

    asyncio.run(scenario())
    span = request_span(spans, "POST /v1/embeddings")
    assert span.attributes is not None
    assert span.attributes["http.request.header.x-request-id"] == ("proxy-7",)
