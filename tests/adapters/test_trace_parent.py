"""``seamline run`` joins the trace ``TRACEPARENT`` names (the environment carrier).

OpenTelemetry's context propagation through environment variables, as CI systems use
it: ``seamline run`` ignored ``TRACEPARENT`` and began a trace of its own, so a CI job's
trace never held the run. A value the propagator cannot read is one warning line; the
run goes on, in a trace of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.adapters.telemetry_setup import shutdown_telemetry
from seamline.adapters.trace_parent import parent_from_environment, variable_of
from seamline.core.registry import Registry
from tests.adapters.test_observability import PIPELINE
from tests.core.toy import toy_registry

CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@pytest.fixture
def toy_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)


def run_with(tmp_path: Path, extra_env: dict[str, str]) -> tuple[dict[str, Any], list[Any]]:
    """``seamline run`` with spans to a jsonl file: its root span, and the log lines."""
    pipeline = tmp_path / "p.yaml"
    text = PIPELINE.format(texts=["a b", "c"], extra="", attention="{use: native}")
    pipeline.write_text(text, encoding="utf-8")
    traces = tmp_path / "trace.jsonl"
    env = {"OTEL_TRACES_EXPORTER": "jsonl", "SEAMLINE_TRACES_FILE": str(traces), **extra_env}
    try:
        with capture_logs() as logs:
            result = CliRunner().invoke(app, ["run", str(pipeline), "--no-compile-cache"], env=env)
    finally:
        shutdown_telemetry()
    assert result.exit_code == 0, result.output
    spans = [json.loads(line) for line in traces.read_text(encoding="utf-8").splitlines()]
    (root,) = [span for span in spans if span["name"] == "seamline.run"]
    assert all(span["trace_id"] == root["trace_id"] for span in spans)
    return root, logs


@pytest.mark.usefixtures("toy_cli")
def test_a_run_joins_the_trace_traceparent_names(tmp_path: Path) -> None:
    root, logs = run_with(tmp_path, {"TRACEPARENT": TRACEPARENT, "TRACESTATE": "ci=1"})
    assert root["trace_id"] == CALLER_TRACE
    assert root["parent_span_id"] == CALLER_SPAN
    assert not [line for line in logs if line["log_level"] == "warning"]


@pytest.mark.usefixtures("toy_cli")
def test_a_traceparent_that_cannot_be_read_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    root, logs = run_with(tmp_path, {"TRACEPARENT": "00-not-a-trace-01"})
    assert root["parent_span_id"] is None, "a trace of its own"
    (line,) = [line for line in logs if line["log_level"] == "warning"]
    assert "TRACEPARENT='00-not-a-trace-01'" in line["event"]
    assert "trace of its own" in line["event"]


@pytest.mark.usefixtures("toy_cli")
def test_without_traceparent_a_run_is_the_root_of_its_trace(tmp_path: Path) -> None:
    root, logs = run_with(tmp_path, {})
    assert root["parent_span_id"] is None
    assert not [line for line in logs if line["log_level"] == "warning"]


def test_each_field_of_the_propagator_is_read_from_its_variable() -> None:
    assert variable_of("traceparent") == "TRACEPARENT"
    assert variable_of("x-b3-traceid") == "X_B3_TRACEID"
    with capture_logs() as logs:
        assert parent_from_environment({"BAGGAGE": "k=v"}) is None
    assert logs == [], "baggage alone names no parent to miss"
