"""What an OpenTelemetry backend expects of seamline's spans: the HTTP server conventions
on a request's span, a version on every tracer scope and on the resource."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from seamline.adapters import telemetry_setup
from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.contracts.versions import installed_version
from seamline.core import telemetry
from tests.adapters.in_process import ReadyEngine
from tests.faults.call_scenarios import recorded_spans


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


def test_a_request_span_carries_the_http_server_conventions(
    spans: InMemorySpanExporter,
) -> None:
    """The span had only ``http.request.method``, ``url.path`` and the status: no
    ``url.scheme`` (Required), ``http.route``, ``server.port``, ``client.address`` or
    ``user_agent.original``; and its scope had no version."""
    engine: Any = ReadyEngine()
    index: Any = None  # an embeddings request does not search
    app = build_app(Served(engine, index, Limits(), ServeMetrics(), "m"))

    async def scenario() -> None:
        transport = httpx.ASGITransport(app=app, client=("10.1.2.3", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://h.test:8123") as c:
            await c.post("/v1/embeddings", json={"input": []}, headers={"user-agent": "ua/1"})

    asyncio.run(scenario())
    (span,) = [s for s in spans.get_finished_spans() if s.name == "POST /v1/embeddings"]
    assert span.attributes is not None
    expected = {
        "url.scheme": "http",
        "http.route": "/v1/embeddings",
        "server.address": "h.test",
        "server.port": 8123,
        "client.address": "10.1.2.3",
        "client.port": 5555,
        "user_agent.original": "ua/1",
        "http.request.method": "POST",
        "url.path": "/v1/embeddings",
    }
    assert {key: span.attributes.get(key) for key in expected} == expected
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.version == installed_version("seamline-adapters")


def test_the_core_s_tracer_names_its_version(spans: InMemorySpanExporter) -> None:
    with telemetry.tracer().start_as_current_span("seamline.test"):
        pass
    (span,) = [s for s in spans.get_finished_spans() if s.name == "seamline.test"]
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.version == installed_version("seamline-core")


def test_the_resource_names_seamline_s_version_unless_the_environment_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    version = installed_version("seamline-adapters")
    assert telemetry_setup.resource("s", {}).attributes["service.version"] == version
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "team=a,service.version=9.9")
    given = telemetry_setup.resource("s", {"OTEL_RESOURCE_ATTRIBUTES": "service.version=9.9"})
    assert given.attributes["service.version"] == "9.9"
    assert given.attributes["service.name"] == "s"
