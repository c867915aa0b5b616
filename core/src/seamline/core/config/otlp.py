"""An OTLP receiver's address, checked where it is given, before any span is made.

The exporters take whatever URL they are handed and fail only when they first send:
``not a url``, ``http://[::1``, ``localhost:4318`` (no scheme), ``ftp://x``,
``file:///etc/passwd`` or ``http://127.0.0.1:99999`` ran a whole pipeline, exited 0
after seconds of retries with one line of OpenTelemetry's own, and lost every span. A
receiver is reached over ``http://`` or ``https://`` (gRPC too: the scheme says whether
the channel is secure), at a host and a port a socket can use.

A message names what is wrong and never quotes the URL: an endpoint may carry a
credential in its query or its user part (:mod:`seamline.adapters.exporter_secrets`).
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit, urlunsplit

SCHEMES = ("http", "https")
FORM = "http://HOST:PORT (or https://)"
"""How an endpoint is written, for messages."""


def endpoint_problem(url: str, *, bare_host_port: bool = False) -> str | None:
    """What keeps ``url`` from being an OTLP receiver's address, or None.

    ``bare_host_port``: ``HOST:PORT`` without a scheme is accepted too, as the gRPC
    exporter reads it from ``OTEL_EXPORTER_OTLP_ENDPOINT`` (its default,
    ``localhost:4317``, is written so).
    """
    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError as err:
        return f"is not a URL ({err}): write it as {FORM}"
    try:
        port = parts.port  # parsed here: a port out of range or not a number raises
    except ValueError:
        return f"has a port that is not a number from 1 to 65535: write it as {FORM}"
    if parts.scheme.lower() not in SCHEMES:
        bare = _host_port(text)
        if bare is not None and bare_host_port:
            return None
        if bare is not None:  # localhost:4318: urlsplit reads "localhost" as the scheme
            return f"has no scheme: write http://{bare} (or https://{bare})"
        if parts.scheme and "//" in text:
            return (
                f"has the scheme {parts.scheme!r}: an OTLP receiver is reached over http:// "
                f"or https://; write it as {FORM}"
            )
        return f"is not a URL with a scheme and a host: write it as {FORM}"
    if not parts.hostname or any(c.isspace() for c in parts.hostname):
        return f"names no host: write it as {FORM}"
    if port == 0:
        return f"has a port that is not a number from 1 to 65535: write it as {FORM}"
    return None


def _host_port(text: str) -> str | None:
    """``text`` as ``host:port`` alone (no path, query or user part), or None."""
    try:
        parts = urlsplit(f"//{text}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or port is None or port == 0:
        return None
    if parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return parts.netloc


def with_signal_path(base: str, signal: str) -> str:
    """The URL of one signal under a base URL: ``/v1/<signal>`` added to its path.

    Added to the path, not to the text: a base with a query
    (``http://host/otlp?token=x``) was sent to ``/otlp?token=x/v1/traces``, the signal's
    path inside the query, where the receiver never saw it.
    """
    parts: SplitResult = urlsplit(base.strip())
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/v1/{signal}"))
