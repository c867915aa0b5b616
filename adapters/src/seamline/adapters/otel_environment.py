"""OpenTelemetry's numeric environment variables, checked before the SDK reads them.

The SDK reads some of them when ``opentelemetry.sdk.trace`` is imported and others when a
span processor or metric reader is built, and raises a bare ``ValueError`` for a value out
of its range: ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=-1`` stopped every ``seamline run`` with
a 76-line traceback and exit code 1 (no exporter chosen at all), ``OTEL_BSP_MAX_QUEUE_SIZE=0``
said ``max_queue_size must be a positive integer`` without naming the variable. A user
who set such a variable meant something by it: the run is refused before it starts, the
variable named with what it takes (exit code 2), rather than run with a default the user
did not choose.

The OTLP exporters' timeouts raise nothing but lose every span instead: ``0`` or ``-5``
made each export give up at once (one error line, exit code 0), and ``abc`` quietly
became 10 s. The installed exporters (1.45) read them as **seconds** (``float(value)``,
default 10), although the specification says milliseconds.

So are ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``: the SDK sampled every
trace, with one warning line or none, where ``bogus`` named no sampler or the ratio was
``5``, ``-1`` or ``10%``.

This module imports no part of the SDK, so that it can be asked before the SDK is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from seamline.contracts import UserError
from seamline.contracts.untrusted import cut
from seamline.core import propagators_problem


@dataclass(frozen=True, slots=True)
class _Rule:
    """What a variable takes, as the SDK checks it."""

    least: int
    """The smallest value the SDK accepts (or the bound it must be above, with ``above``)."""
    unset: bool = False
    """Whether an empty value (no limit, as the SDK reads it) is accepted too."""
    number: bool = False
    """Whether a decimal number is accepted (milliseconds as a float), not only an integer."""
    above: bool = False
    """Whether the value must be finite and above ``least`` (a timeout: 0 gives up at once)."""
    unit: str = ""
    """The unit the SDK reads it in, where the specification says another (said in the error)."""
    empty_is_default: bool = False
    """Whether an empty value is the default, as the specification says of an empty variable
    (the HTTP exporters read an empty timeout so; the gRPC ones raise: :func:`_grpc_empty`)."""

    def takes(self) -> str:
        kind = "a number" if self.number else "an integer"
        kind = f"{kind} of {self.unit}" if self.unit else kind
        bound = "of 0 or more" if self.least == 0 and not self.above else "above 0"
        what = f"{kind} {bound}"
        return f"{what}, or an empty value for no limit" if self.unset else what

    def accepts(self, value: float) -> bool:
        """Whether the SDK would use ``value`` as the user meant it (False for NaN)."""
        if self.above:
            return math.isfinite(value) and value > self.least
        return value >= self.least


_LIMIT = _Rule(0, unset=True)
_POSITIVE = _Rule(1)
_TIMEOUT = _Rule(0, number=True, above=True, unit="seconds", empty_is_default=True)
_RULES: dict[str, _Rule] = {
    "OTEL_ATTRIBUTE_COUNT_LIMIT": _LIMIT,
    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": _LIMIT,
    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": _LIMIT,
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": _LIMIT,
    "OTEL_SPAN_EVENT_COUNT_LIMIT": _LIMIT,
    "OTEL_SPAN_LINK_COUNT_LIMIT": _LIMIT,
    "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": _LIMIT,
    "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT": _LIMIT,
    "OTEL_BSP_MAX_QUEUE_SIZE": _POSITIVE,
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": _POSITIVE,
    "OTEL_BSP_SCHEDULE_DELAY": _POSITIVE,
    "OTEL_BSP_EXPORT_TIMEOUT": _POSITIVE,  # read, not applied by the SDK (1.45): 0 means nothing
    "OTEL_METRIC_EXPORT_INTERVAL": _Rule(1, number=True),
    "OTEL_EXPORTER_OTLP_TIMEOUT": _TIMEOUT,
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": _TIMEOUT,
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": _TIMEOUT,
}
"""Each numeric variable the SDK reads, and what it takes (the SDK's own checks)."""

_DEFAULT_QUEUE, _DEFAULT_BATCH = 2048, 512
"""The batch span processor's defaults: a batch may not be larger than the queue."""


def _value(name: str, raw: str, rule: _Rule) -> float | None:
    """``raw`` as the SDK reads it (None: no limit), or a ``UserError`` naming the fix."""
    text = raw.strip()
    if (rule.unset or rule.empty_is_default) and not text:
        return None
    try:
        value = float(text) if rule.number else int(text)
    except ValueError:
        value = math.nan
    if not rule.accepts(value):  # NaN too: not a number at all
        raise UserError(
            f"${name}={cut(raw, 40)!r}: OpenTelemetry takes {rule.takes()} there. Set it to "
            f"one, or unset it ('unset {name}') for OpenTelemetry's default"
        )
    return value


SAMPLERS = (
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
    "always_on",
    "always_off",
    "traceidratio",
)
"""The names the SDK's tracer provider takes in ``OTEL_TRACES_SAMPLER`` (any case; the
default first). Samplers registered as ``opentelemetry_traces_sampler`` entry points are
loaded only by the SDK's auto-configuration (``opentelemetry-instrument``), never by the
provider seamline builds, which used its default for them: they are refused too."""
_RATIO_SAMPLERS = ("traceidratio", "parentbased_traceidratio")


def _check_sampler(environ: Mapping[str, str]) -> None:
    """Refuse a sampler the SDK would replace by its default, or a ratio it would make 1.

    An empty or unset ``OTEL_TRACES_SAMPLER_ARG`` is the specification's default ratio, 1.
    """
    raw = environ.get("OTEL_TRACES_SAMPLER", "")
    name = raw.lower()
    if raw and name not in SAMPLERS:
        raise UserError(
            f"$OTEL_TRACES_SAMPLER={cut(raw, 40)!r}: OpenTelemetry's tracer provider has no "
            "sampler of that name (it would have used parentbased_always_on, sampling every "
            f"trace a caller did not sample out). Set it to one of {', '.join(SAMPLERS)} "
            "(OTEL_TRACES_SAMPLER_ARG=0.25 with a traceidratio one samples a quarter of the "
            "traces), or unset it ('unset OTEL_TRACES_SAMPLER') for the default "
            "parentbased_always_on"
        )
    text = environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    if name not in _RATIO_SAMPLERS or not text:
        return
    try:
        ratio = float(text)
    except ValueError:
        ratio = math.nan
    if not 0 <= ratio <= 1:  # NaN too
        raise UserError(
            f"$OTEL_TRACES_SAMPLER_ARG={cut(environ['OTEL_TRACES_SAMPLER_ARG'], 40)!r}: the "
            f"{name} sampler takes the fraction of traces to sample there, a number from 0 "
            "to 1 (0.25 for a quarter; OpenTelemetry would have sampled every trace). Set it "
            "to one, or unset it ('unset OTEL_TRACES_SAMPLER_ARG') to sample every trace"
        )


_SIGNAL_TIMEOUTS = {
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT": "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
}


def _grpc_empty(environ: Mapping[str, str]) -> None:
    """Refuse an empty timeout the gRPC exporter would raise on (``float('')``): the HTTP
    exporters, the default, read it as their 10 s, as the specification says of an empty
    variable, and an empty one was refused for every command once (exit code 2, with no
    OTLP exporter chosen at all)."""
    general = environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
    for timeout, protocol in _SIGNAL_TIMEOUTS.items():
        chosen = environ.get(protocol, "").strip() or general
        for name in (timeout, "OTEL_EXPORTER_OTLP_TIMEOUT"):
            if chosen == "grpc" and name in environ and not environ[name].strip():
                raise UserError(
                    f"${name} is empty: OpenTelemetry's gRPC exporter (${protocol} or "
                    "$OTEL_EXPORTER_OTLP_PROTOCOL is grpc) takes a number of seconds above 0 "
                    f"there. Set it to one, or unset it ('unset {name}') for its default, 10"
                )


def check_otel_environment(environ: Mapping[str, str]) -> None:
    """Refuse (``UserError``) a numeric ``OTEL_*`` variable the SDK would raise on or lose
    spans with, a sampler or ratio it would replace by sampling everything, or an
    ``OTEL_PROPAGATORS`` naming a propagator not installed (:mod:`seamline.core.propagators`)."""
    problem = propagators_problem(environ)  # before opentelemetry.propagate raises on it
    if problem is not None:
        raise UserError(problem)
    _check_sampler(environ)
    _grpc_empty(environ)
    values = {
        name: _value(name, environ[name], rule) for name, rule in _RULES.items() if name in environ
    }
    queue = values.get("OTEL_BSP_MAX_QUEUE_SIZE") or _DEFAULT_QUEUE
    batch = values.get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") or _DEFAULT_BATCH
    if batch > queue:
        default = "" if "OTEL_BSP_MAX_QUEUE_SIZE" in values else ", its default"
        raise UserError(
            f"$OTEL_BSP_MAX_EXPORT_BATCH_SIZE ({batch:g}) is larger than "
            f"$OTEL_BSP_MAX_QUEUE_SIZE ({queue:g}{default}): a batch is taken from the "
            "queue. Make the batch size at most the queue size"
        )
