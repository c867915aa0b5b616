"""OpenTelemetry's numeric environment variables are checked before the SDK reads them.

``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=-1`` stopped every ``seamline run`` (no exporter chosen)
with a 76-line traceback and exit code 1; ``OTEL_BSP_MAX_QUEUE_SIZE=0`` did so too, saying
``max_queue_size must be a positive integer`` without naming the variable. Each case here
is also handed to the SDK itself, so that the check and the SDK cannot drift apart.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import propagate
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import SpanLimits, sampling
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from seamline.adapters.otel_environment import SAMPLERS, check_otel_environment
from seamline.contracts import UserError

LIMITS = [
    "OTEL_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
    "OTEL_SPAN_EVENT_COUNT_LIMIT",
    "OTEL_SPAN_LINK_COUNT_LIMIT",
    "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT",
    "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
]
POSITIVE = ["OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "OTEL_BSP_SCHEDULE_DELAY"]

SDK_REFUSES = (
    [(name, value) for name in LIMITS for value in ("-1", "-3", "unset", "1.5", "ten")]
    + [(name, value) for name in POSITIVE for value in ("0", "-1")]
    + [("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "5000"), ("OTEL_METRIC_EXPORT_INTERVAL", "0")]
    + [("OTEL_METRIC_EXPORT_INTERVAL", "-5"), ("OTEL_BSP_MAX_QUEUE_SIZE", "1")]
)
SDK_TAKES = (
    [(name, value) for name in LIMITS for value in ("0", "64", " 7 ", "")]
    + [(name, value) for name in POSITIVE for value in ("512", "2048")]
    + [("OTEL_BSP_SCHEDULE_DELAY", "1"), ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")]
    + [("OTEL_BSP_EXPORT_TIMEOUT", "30000"), ("OTEL_METRIC_EXPORT_INTERVAL", "2500.5")]
)


def sdk_accepts(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> bool:
    """Whether the SDK builds what reads ``name`` with it set to ``value``."""
    monkeypatch.setenv(name, value)
    try:
        SpanLimits()
        BatchSpanProcessor(ConsoleSpanExporter(out=io.StringIO())).shutdown()
        reader = PeriodicExportingMetricReader(ConsoleMetricExporter(out=io.StringIO()))
        reader.shutdown()
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("name", "value"), SDK_REFUSES)
def test_what_the_sdk_raises_on_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    assert not sdk_accepts(monkeypatch, name, value)
    with pytest.raises(UserError, match=rf"\${name}\b") as refused:
        check_otel_environment({name: value})
    said = str(refused.value)
    assert "OpenTelemetry takes" in said or "a batch is taken from the queue" in said


@pytest.mark.parametrize(("name", "value"), SDK_TAKES)
def test_what_the_sdk_takes_is_taken(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    assert sdk_accepts(monkeypatch, name, value)
    check_otel_environment({name: value})


@pytest.mark.parametrize("value", ["0", "-5"])
def test_an_export_timeout_of_0_is_refused_as_the_docs_say(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    # The docs say every OTEL_BSP_* must be above 0; 0 was taken. The SDK reads it and
    # applies nothing (no timeout reaches the exporter), so it takes it, and any integer.
    assert sdk_accepts(monkeypatch, "OTEL_BSP_EXPORT_TIMEOUT", value)
    with pytest.raises(UserError, match=r"^\$OTEL_BSP_EXPORT_TIMEOUT=.*an integer above 0"):
        check_otel_environment({"OTEL_BSP_EXPORT_TIMEOUT": value})


def test_not_a_number_is_refused_where_the_sdk_would_fall_back_quietly() -> None:
    # The SDK logs a traceback and uses its default: the user's setting would be lost.
    with pytest.raises(UserError, match=r"OpenTelemetry takes an integer above 0 there"):
        check_otel_environment({"OTEL_BSP_SCHEDULE_DELAY": "5s"})


def test_a_batch_larger_than_the_queue_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200"}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert not sdk_accepts(monkeypatch, "OTEL_BSP_MAX_QUEUE_SIZE", "100")
    with pytest.raises(UserError) as refused:
        check_otel_environment(environ)
    assert str(refused.value) == (
        "$OTEL_BSP_MAX_EXPORT_BATCH_SIZE (200) is larger than $OTEL_BSP_MAX_QUEUE_SIZE (100): "
        "a batch is taken from the queue. Make the batch size at most the queue size"
    )


# The OTLP exporters' timeouts: the SDK raises on none, but loses every span instead.
TIMEOUTS = [
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
]


@pytest.mark.parametrize("value", ["0", "-5", "abc", "inf", "nan", "10s"])
@pytest.mark.parametrize("name", TIMEOUTS)
def test_a_timeout_that_would_lose_every_span_is_refused(name: str, value: str) -> None:
    # 0 and -5: each export gave up at once (one error line, exit 0, no span sent);
    # abc: quietly 10 s.
    with pytest.raises(UserError) as refused:
        check_otel_environment({name: value})
    assert str(refused.value) == (
        f"${name}={value!r}: OpenTelemetry takes a number of seconds above 0 there. Set it "
        f"to one, or unset it ('unset {name}') for OpenTelemetry's default"
    )


@pytest.mark.parametrize("value", ["0.5", "10", " 30 ", "10000"])
@pytest.mark.parametrize("name", TIMEOUTS)
def test_a_timeout_above_0_is_taken(name: str, value: str) -> None:
    check_otel_environment({name: value})


@pytest.mark.parametrize("name", TIMEOUTS)
def test_an_empty_timeout_is_the_default_for_the_http_exporters(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # The specification: an empty variable is unset. It was refused for every command
    # (exit 2), with no OTLP exporter chosen at all, where the HTTP exporters take 10 s.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    check_otel_environment({name: ""})
    check_otel_environment({name: " ", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    monkeypatch.setenv(name, "")
    exporter = OTLPSpanExporter()
    assert exporter._client._timeout == 10.0
    exporter.shutdown()


@pytest.mark.parametrize(
    ("name", "protocol"),
    [
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
        ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_PROTOCOL"),
    ],
)
def test_an_empty_timeout_is_refused_where_grpc_would_raise_on_it(name: str, protocol: str) -> None:
    with pytest.raises(UserError, match=rf"^\${name} is empty: OpenTelemetry's gRPC exporter"):
        check_otel_environment({name: "", protocol: "grpc"})


@pytest.mark.parametrize("signal", ["TRACES", "METRICS"])
def test_the_installed_exporters_read_timeouts_in_seconds(
    monkeypatch: pytest.MonkeyPatch, signal: str
) -> None:
    # What the error message and docs/observability.md say: seconds, not the
    # specification's milliseconds.
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
        OTLPMetricExporter as GrpcMetrics,
    )
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter as GrpcSpans,
    )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetrics,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpans,
    )

    http, grpc = (HttpSpans, GrpcSpans) if signal == "TRACES" else (HttpMetrics, GrpcMetrics)
    for name in ("OTEL_EXPORTER_OTLP_TIMEOUT", f"OTEL_EXPORTER_OTLP_{signal}_TIMEOUT"):
        monkeypatch.setenv(name, "7")
        exporter = http()
        assert exporter._client._timeout == 7.0
        exporter.shutdown()
        channel = grpc(endpoint="127.0.0.1:1", insecure=True)
        assert channel._timeout == 7.0
        channel.shutdown()
        monkeypatch.delenv(name)


# OTEL_TRACES_SAMPLER(_ARG): the SDK sampled every trace where the name or ratio was wrong.
def sdk_sampler(monkeypatch: pytest.MonkeyPatch, name: str, arg: str | None) -> Any:
    """The sampler the SDK's tracer provider builds with these variables."""
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", name)
    if arg is not None:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", arg)
    return sampling._get_from_env_or_default()


