"""The core's handles on tracing and logging: API only, never an SDK.

Like any well-behaved library, core emits through ``opentelemetry-api`` and
``structlog.get_logger()``; the application (the CLI in ``seamline.adapters``, or
whoever embeds seamline) decides where spans and log lines go.
"""

from __future__ import annotations

from opentelemetry import trace

TRACER_NAME = "seamline.core"


def tracer() -> trace.Tracer:
    """The core's tracer; a no-op until the application installs a tracer provider."""
    return trace.get_tracer(TRACER_NAME)


def component_attributes(kind: str, name: str, contract_version: str) -> dict[str, str]:
    """The span attributes that identify a component (one documented scheme)."""
    return {
        "seamline.component.kind": kind,
        "seamline.component.name": name,
        "seamline.component.contract_version": contract_version,
    }
