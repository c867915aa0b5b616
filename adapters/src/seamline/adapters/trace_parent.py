"""A command's trace joins its caller's, named by ``TRACEPARENT`` in the environment.

OpenTelemetry's environment-variable carrier (the specification's "context propagation
through environment variables", which CI systems use to put a job's commands in the
pipeline's trace): each field of the configured propagator (``OTEL_PROPAGATORS``, by
default ``tracecontext,baggage``) is read from the variable of its name in upper case,
``-`` as ``_``: ``TRACEPARENT``, ``TRACESTATE``, ``BAGGAGE``. The Python API already
joined the caller's current span; ``seamline run`` began a trace of its own whatever
the variables said. A value the propagator cannot read is one warning line, and the
run goes on in a trace of its own: a CI variable gone stale is no reason to stop it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context, trace

from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import cut
from seamline.core import check_propagators, extract_trace_context

log = get_logger("seamline.adapters.telemetry")

_NOT_TRACE = {"baggage"}
"""Fields that carry no trace: set alone, there is no parent to miss."""


def variable_of(field: str) -> str:
    """The environment variable of a propagator's field: ``traceparent`` -> ``TRACEPARENT``."""
    return field.upper().replace("-", "_")


def parent_from_environment(environ: Mapping[str, str]) -> context.Context | None:
    """The caller's context the environment names (None: none, or one not understood).

    ``OTEL_PROPAGATORS`` is checked before OpenTelemetry builds the propagators (a name
    not installed is a ``UserError``, where OpenTelemetry raised a bare ``ValueError``).
    """
    check_propagators()
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    for field in sorted(propagate.get_global_textmap().fields):
        value = environ.get(variable_of(field))
        if value:
            carrier[field] = value
    if not carrier:
        return None
    parent = extract_trace_context(carrier)
    if trace.get_current_span(parent).get_span_context().is_valid:
        return parent
    if set(carrier) - _NOT_TRACE:
        given = ", ".join(f"{variable_of(f)}={cut(v, 80)!r}" for f, v in carrier.items())
        log.warning(
            f"{given}: not a trace context the propagators can read (W3C TRACEPARENT: "
            "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>); this command starts "
            "a trace of its own",
        )
    return None


@contextmanager
def joined_from_environment(environ: Mapping[str, str]) -> Iterator[None]:
    """Inside: the environment's parent (:func:`parent_from_environment`) is current, so
    the command's root span is its child; outside, nothing changed."""
    parent = parent_from_environment(environ)
    if parent is None:
        yield
        return
    token = context.attach(parent)
    try:
        yield
    finally:
        context.detach(token)