def sampled_ratio(sampler: Any) -> float:
    root = sampler._root if isinstance(sampler, sampling.ParentBased) else sampler
    return float(root.rate)


def test_the_sampler_names_are_the_sdks() -> None:
    assert set(SAMPLERS) == set(sampling._KNOWN_SAMPLERS)
    assert SAMPLERS[0] == "parentbased_always_on"  # the default the message names


@pytest.mark.parametrize("name", ["bogus", "always-on", " always_on", "xray"])
def test_a_sampler_the_sdk_would_replace_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    assert sdk_sampler(monkeypatch, name, None) is sampling.DEFAULT_ON
    with pytest.raises(UserError, match=r"^\$OTEL_TRACES_SAMPLER='.*parentbased_always_on"):
        check_otel_environment({"OTEL_TRACES_SAMPLER": name})


@pytest.mark.parametrize("name", ["", "ALWAYS_OFF", "ParentBased_TraceIdRatio", *SAMPLERS])
def test_a_sampler_the_sdk_knows_is_taken(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    if name.lower() not in ("", "parentbased_always_on"):  # else the default: no fallback
        assert sdk_sampler(monkeypatch, name, "0.5") is not sampling.DEFAULT_ON
    check_otel_environment({"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": "0.5"})


@pytest.mark.parametrize("arg", ["5", "-1", "10%", "1.5", "nan", "half"])
@pytest.mark.parametrize("name", ["traceidratio", "parentbased_traceidratio"])
def test_a_ratio_the_sdk_would_make_1_is_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, arg: str
) -> None:
    assert sampled_ratio(sdk_sampler(monkeypatch, name, arg)) == 1.0
    with pytest.raises(UserError) as refused:
        check_otel_environment({"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": arg})
    assert str(refused.value) == (
        f"$OTEL_TRACES_SAMPLER_ARG={arg!r}: the {name} sampler takes the fraction of traces "
        "to sample there, a number from 0 to 1 (0.25 for a quarter; OpenTelemetry would have "
        "sampled every trace). Set it to one, or unset it ('unset OTEL_TRACES_SAMPLER_ARG') "
        "to sample every trace"
    )


