"""Observability at every seam: the span tree over real exporters, SeamCall events, the
``telemetry:`` section, ``seamline trace summarize`` and ``seamline profile``."""

from __future__ import annotations

import gzip
import http.server
import json
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest
import structlog
import structlog.testing
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricsData
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.adapters.telemetry_setup import (
    JsonlSpanExporter,
    configure_telemetry,
    resolve,
    shutdown_telemetry,
    span_exporters,
)
from seamline.contracts import SeamCall, UserError
from seamline.core.config import TelemetrySettings, parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import LoaderCrash, MemorySink, RecordingMonitor, ToyModel, toy_registry

PIPELINE = (
    "pipeline: traced\n"
    "loader: {{use: list, with: {{texts: {texts}{extra}}}}}\n"
    "model: {{use: toy}}\n"
    "attention: {attention}\n"
    "monitors: [{{use: recording}}]\n"
    "sink: {{use: memory}}\n"
    "run: {{batch_size: 2, buckets: [4]}}\n"
)


def run_toy(
    texts: list[str], attention: str = "{use: native}", crash_at: str | None = None
) -> None:
    registry = toy_registry()
    extra = f", crash_at: {crash_at}" if crash_at else ""
    text = PIPELINE.format(texts=texts, extra=extra, attention=attention)
    Orchestrator(parse_pipeline(text, "t.yaml", registry), registry).run()


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    yield
    shutdown_telemetry()


# -- a real OTLP/HTTP receiver ---------------------------------------------------------------


