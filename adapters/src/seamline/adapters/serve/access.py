"""The access log's line for a request carries that request's trace (``--access-log``).

uvicorn writes the line (``127.0.0.1:5000 - "POST /v1/embeddings HTTP/1.1" 200``) as the
answer's first message is sent, after the request's span has ended: the logging setup
adds the *current* span's ``trace_id`` and ``span_id`` to every line
(:mod:`seamline.adapters.logging_setup`), and there was none, so a slow request in the
access log could not be followed to its trace. The route records its span in the
request's ASGI scope (:data:`SPAN_KEY`); :class:`TracedAccessLog` makes that span
current again while uvicorn sends the answer's start, and so logs its line. A request
without a span (``/healthz``, ``/metrics``, an unknown path) logs no ids, as before.

Every answer also carries an ``x-request-id`` header (:data:`REQUEST_ID`), as OpenAI's
do and its SDK exposes (``err.request_id``, ``response.headers``): the request's trace id
(32 hex digits, the access line's ``trace_id``, the caller's when it sent a
``traceparent``), so a client's report of a failed request leads to its trace and log
lines. A request without a span, or whose span has no trace (no SDK installed), gets a
fresh random id of the same shape, which is then found nowhere else.
"""

from __future__ import annotations

import secrets
from typing import Any

from opentelemetry import context, trace

SPAN_KEY = "seamline.span"
"""Where :func:`.app._endpoint` leaves the request's span in the ASGI scope."""
REQUEST_ID = b"x-request-id"
"""The answer's header naming the request: its trace id."""


def request_id(span: trace.Span | None) -> bytes:
    """The trace id of ``span`` in hex, or a random id of the same shape if it has none."""
    if span is not None and span.get_span_context().is_valid:
        return trace.format_trace_id(span.get_span_context().trace_id).encode()
    return secrets.token_hex(16).encode()


class TracedAccessLog:
    """ASGI middleware: the request's span current while its answer's start is sent, and
    its trace id in the answer's ``x-request-id``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_in_span(message: Any) -> None:
            span = scope.get(SPAN_KEY)
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (REQUEST_ID, request_id(span))]
                message = {**message, "headers": headers}
            if message["type"] != "http.response.start" or span is None:
                await send(message)
                return
            token = context.attach(trace.set_span_in_context(span))
            try:
                await send(message)
            finally:
                context.detach(token)

        await self.app(scope, receive, send_in_span)