@pytest.mark.parametrize(("arg", "ratio"), [("0", 0.0), ("0.25", 0.25), (" 1 ", 1.0), ("", 1.0)])
@pytest.mark.parametrize("name", ["traceidratio", "PARENTBASED_TRACEIDRATIO"])
def test_a_ratio_from_0_to_1_is_taken(
    monkeypatch: pytest.MonkeyPatch, name: str, arg: str, ratio: float
) -> None:
    assert sampled_ratio(sdk_sampler(monkeypatch, name, arg)) == ratio
    check_otel_environment({"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": arg})


def test_the_ratio_is_not_read_by_other_samplers() -> None:
    for name in ("always_on", "parentbased_always_off"):
        check_otel_environment({"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": "5"})
    check_otel_environment({"OTEL_TRACES_SAMPLER_ARG": "5"})  # the default sampler


# OTEL_PROPAGATORS: opentelemetry.propagate raised a bare ValueError when imported.
PROPAGATORS_REFUSED = [
    "bogus",
    "tracecontext,baggage,b3",
    "b3multi",
    "tracecontext,",
    " ",
    "x,none",
]
PROPAGATORS_TAKEN = ["", "tracecontext", " baggage , tracecontext ", "none", "None,bogus"]


def sdk_loads_propagators(monkeypatch: pytest.MonkeyPatch, value: str) -> bool:
    """Whether ``opentelemetry.propagate`` builds its propagators with ``value`` set."""
    monkeypatch.setenv("OTEL_PROPAGATORS", value)
    try:
        propagate._load_propagators()
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("value", PROPAGATORS_REFUSED)
def test_propagators_not_installed_are_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    assert not sdk_loads_propagators(monkeypatch, value)
    with pytest.raises(UserError, match=r"^\$OTEL_PROPAGATORS=.*installed: baggage, tracecontext"):
        check_otel_environment({"OTEL_PROPAGATORS": value})


@pytest.mark.parametrize("value", PROPAGATORS_TAKEN)
def test_propagators_the_sdk_loads_are_taken(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    assert sdk_loads_propagators(monkeypatch, value)
    check_otel_environment({"OTEL_PROPAGATORS": value})


B3 = (
    "error: $OTEL_PROPAGATORS='tracecontext,baggage,b3': no propagator named 'b3' is installed "
    "(installed: baggage, tracecontext). Unset it ('unset OTEL_PROPAGATORS') for "
    "OpenTelemetry's default tracecontext,baggage, name installed ones only, or install it "
    "(b3: pip install opentelemetry-propagator-b3)"
)
LIMIT = (
    "error: $OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT='-1': OpenTelemetry takes an integer of 0 or "
    "more, or an empty value for no limit there. Set it to one, or unset it "
    "('unset OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT') for OpenTelemetry's default"
)

TIMEOUT = (
    "error: $OTEL_EXPORTER_OTLP_TIMEOUT='0': OpenTelemetry takes a number of seconds above 0 "
    "there. Set it to one, or unset it ('unset OTEL_EXPORTER_OTLP_TIMEOUT') for "
    "OpenTelemetry's default"
)


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "-1", LIMIT),
        ("OTEL_PROPAGATORS", "tracecontext,baggage,b3", B3),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "0", TIMEOUT),
    ],
)
@pytest.mark.parametrize("command", ["run", "serve"])
def test_the_commands_exit_2_with_one_line(
    tmp_path: Path, command: str, variable: str, value: str, said: str
) -> None:
    # A process of its own: the SDK reads the variables when it is first imported.
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text("pipeline: p\n", encoding="utf-8")
    extra = ["--port", "0"] if command == "serve" else []
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", command, "p.yaml", *extra],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", variable: value},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [said]