class _Receiver(http.server.BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if urlsplit(self.path).path == "/v1/traces":  # a query may follow the path
            self.server.requests.append(ExportTraceServiceRequest.FromString(body))  # type: ignore[attr-defined]
            self.send_response(200)
        else:
            self.send_response(404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def test_the_span_tree_reaches_a_real_otlp_http_receiver(
    receiver: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    endpoint, requests = receiver
    config = configure_telemetry(
        TelemetrySettings(traces=["otlp"], otlp_endpoint=endpoint, otlp_protocol="http/protobuf")
    )
    assert config.traces_endpoint == f"{endpoint}/v1/traces"
    run_toy(["a b", "c d e", "f", "boom"])
    shutdown_telemetry()  # flushes the batch processor: the exporter POSTs now

    spans = [
        span
        for request in requests
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    attributes = {id(s): {a.key: _value(a.value) for a in s.attributes} for s in spans}
    roots = [s for s in spans if s.name == "seamline.run"]
    assert len(roots) == 1
    root = roots[0]
    assert not root.parent_span_id
    assert attributes[id(root)]["seamline.pipeline"] == "traced"
    assert attributes[id(root)]["seamline.platform"] == "cpu"
    children = [s for s in spans if s.parent_span_id == root.span_id]
    assert all(s.trace_id == root.trace_id for s in spans)
    names = [s.name for s in children]
    for name in (
        "seamline.model.load",
        "seamline.loader.read",
        "seamline.model.prepare",
        "seamline.plan",
        "seamline.compile",
        "seamline.model.apply",
        "seamline.sink.write",
    ):
        assert name in names, name
    assert names.count("seamline.model.prepare") == 4  # one per document

    # The loader ran in the producer thread, and still has the run as parent.
    reads = [s for s in children if s.name == "seamline.loader.read"]
    read = attributes[id(reads[0])]
    assert read["thread.name"] == "seamline-host"
    assert sum(attributes[id(s)]["seamline.loader.items"] for s in reads) == 4
    assert read["seamline.component.kind"] == "loader"
    assert read["seamline.component.name"] == "list"
    assert read["seamline.component.distribution"] == "tests"
    assert read["seamline.component.version"] == "0"
    assert read["seamline.component.contract_version"] == "1.0"

    apply = attributes[id(next(s for s in children if s.name == "seamline.model.apply"))]
    assert apply["seamline.component.kind"] == "model"
    assert apply["seamline.batch.size"] == 2
    assert apply["seamline.batch.length"] == 4
    assert apply["seamline.dtype"] == "float32"
    assert apply["seamline.platform"] == "cpu"
    assert apply["seamline.device_kind"]
    assert apply["seamline.attention.name"] == "native"
    assert apply["seamline.attention.reason"] == "explicitly configured"

    # The document that could not be prepared: set aside, and its span says why.
    failed = [
        s
        for s in children
        if s.name == "seamline.model.prepare" and s.status.code == s.status.STATUS_CODE_ERROR
    ]
    assert len(failed) == 1
    assert "ValueError" in failed[0].status.message
    assert [e.name for e in failed[0].events] == ["exception"]


def test_selecting_grpc_builds_a_grpc_exporter_with_the_endpoint() -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    config = resolve(
        None,
        {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317",
        },
    )
    (exporter,) = span_exporters(config)
    try:
        assert isinstance(exporter, OTLPSpanExporter)
        assert config.traces_endpoint == "http://collector:4317"
        assert exporter._endpoint == "collector:4317"
    finally:
        exporter.shutdown()


def test_the_pipeline_file_wins_over_the_environment(tmp_path: Path) -> None:
    env = {
        "OTEL_TRACES_EXPORTER": "console,otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://from-env:4318",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
        "OTEL_SERVICE_NAME": "env-service",
        "SEAMLINE_TRACES_FILE": str(tmp_path / "env.jsonl"),
        "OTEL_METRICS_EXPORTER": "none",
    }
    from_env = resolve(None, env)
    assert from_env.traces == ("console", "otlp")
    assert from_env.traces_protocol == "grpc"
    assert from_env.metrics_protocol == "http/protobuf"
    assert from_env.traces_endpoint == "http://from-env:4318"
    assert from_env.metrics_endpoint == "http://from-env:4318/v1/metrics"
    assert from_env.service_name == "env-service"
    assert from_env.traces_file == tmp_path / "env.jsonl"
    assert from_env.metrics == ()

    section = TelemetrySettings(
        traces=["jsonl"],
        traces_file="out/trace.jsonl",
        metrics=["otlp"],
        otlp_endpoint="http://from-file:4318/",
        otlp_protocol="http/protobuf",
        service_name="file-service",
    )
    from_file = resolve(section, env)
    assert from_file.traces == ("jsonl",)
    assert from_file.traces_file == Path("out/trace.jsonl")
    assert from_file.traces_protocol == "http/protobuf"
    assert from_file.traces_endpoint == "http://from-file:4318/v1/traces"
    assert from_file.metrics == ("otlp",)
    assert from_file.service_name == "file-service"

    assert resolve(None, {}).traces == ()  # nothing exported unless asked for
    assert resolve(None, {}).service_name == "seamline"


def test_a_service_name_among_the_resource_attributes_is_kept() -> None:
    # It arrived as "seamline": the default was given as the provider's own attribute,
    # which overrides the environment's; only OTEL_SERVICE_NAME may.
    attributes = {"OTEL_RESOURCE_ATTRIBUTES": "team=a, service.name = from%20res ,x=1"}
    assert resolve(None, attributes).service_name == "from res"
    both = {**attributes, "OTEL_SERVICE_NAME": "named"}
    assert resolve(None, both).service_name == "named"
    section = TelemetrySettings(service_name="file-service")
    assert resolve(section, both).service_name == "file-service"
    assert resolve(None, {"OTEL_TRACES_EXPORTER": "none"}).traces == ()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("OTEL_TRACES_EXPORTER", "console,zipkin", "unknown exporter 'zipkin'"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "http/json is not supported"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift", "use http/protobuf or grpc"),
    ],
)
def test_an_unsupported_environment_value_is_a_user_error(
    variable: str, value: str, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        resolve(None, {variable: value, "OTEL_TRACES_EXPORTER": "otlp", **{variable: value}})


def test_a_base_endpoint_s_query_stays_after_the_signal_s_path(
    receiver: tuple[str, list[ExportTraceServiceRequest]],
) -> None:
    """``/v1/traces`` was appended to the text, inside the query: the receiver was sent
    ``POST /otlp?token=x/v1/traces`` and never saw a span."""
    env = {"OTEL_TRACES_EXPORTER": "otlp,none", "OTEL_METRICS_EXPORTER": "otlp"}
    config = resolve(None, {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:1/otlp/?token=x"})
    assert config.traces_endpoint == "http://h:1/otlp/v1/traces?token=x"
    assert config.metrics_endpoint == "http://h:1/otlp/v1/metrics?token=x"
    section = TelemetrySettings(traces=["otlp"], otlp_endpoint="https://h/?k=v&t=2")
    assert resolve(section, {}).traces_endpoint == "https://h/v1/traces?k=v&t=2"

    endpoint, requests = receiver
    configure_telemetry(TelemetrySettings(traces=["otlp"], otlp_endpoint=f"{endpoint}?token=x"))
    run_toy(["a b"])
    shutdown_telemetry()
    assert requests, "the receiver got the spans at /v1/traces"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not a url", "is not a URL with a scheme and a host"),
        ("http://[::1", "is not a URL .Invalid IPv6 URL."),
        ("localhost:4318", r"has no scheme: write http://localhost:4318 \(or https://"),
        ("ftp://x", "has the scheme 'ftp'"),
        ("file:///etc/passwd", "has the scheme 'file'"),
        ("http://127.0.0.1:99999", "has a port that is not a number from 1 to 65535"),
        ("http://127.0.0.1:0", "has a port that is not a number from 1 to 65535"),
        ("http://:4318", "names no host"),
    ],
)
@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
)
def test_an_endpoint_no_exporter_can_reach_is_refused_when_otlp_is_chosen(
    variable: str, value: str, message: str
) -> None:
    """Such an endpoint ran the whole pipeline, exited 0 and lost every span."""
    with pytest.raises(UserError, match=f"^{variable} {message}") as refused:
        resolve(None, {"OTEL_TRACES_EXPORTER": "otlp", variable: value})
    assert "write" in str(refused.value)
    assert resolve(None, {variable: value}).traces == (), "no OTLP exporter: not checked"


def test_the_otlp_settings_are_checked_only_for_an_otlp_exporter() -> None:
    """``http/json`` (valid in the specification) stopped runs that export no OTLP."""
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_TRACES_EXPORTER": "jsonl"}
    assert resolve(None, env).traces == ("jsonl",)
    with pytest.raises(UserError, match="OTEL_EXPORTER_OTLP_PROTOCOL=http/json is not supp"):
        resolve(None, {**env, "OTEL_METRICS_EXPORTER": "otlp"})
    grpc = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    bare = resolve(None, {**grpc, "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"})
    assert bare.traces_endpoint == "collector:4317", "as the gRPC exporter reads it"


def test_a_bare_grpc_endpoint_warns_that_tls_will_be_used() -> None:
    """``127.0.0.1:4317`` over gRPC connects with TLS (the SDK's choice, kept): against a
    plain receiver every span was lost, with exit code 0 and no word from seamline."""
    grpc = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    bare = {**grpc, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4317"}

    def warnings(environ: dict[str, str]) -> list[dict[str, Any]]:
        with structlog.testing.capture_logs() as logs:
            configure_telemetry(environ=environ)
        shutdown_telemetry()
        return [line for line in logs if line["log_level"] == "warning"]

    (line,) = warnings(bare)
    assert line["variable"] == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    assert "TLS" in line["event"]
    assert "OTEL_EXPORTER_OTLP_INSECURE=true" in line["event"]
    for said in (
        {"OTEL_EXPORTER_OTLP_INSECURE": "true"},
        {"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false"},
        {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/etc/ca.pem"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://127.0.0.1:4317"},
    ):
        assert warnings({**bare, **said}) == [], said
    (line,) = warnings({**grpc, "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317"})
    assert line["variable"] == "OTEL_EXPORTER_OTLP_ENDPOINT"


def test_a_logs_exporter_asked_for_is_answered_with_one_warning() -> None:
    """``OTEL_LOGS_EXPORTER=otlp`` was ignored without a word: logs go to stderr only."""

    def warnings(environ: dict[str, str]) -> list[dict[str, Any]]:
        with structlog.testing.capture_logs() as logs:
            configure_telemetry(environ=environ)
        shutdown_telemetry()
        return [line for line in logs if line["log_level"] == "warning"]

    (line,) = warnings({"OTEL_LOGS_EXPORTER": "otlp"})
    assert "standard error" in line["event"]
    assert "exports no logs" in line["event"]
    assert line["OTEL_LOGS_EXPORTER"] == "otlp"
    assert len(warnings({"OTEL_LOGS_EXPORTER": "console,none"})) == 1
    for quiet in ({}, {"OTEL_LOGS_EXPORTER": "none"}, {"OTEL_LOGS_EXPORTER": " "}):
        assert warnings(quiet) == [], quiet


def test_an_endpoint_in_the_pipeline_file_is_checked_at_its_location() -> None:
    registry = toy_registry()
    text = PIPELINE.format(texts=["a"], extra="", attention="{use: native}")
    for value, message in (("localhost:4318", "has no scheme"), ("ftp://x", "scheme 'ftp'")):
        with pytest.raises(UserError, match=rf"t.yaml:8:28: telemetry.otlp_endpoint: .*{message}"):
            parse_pipeline(text + f"telemetry: {{otlp_endpoint: '{value}'}}\n", "t.yaml", registry)


def test_the_telemetry_section_is_validated_with_its_location() -> None:
    registry = toy_registry()
    text = PIPELINE.format(texts=["a"], extra="", attention="{use: native}")
    with pytest.raises(UserError, match=r"t.yaml:8:.*zipkin"):
        parse_pipeline(text + "telemetry: {traces: [zipkin]}\n", "t.yaml", registry)


# -- the jsonl exporter, exceptions, span events, SeamCall -----------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_console_spans_and_metrics_go_to_stderr_not_into_the_command_s_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``OTEL_TRACES_EXPORTER=console`` set for a shell put 700 lines of spans before the one
    JSON document ``seamline run --format json`` promises on stdout."""
    config = resolve(
        environ={"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console"}
    )
    metric_exporter = telemetry_setup.metric_exporters(config)[0]
    configure_telemetry(environ={"OTEL_TRACES_EXPORTER": "console"})
    run_toy(["a b", "c"])
    shutdown_telemetry()
    out, err = capsys.readouterr()
    assert '"name": "seamline.run"' not in out  # (another test's log lines may be there)
    assert '"name": "seamline.run"' in err
    assert getattr(metric_exporter, "out", None) is sys.stderr


def test_console_spans_and_metrics_are_one_json_line_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The SDK's console exporters indent each span over some 40 lines, in a stderr that
    is otherwise JSON lines when piped: a log shipper choked on it."""
    configure_telemetry(environ={"OTEL_TRACES_EXPORTER": "console"})
    run_toy(["a b", "c"])
    shutdown_telemetry()
    err = capsys.readouterr().err
    spans = [json.loads(line) for line in err.splitlines() if '"context": {' in line]
    assert "seamline.run" in {span["name"] for span in spans}, err
    config = resolve(environ={"OTEL_METRICS_EXPORTER": "console"})
    exporter = telemetry_setup.metric_exporters(config)[0]
    assert isinstance(exporter, ConsoleMetricExporter)
    line = exporter.formatter(MetricsData(resource_metrics=[]))
    assert line.endswith("\n")
    assert line.count("\n") == 1
    assert json.loads(line) == {"resource_metrics": []}


def test_the_jsonl_exporter_writes_one_span_per_line(tmp_path: Path) -> None:
    path = tmp_path / "traces" / "run.jsonl"
    configure_telemetry(None, {"OTEL_TRACES_EXPORTER": "jsonl", "SEAMLINE_TRACES_FILE": str(path)})
    run_toy(["a b", "c d e", "f"])
    shutdown_telemetry()
    spans = read_jsonl(path)
    root = next(s for s in spans if s["name"] == "seamline.run")
    assert root["parent_span_id"] is None
    assert root["status"]["code"] == "UNSET"
    assert set(root) >= {"trace_id", "span_id", "start_ns", "end_ns", "attributes", "events"}
    assert root["end_ns"] > root["start_ns"]
    by_name = {s["name"]: s for s in spans}
    assert by_name["seamline.loader.read"]["parent_span_id"] == root["span_id"]
    assert by_name["seamline.sink.write"]["attributes"]["seamline.records"] >= 1
    assert all(s["trace_id"] == root["trace_id"] for s in spans)


def test_an_exception_is_recorded_on_the_span_with_error_status(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(path)))
    with pytest.raises(LoaderCrash):
        run_toy(["a", "b", "c"], crash_at="d1")
    shutdown_telemetry()
    spans = read_jsonl(path)
    failed_read = [
        s for s in spans if s["name"] == "seamline.loader.read" and s["status"]["code"] == "ERROR"
    ]
    assert len(failed_read) == 1
    assert "LoaderCrash: crashed at d1" in failed_read[0]["status"]["description"]
    (event,) = failed_read[0]["events"]
    assert event["name"] == "exception"
    assert event["attributes"]["exception.type"].endswith("LoaderCrash")
    root = next(s for s in spans if s["name"] == "seamline.run")
    assert root["status"]["code"] == "ERROR"
    # Once: the root recorded it, and OpenTelemetry's span recorded it again.
    assert [e["name"] for e in root["events"]].count("exception") == 1


def test_an_interrupt_sets_the_seam_span_it_stopped_to_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C (SIGTERM is turned into one) left the seam spans it went through UNSET
    with no event, while the run's root said ERROR: OpenTelemetry records only an
    ``Exception`` leaving a span."""

    def interrupted(*_: Any, **__: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemorySink, "write", interrupted)
    path = tmp_path / "run.jsonl"
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(path)))
    with pytest.raises(KeyboardInterrupt):
        run_toy(["a", "b", "c"])
    shutdown_telemetry()
    spans = read_jsonl(path)
    (write,) = [s for s in spans if s["name"] == "seamline.sink.write"]
    root = next(s for s in spans if s["name"] == "seamline.run")
    for span in (write, root):
        assert span["status"]["code"] == "ERROR", span["name"]
        assert span["status"]["description"].startswith("KeyboardInterrupt"), span["name"]
        (event,) = [e for e in span["events"] if e["name"] == "exception"]
        assert event["attributes"]["exception.type"] == "KeyboardInterrupt"


def test_fallbacks_and_verifications_are_span_events(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(path)))
    run_toy(["a b", "c d e"], attention="{use: [off-by-ten, native]}")
    shutdown_telemetry()
    spans = read_jsonl(path)
    events = [(s["name"], e) for s in spans for e in s["events"]]
    verified = [e for name, e in events if e["name"] == "seamline.verified"]
    assert verified
    assert all(name == "seamline.verify" for name, e in events if e["name"] == "seamline.verified")
    assert verified[0]["attributes"]["seamline.implementation"] == "off-by-ten"
    assert verified[0]["attributes"]["seamline.ok"] is False
    fallback = [e for _, e in events if e["name"] == "seamline.fallback"]
    assert fallback[0]["attributes"]["seamline.failed"] == "off-by-ten"
    assert fallback[0]["attributes"]["seamline.replacement"] == "native"
    names = {e["name"] for _, e in events}
    # One rule names every event (the class name in snake case): two were CamelCase.
    assert {"seamline.attention_chosen", "seamline.compiled"} <= names, names
    assert all(name == name.lower() for name in names), names
    # A mapping (the candidates refused, with their reasons) is JSON, not a Python repr.
    chosen = [e for _, e in events if e["name"] == "seamline.attention_chosen"]
    assert all(isinstance(json.loads(e["attributes"]["seamline.rejected"]), dict) for e in chosen)


def test_every_seam_call_is_a_seamcall_event() -> None:
    run_toy(["a b", "c d e", "f"])
    calls = [e for e in RecordingMonitor.events if isinstance(e, SeamCall)]
    seen = {(c.kind, c.name, c.operation) for c in calls}
    assert seen == {
        ("loader", "list", "read"),
        ("model", "toy", "load"),
        ("model", "toy", "prepare"),
        ("model", "toy", "apply"),
        ("sink", "memory", "start"),
        ("sink", "memory", "write"),
        ("sink", "memory", "close"),
    }
    assert sum(c.operation == "prepare" for c in calls) == 3
    assert sum(c.operation == "apply" for c in calls) == 2  # 3 examples, batches of 2
    assert sum(c.operation in ("load", "start", "close") for c in calls) == 3  # once a run
    assert all(c.seconds >= 0 for c in calls)


def test_every_seam_call_is_a_span_with_the_component_s_own_description(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(path)))
    run_toy(["a b", "!unreadable", "c d e"])
    shutdown_telemetry()
    spans = read_jsonl(path)
    names = {s["name"] for s in spans}
    assert {
        "seamline.loader.read",
        "seamline.model.load",
        "seamline.model.prepare",
        "seamline.model.apply",
        "seamline.sink.start",
        "seamline.sink.write",
        "seamline.sink.write_error",
        "seamline.sink.close",
    } <= names
    for span in spans:
        if span["name"].startswith(("seamline.loader.", "seamline.model.", "seamline.sink.")):
            attributes = span["attributes"]
            # describe() feeds the scheme; the registry adds who distributes the component.
            assert attributes["seamline.component.kind"] == span["name"].split(".")[1]
            assert attributes["seamline.component.contract_version"] == "1.0"
            assert attributes["seamline.component.distribution"] == "tests"
    apply = next(s for s in spans if s["name"] == "seamline.model.apply")
    assert apply["attributes"]["seamline.component.heads"] == "4"  # the toy's own describe()
    close = next(s for s in spans if s["name"] == "seamline.sink.close")
    assert close["attributes"]["seamline.complete"] is True


def test_jsonl_exporter_after_shutdown_fails_quietly(tmp_path: Path) -> None:
    exporter = JsonlSpanExporter(tmp_path / "x.jsonl")
    exporter.shutdown()
    assert exporter.export([]).name == "FAILURE"


def plant(at: Path, what: str) -> None:
    """Something that is not a regular file at ``at``."""
    import os

    if what == "directory":
        at.mkdir()
    elif what == "fifo":
        os.mkfifo(at)  # opening it to write would wait for a reader forever
    else:  # a link to a file elsewhere: the spans would land wherever it points
        (at.parent / "victim.txt").write_text("keep\n", encoding="utf-8")
        at.symlink_to(at.parent / "victim.txt")


def without_waiting(at: Path, make: Any) -> Any:
    """``make()``, failing (not hanging) if it waits more than 10 s: opening a FIFO to write
    waits for a reader forever, so one is brought to let it go."""
    import os

    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            outcome["made"] = make()
        except BaseException as err:  # raised again in the test's thread
            outcome["error"] = err

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        reader = os.open(at, os.O_RDONLY | os.O_NONBLOCK)
        thread.join(5)
        os.close(reader)
        pytest.fail(f"opening {at} waited (for a FIFO's reader)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["made"]


NOT_FILES = {
    "directory": "a directory",
    "fifo": r"a FIFO \(named pipe\)",
    "symlink": "a symbolic link",
}


@pytest.mark.parametrize("what", sorted(NOT_FILES))
@pytest.mark.parametrize("append", [False, True], ids=["driver", "worker"])
def test_a_traces_file_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, what: str, append: bool
) -> None:
    # A directory was an IsADirectoryError traceback; a FIFO hung the run forever.
    at = tmp_path / "trace.jsonl"
    plant(at, what)
    refusal = (
        rf"the traces file '.*trace.jsonl' \(telemetry.traces_file or SEAMLINE_TRACES_FILE\) "
        rf"is {NOT_FILES[what]}, not a regular file: name a file"
    )
    with pytest.raises(UserError, match=refusal):
        without_waiting(at, lambda: JsonlSpanExporter(at, append=append))
    if what == "symlink":
        assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "keep\n"


@pytest.mark.parametrize("append", [False, True], ids=["driver", "worker"])
def test_a_traces_file_with_another_name_is_refused_and_left_whole(
    tmp_path: Path, append: bool
) -> None:
    # A hard link from the traces file's name to a document inside the loader's folder
    # (or to the pipeline file) was emptied and filled with spans; the run exited 0.
    import os

    victim = tmp_path / "corpus" / "d1.txt"
    victim.parent.mkdir()
    victim.write_text("keep\n", encoding="utf-8")
    at = tmp_path / "trace.jsonl"
    os.link(victim, at)
    refusal = (
        r"the traces file '.*trace.jsonl' \(telemetry.traces_file or SEAMLINE_TRACES_FILE\) "
        r"is a file with 2 names \(hard links\): writing spans to it would change the file "
        r"behind its other names too. Name a file of its own for the spans"
    )
    with pytest.raises(UserError, match=refusal):
        JsonlSpanExporter(at, append=append)
    assert victim.read_text(encoding="utf-8") == "keep\n"


@pytest.mark.parametrize("append", [False, True], ids=["driver", "worker"])
@pytest.mark.parametrize("when", ["before", "after the check"])
def test_another_users_traces_file_is_refused_and_left_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, append: bool, when: str
) -> None:
    # Another user made /tmp/shared/t.jsonl, 0666, in advance: the run appended its spans
    # to it, for them to read. "Another user's" is simulated: the owner check is told that
    # seamline runs as someone else. Made after the check, it is refused on the open file.
    import os

    from seamline.contracts import ownership

    at = tmp_path / "trace.jsonl"
    at.write_text("theirs\n", encoding="utf-8")
    at.chmod(0o666)
    monkeypatch.setattr(ownership, "my_uid", lambda: at.stat().st_uid + 1)
    if when != "before":
        real_lstat = os.lstat

        def unseen(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if Path(path) == at:
                raise FileNotFoundError(path)
            return real_lstat(path, *args, **kwargs)

        monkeypatch.setattr(telemetry_setup.os, "lstat", unseen)
    refusal = (
        r"the traces file '.*trace.jsonl' \(telemetry.traces_file or SEAMLINE_TRACES_FILE\) "
        r"belongs to another user, .*uid \d+\)?, who would read every span .* it was not "
        r"written to. Name a file of your own"
    )
    with pytest.raises(UserError, match=refusal):
        JsonlSpanExporter(at, append=append)
    assert at.read_text(encoding="utf-8") == "theirs\n"


def test_validation_refuses_another_users_traces_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seamline.contracts import ownership
    from seamline.core.traces_file import traces_file_problem

    at = tmp_path / "trace.jsonl"
    at.write_text("", encoding="utf-8")
    assert traces_file_problem(at) is None
    monkeypatch.setattr(ownership, "my_uid", lambda: at.stat().st_uid + 1)
    assert "belongs to another user" in (traces_file_problem(at) or "")


def test_a_link_planted_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check and the open are two steps: the open itself refuses a link (O_NOFOLLOW).
    import os

    if not hasattr(os, "O_NOFOLLOW"):
        pytest.skip("no O_NOFOLLOW here")
    at = tmp_path / "trace.jsonl"
    plant(at, "symlink")
    real_lstat = os.lstat

    def unseen(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if Path(path) == at:  # the check sees nothing there; the link comes after it
            raise FileNotFoundError(path)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(telemetry_setup.os, "lstat", unseen)
    with pytest.raises(UserError, match=r"cannot write the traces file '.*trace.jsonl' .*: "):
        JsonlSpanExporter(at)
    assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "keep\n"


def test_a_traces_file_another_run_is_writing_is_refused_and_left_whole(tmp_path: Path) -> None:
    # Two runs with one traces file (two cron jobs, each seamline-trace.jsonl in one folder):
    # the second emptied the file under the first, whose trace lost most of its spans.
    import subprocess

    at = tmp_path / "trace.jsonl"
    at.write_text('{"name": "the other run\'s span"}\n', encoding="utf-8")
    holder = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", holder, str(at)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert other.stdout is not None
        assert other.stdout.readline() == "held\n"
        with pytest.raises(UserError, match=r"is being written by another run that is still "):
            JsonlSpanExporter(at)
        assert "the other run's span" in at.read_text(encoding="utf-8")
        JsonlSpanExporter(at, append=True).shutdown()  # a worker adding to its driver's file
    finally:
        other.kill()
        other.wait(timeout=10)
    mine = JsonlSpanExporter(at)  # its run over: this one's
    again = JsonlSpanExporter(at)  # configured again in the same process: still this one's
    again.shutdown()
    mine.shutdown()
    telemetry_setup.traces_lock.release_all()
    assert at.read_text(encoding="utf-8") == ""


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def toy_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)


@pytest.mark.usefixtures("toy_cli")
def test_run_then_summarize_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "out" / "trace.jsonl"
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        PIPELINE.format(texts=["a b", "c d e", "f"], extra="", attention="{use: native}")
        + f"telemetry: {{traces: [jsonl], traces_file: '{trace}'}}\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(pipeline), "--no-compile-cache"])
    assert result.exit_code == 0, result.output
    assert trace.exists()

    result = runner.invoke(app, ["trace", "summarize", str(trace)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "spans, run" in lines[0]
    header = next(line for line in lines if "span" in line and "median ms" in line)
    for column in ("count", "total s", "p95 ms", "share"):
        assert column in header
    run_row = next(line for line in lines if "seamline.run " in line)
    assert "100.0%" in run_row
    prepare = next(line for line in lines if "seamline.model.prepare" in line)
    assert prepare.split("│")[2].strip() == "3"


@pytest.mark.usefixtures("toy_cli")
@pytest.mark.parametrize("what", sorted(NOT_FILES))
def test_a_run_whose_traces_file_is_not_a_file_exits_2_before_it_starts(
    tmp_path: Path, what: str
) -> None:
    at = tmp_path / "out"
    plant(at, what)
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        PIPELINE.format(texts=["a b"], extra="", attention="{use: native}")
        + "telemetry: {traces: [jsonl]}\n",
        encoding="utf-8",
    )
    result = without_waiting(
        at,
        lambda: CliRunner().invoke(
            app,
            ["run", str(pipeline), "--no-compile-cache", "--set", f"telemetry.traces_file={at}"],
            env={"COLUMNS": "400"},
        ),
    )
    assert result.exit_code == 2, result.output
    # Refused as validation refuses it (core/traces_file.py), placed where it is named.
    assert result.output.strip().splitlines() == [
        f"error: --set telemetry.traces_file={at}: the traces file {str(at)!r} "
        f"(telemetry.traces_file or SEAMLINE_TRACES_FILE) is "
        f"{NOT_FILES[what].replace(chr(92), '')}, not a regular file: name a file for the "
        "spans to be written to"
    ]


@pytest.mark.usefixtures("toy_cli")
def test_a_traces_file_from_the_environment_never_overwrites_the_pipeline_file(
    tmp_path: Path,
) -> None:
    # SEAMLINE_TRACES_FILE=p.yaml replaced the pipeline file with spans; the run exited 0.
    pipeline = tmp_path / "p.yaml"
    text = PIPELINE.format(texts=["a b"], extra="", attention="{use: native}")
    pipeline.write_text(text, encoding="utf-8")
    env = {"OTEL_TRACES_EXPORTER": "jsonl", "SEAMLINE_TRACES_FILE": str(pipeline)}
    result = CliRunner().invoke(
        app, ["run", str(pipeline), "--no-compile-cache"], env={**env, "COLUMNS": "400"}
    )
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"error: $SEAMLINE_TRACES_FILE: the traces file ({str(pipeline)!r}) is the pipeline "
        f"file ({str(pipeline)!r}): the run would overwrite what it reads, or read its own "
        "output. Name another traces file (telemetry.traces_file or SEAMLINE_TRACES_FILE)"
    ]
    assert pipeline.read_text(encoding="utf-8") == text


def test_summarize_computes_count_total_median_p95_and_share(tmp_path: Path) -> None:
    from seamline.adapters.trace_summary import summarize

    path = tmp_path / "t.jsonl"
    spans = [{"name": "seamline.run", "span_id": "r", "start_ns": 0, "end_ns": 10_000_000_000}]
    spans += [
        {"name": "seamline.model.apply", "parent_span_id": "r", "start_ns": 0, "end_ns": ms * 10**6}
        for ms in range(1, 101)
    ]
    path.write_text("".join(json.dumps(s) + "\n" for s in spans) + "\n", encoding="utf-8")
    summary = summarize(path)
    assert summary.run_seconds == 10
    apply = next(r for r in summary.rows if r.name == "seamline.model.apply")
    assert apply.count == 100
    assert apply.total == pytest.approx(5.05)
    assert apply.median == pytest.approx(0.0505)
    assert apply.p95 == pytest.approx(0.095)
    assert apply.share == pytest.approx(0.505)


def test_a_span_whose_parent_is_not_in_the_file_is_a_root(tmp_path: Path) -> None:
    """Under TRACEPARENT the run's span has the caller's span as parent: the summary
    showed ``run 0.000s``, every share 0 % and "no span without a parent"."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    spans = [  # children first, as the exporter writes them
        {"name": "seamline.shard", "span_id": "c", "parent_span_id": "r", "end_ns": 10**9},
        {"name": "seamline.run", "span_id": "r", "parent_span_id": "caller", "end_ns": 4 * 10**9},
        {"name": "other", "trace_id": "t2", "span_id": "o", "parent_span_id": "c", "end_ns": 10**9},
    ]
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({"trace_id": trace, "start_ns": 0, **span}) for span in spans]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "summarize", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    assert f"{path}: 3 spans, run 5.000s" in result.stdout  # another trace's "c" is not its parent
    assert re.search(r"seamline\.shard .* 20\.0%", result.stdout), result.stdout


def test_summarize_keeps_what_it_counts_not_the_spans(tmp_path: Path) -> None:
    # Every span was held whole as a dict: a 222 MB trace took 1.17 GB to summarize.
    import tracemalloc

    from seamline.adapters.trace_summary import summarize

    path = tmp_path / "big.jsonl"
    attributes = {f"seamline.attribute.{k}": "x" * 200 for k in range(10)}  # 2 kB a span
    with path.open("w", encoding="utf-8") as out:
        for n in range(5_000):
            span = {"name": f"seamline.s{n % 7}", "span_id": str(n), "parent_span_id": "r"}
            out.write(json.dumps({**span, "start_ns": 0, "end_ns": n, "attributes": attributes}))
            out.write("\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        summary = summarize(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary.spans == 5_000
    assert peak < size / 5, f"{peak:,} bytes at the peak for a trace of {size:,}"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ('{"name": "a", "start_ns": 1, "end_ns": 2}\nnot json\n', ":2: not a JSON line"),
        ('{"name": "a", "start_ns": 1}\n', ":1: span field 'end_ns' is missing"),
        ("[1, 2]\n", ":1: expected a JSON object"),
        ("\n" + "[" * 5000 + "]" * 5000 + "\n", ":2: not a JSON line: nested too deeply"),
        ('{"name":1' + "1" * 5001 + "}\n", ":1: not a JSON line: Exceeds the limit (4300"),
        (
            '{"name": "a", "start_ns": 0, "end_ns": 1' + "0" * 400 + "}\n",
            ":1: span field 'end_ns' is 1000",
        ),
        ("\n", "holds no spans"),
        ('{"name": "a", "start_ns": true, "end_ns": 2}\n', ":1: span field 'start_ns' is"),
    ],
)
def test_summarize_a_missing_or_malformed_file_exits_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "t.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "summarize", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    output = " ".join(result.output.split())
    assert output.startswith("error:")
    assert message in output
    if ":" in message[:3]:
        assert f"{path}{message.split(' ')[0]}" in output.replace(" ", "")
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("spans", "warning"),
    [
        (
            [("seamline.run", None, 2000, 1000), ("w", "r", 5000, 1000), ("x", "r", 1, 2)],
            "warning: 2 spans end before they start; their times are shown as 0",
        ),
        (
            [("seamline.run", "y", 0, 10**9), ("y", "s", 0, 5 * 10**8)],
            "warning: no root span (every span's parent is in the file: the parents form a "
            "cycle): the run is shown as 0 s and every share as 0 %",
        ),
    ],
)
def test_summarize_says_once_what_it_shows_as_0(
    tmp_path: Path, spans: list[tuple[str, str | None, int, int]], warning: str
) -> None:
    """A run of 0.000 s, or every share 0 %, was shown without a word of why."""
    path = tmp_path / "t.jsonl"
    lines = [
        {"name": name, "span_id": name[0], "parent_span_id": parent, "start_ns": s, "end_ns": e}
        for name, parent, s, e in spans
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "summarize", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if "warning" in line] == [warning]
    assert "warning" not in result.stdout


