"""Log rendering, decided at the edge: readable on a terminal, JSON lines otherwise.

Core and components only call ``structlog.get_logger()``; this module is where
an application (here, the CLI) chooses how those lines look and where they go.
Standard-library logging from dependencies is routed through the same renderer.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from opentelemetry import trace

from seamline.adapters.exporter_secrets import HideExporterSecrets
from seamline.contracts.untrusted import visible


def _add_trace_ids(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    """Put the current trace and span ids on every line logged inside a span."""
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event.setdefault("trace_id", format(context.trace_id, "032x"))
        event.setdefault("span_id", format(context.span_id, "016x"))
    return event


def _visible_values(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Show each control character of a text value as "\ufffd" (line breaks and tabs kept).

    The console renderer prints values as they are, and a value may be data: a document id
    holding an escape sequence (``bad\x1b[31mred``) drove the terminal of whoever read the
    log, at once or later from a saved file. JSON lines escape them already.
    """
    for key, value in event.items():
        if isinstance(value, str):
            event[key] = visible(value, keep="\n\t")
    return event


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is *now*.

    A live progress bar swaps ``sys.stderr`` for a proxy that prints above the
    bar; a handler holding the original stream would scribble over it instead.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def configure_logging(
    *, json: bool | None = None, level: str = "info", stream: TextIO | None = None
) -> None:
    """Configure structlog and stdlib logging for a command-line run.

    ``json=None`` picks JSON lines unless ``stream`` is a terminal.
    """
    target: Any = stream or _CurrentStderr()
    if json is None:
        json = not target.isatty()
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_trace_ids,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=target.isatty())
    )
    numeric = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(target)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,  # a dependency's traceback, as text
                HideExporterSecrets(os.environ),  # ... scrubbed like every other string
                *([] if json else [_visible_values]),
                renderer,
            ],
            foreign_pre_chain=shared,
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # JAX and absl are chatty at INFO about platform probing; keep them to warnings.
    for noisy in ("jax", "absl", "stevedore"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
