"""A pipeline's ``telemetry`` section, which ``Pipeline.run()`` does not read, is said so once.

The section is read by the ``seamline`` command, which sets its exporters up; a library
never configures its application's telemetry. ``Pipeline.run()`` ignored it without a
word: an application asked for ``traces: [jsonl]`` and a ``traces_file`` that never
appeared. The run now warns, once, naming the section and what to do instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog

from seamline.core import telemetry_applied
from seamline.core.config import parse_pipeline
from seamline.core.embedder import Embedder
from seamline.core.pipeline import Pipeline
from tests.core.toy import MemorySink, toy_registry

TEXT = (
    "pipeline: toy\n"
    "loader: {use: list, with: {texts: ['w w', 'x y']}}\n"
    "model: {use: toy}\n"
    "sink: {use: memory}\n"
)


def warnings_of(pipeline: Pipeline) -> list[str]:
    with structlog.testing.capture_logs() as logs:
        pipeline.run()
    MemorySink.reset()
    return [e["event"] for e in logs if e["log_level"] == "warning" and "telemetry" in e["event"]]


def test_a_run_warns_once_that_its_telemetry_section_is_not_read_here() -> None:
    registry = toy_registry()
    text = TEXT + "telemetry: {traces: [jsonl], traces_file: out/trace.jsonl}\n"
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", registry), registry)
    (warning,) = warnings_of(pipeline)
    assert "telemetry section (traces, traces_file)" in warning
    assert "read by the seamline command only" in warning
    assert "TracerProvider" in warning
    assert "docs/python.md#traces-and-metrics" in warning
    assert warnings_of(pipeline) == [], "warned again at the second run"
    again = Pipeline(parse_pipeline(text, "p.yaml", registry), registry)
    assert warnings_of(again) == [], "warned again for a new Pipeline of the same file"


def test_no_warning_without_the_section_or_where_the_application_read_it() -> None:
    registry = toy_registry()
    assert warnings_of(Pipeline(parse_pipeline(TEXT, "p.yaml", registry), registry)) == []
    text = TEXT + "telemetry: {service_name: notes}\n"
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", registry), registry)
    telemetry_applied(pipeline.resolved.spec.telemetry)  # as the seamline command does
    try:
        assert warnings_of(pipeline) == []
    finally:
        telemetry_applied(None)


def test_an_embedder_from_a_pipeline_with_a_telemetry_section_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Embedder.from_pipeline`` reads the same file and ignored its section silently."""
    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(TEXT + "telemetry: {traces: [jsonl]}\n", encoding="utf-8")
    with (
        structlog.testing.capture_logs() as logs,
        Embedder.from_pipeline("p.yaml", registry=toy_registry()),
    ):
        pass
    (warning,) = [e["event"] for e in logs if "telemetry" in e["event"]]
    assert "telemetry section (traces) is read by the seamline command only" in warning
    assert "Embedder.from_pipeline() exports no spans" in warning
    Path("p.yaml").write_text(TEXT, encoding="utf-8")
    with (
        structlog.testing.capture_logs() as logs,
        Embedder.from_pipeline("p.yaml", registry=toy_registry()),
    ):
        pass
    assert [e for e in logs if "telemetry" in e["event"]] == []
