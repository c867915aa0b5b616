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

A request that brings an ``x-request-id`` of its own (a proxy's, nginx's
``$request_id``, a client's) gets that one back, not the trace id in its place: the
caller's logs know the request by it. It is also on the request's span
(``http.request.header.x-request-id``), so the trace is found from it. One that is not
a plain token (:func:`callers_id`) is not believed, and the trace id is sent as before.
"""

from __future__ import annotations

import secrets
from typing import Any

from opentelemetry import context, trace
from starlette.datastructures import Headers

SPAN_KEY = "seamline.span"
"""Where :func:`.app._endpoint` leaves the request's span in the ASGI scope."""
CALLERS_ID_KEY = "seamline.callers_id"
"""Where :class:`TracedAccessLog` leaves the request's own ``x-request-id`` (believed, or
None), read once for the answer's header and the request's span."""
REQUEST_ID = b"x-request-id"
"""The answer's header naming the request: its trace id."""


MAX_ID_CHARS = 128
"""The longest ``x-request-id`` of a caller's that is sent back (a UUID is 36)."""


def callers_id(headers: Any) -> str | None:
    """The request's own ``x-request-id``, if it is a plain token: 1 to
    :data:`MAX_ID_CHARS` visible ASCII characters (no space, no control character, so that
    it cannot break a header or a log line); None otherwise."""
    given = headers.get("x-request-id")
    if not isinstance(given, str) or not 0 < len(given) <= MAX_ID_CHARS:
        return None
    return given if all("!" <= char <= "~" for char in given) else None


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
        own = scope[CALLERS_ID_KEY] = callers_id(Headers(scope=scope))

        async def send_in_span(message: Any) -> None:
            span = scope.get(SPAN_KEY)
            if message["type"] == "http.response.start":
                named = own.encode() if own is not None else request_id(span)
                headers = [*message.get("headers", []), (REQUEST_ID, named)]
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