def test_summarize_refuses_a_line_too_long_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single 200 MB line was read whole (454 MB); it is refused past the bound."""
    from seamline.adapters import trace_summary

    monkeypatch.setattr(trace_summary, "MAX_LINE_BYTES", 1000, raising=False)
    path = tmp_path / "t.jsonl"
    span = '{"name": "a", "start_ns": 1, "end_ns": 2}\n'
    path.write_text(span + '{"name": "' + "x" * 5000 + '"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", "summarize", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert f"{path}:2: a line longer than 1,000 bytes" in output
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("toy_cli")
def test_profile_writes_a_trace_that_names_the_attention_scope(tmp_path: Path) -> None:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        PIPELINE.format(texts=["a b", "c d e"], extra="", attention="{use: native}"),
        encoding="utf-8",
    )
    out = tmp_path / "profile"
    result = CliRunner().invoke(
        app, ["profile", str(pipeline), "--out", str(out)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert f"trace in {out}/" in result.output
    assert "seamline/attention/" in result.output
    xplanes = list(out.rglob("*.xplane.pb"))
    assert xplanes, list(out.rglob("*"))
    assert any(b"seamline/attention/native" in p.read_bytes() for p in xplanes)
    assert any(b"seamline/model/toy" in p.read_bytes() for p in xplanes)


PROFILED_SHAPE = ("run: {batch_size: 2, buckets: [4]}", "run: {batch_size: 3, buckets: [6]}")
"""A batch shape no other test compiles: the only program of it is this test's."""


