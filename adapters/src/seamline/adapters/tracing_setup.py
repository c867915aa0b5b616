"""Tracing set-up at the edge: a tracer provider and exporters for a command-line run.

The standard OpenTelemetry variables are honoured: ``OTEL_SERVICE_NAME`` names
the service and ``OTEL_TRACES_EXPORTER=console`` prints spans. With nothing set,
spans are recorded (so trace ids reach the logs) but not exported.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

_configured: TracerProvider | None = None


def configure_tracing() -> TracerProvider:
    """Install (once) a tracer provider configured from the environment."""
    global _configured
    if _configured is not None:
        return _configured
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", "seamline")})
    provider = TracerProvider(resource=resource)
    exporters = [e.strip() for e in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",")]
    if "console" in exporters:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)
    _configured = provider
    return provider


def shutdown_tracing() -> None:
    """Flush and stop exporters before the process exits."""
    if _configured is not None:
        _configured.shutdown()