class TwinToyModel(ToyModel):
    """The toy model under another name: the same computation in another named scope."""

    name: ClassVar[str] = "toy-twin"


def test_a_profile_names_its_own_scopes_when_the_same_program_was_compiled_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # JAX's persistent cache keys an executable without its op names: the twin's run
    # leaves the toy's program in the cache under the twin's scope names. A profile
    # loading it would show seamline/model/toy-twin for the toy's run.
    twin = ComponentInfo(
        "model", "toy-twin", "tests:TwinToyModel", "tests", "0", "ok", "", TwinToyModel, "1.0"
    )
    registry = Registry([*toy_registry().entries(), twin])
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: registry))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    texts = ["profiled twice", "the same program", "in a shape of its own"]
    for model in ("toy-twin", "toy"):
        pipeline = tmp_path / f"{model}.yaml"
        pipeline.write_text(
            PIPELINE.format(texts=texts, extra="", attention="{use: native}")
            .replace("use: toy}", f"use: {model}}}")
            .replace(PROFILED_SHAPE[0], PROFILED_SHAPE[1]),
            encoding="utf-8",
        )
        out = tmp_path / model
        result = CliRunner().invoke(
            app, ["profile", str(pipeline), "--out", str(out)], env={"COLUMNS": "300"}
        )
        assert result.exit_code == 0, result.output
    traced = b"".join(p.read_bytes() for p in (tmp_path / "toy").rglob("*.xplane.pb"))
    assert b"seamline/model/toy/" in traced


def test_telemetry_setup_reuses_one_provider(tmp_path: Path) -> None:
    first = telemetry_setup.tracer_provider()
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(tmp_path / "a")))
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(tmp_path / "b")))
    assert telemetry_setup.tracer_provider() is first
    assert len(telemetry_setup._exporting.processors) == 1


@pytest.mark.usefixtures("toy_cli")
def test_what_a_component_prints_while_it_runs_stays_off_the_json_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A monitor printing its report wrote into the middle of `run --format json`'s stdout.
    monkeypatch.setattr(RecordingMonitor, "observe", lambda self, event: print("recording: hi"))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        PIPELINE.format(texts=["a b", "c d"], extra="", attention="{use: native}"),
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        app, ["run", str(pipeline), "--no-compile-cache", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert json.loads(line)["schema"] == "seamline.run/1"
    assert "recording: hi" in result.stderr


class _Unanswered(SpanExporter):
    """An exporter whose receiver never answers: export waits until shutdown."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def export(self, spans: Any) -> SpanExportResult:
        self.released.wait(30)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.released.set()


def test_the_last_spans_wait_at_most_the_sdks_30_s_whatever_the_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What docs/observability.md says: the end-of-run flush of spans is bounded by the
    # batch span processor's own 30 s, not by OTEL_EXPORTER_OTLP_TIMEOUT (10000 s was
    # said to hold a stop for almost three hours) nor OTEL_BSP_EXPORT_TIMEOUT.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "10000")
    monkeypatch.setenv("OTEL_BSP_EXPORT_TIMEOUT", "600000")
    waits: list[float | None] = []
    real_join = threading.Thread.join

    def join(self: threading.Thread, timeout: float | None = None) -> None:
        if self.name.startswith("OtelBatchSpan"):
            waits.append(timeout)
            timeout = 0.2  # not the 30 s themselves
        real_join(self, timeout)

    exporter = _Unanswered()
    exporting = telemetry_setup._Exporting()
    exporting.replace([BatchSpanProcessor(exporter)])
    provider = TracerProvider()
    provider.add_span_processor(exporting)
    provider.get_tracer("t").start_span("s").end()
    monkeypatch.setattr(threading.Thread, "join", join)
    exporting.replace(())  # what shutdown_telemetry does
    assert waits == [30.0]
    assert exporter.released.is_set()  # the export still going was left, not waited for
