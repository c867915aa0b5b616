"""Spans at every seam under one root, and trace ids on every log line inside a run."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from seamline.adapters.logging_setup import configure_logging
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, toy_registry
from tests.faults.call_scenarios import recorded_spans


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


def test_one_root_span_with_a_child_per_seam(spans: InMemorySpanExporter) -> None:
    MemorySink.reset()
    registry = toy_registry()
    text = (
        "pipeline: traced\n"
        "loader: {use: list, with: {texts: ['a b', 'c d e', 'f']}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "t.yaml", registry), registry).run()
    finished = spans.get_finished_spans()
    roots = [s for s in finished if s.name == "seamline.run"]
    assert len(roots) == 1
    root = roots[0]
    children = [s for s in finished if s.parent and s.parent.span_id == root.context.span_id]
    names = {s.name for s in children}
    assert {"seamline.model.load", "seamline.plan", "seamline.compile"} <= names
    assert {"seamline.model.apply", "seamline.sink.write"} <= names
    assert "seamline.loader.size" in names, "the size call crosses the loader's seam (1.1)"
    size = next(s for s in children if s.name == "seamline.loader.size")
    assert size.attributes["seamline.component.name"] == "list"
    assert all(s.context.trace_id == root.context.trace_id for s in finished if s in children)
    apply = next(s for s in children if s.name == "seamline.model.apply")
    assert apply.attributes["seamline.component.name"] == "toy"
    assert apply.attributes["seamline.attention.name"] == "native"
    assert apply.attributes["seamline.attention.reason"] == "explicitly configured"


def test_log_lines_inside_a_span_carry_trace_ids(spans: InMemorySpanExporter) -> None:
    stream = io.StringIO()
    configure_logging(json=True, stream=stream)
    try:
        with trace.get_tracer("test").start_as_current_span("outer") as span:
            structlog.get_logger("seamline.test").info("inside", answer=42)
        line = json.loads(stream.getvalue().strip().splitlines()[-1])
        assert line["event"] == "inside"
        assert line["answer"] == 42
        assert line["trace_id"] == format(span.get_span_context().trace_id, "032x")
        assert line["span_id"] == format(span.get_span_context().span_id, "016x")
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers.clear()


def test_the_precision_decision_is_a_span_of_the_run(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``precision: auto`` decides inside the run's trace: a ``seamline.precision`` span, a
    child of ``seamline.run``, naming the choice and why every other candidate was not."""
    from seamline.core.pipeline import Pipeline
    from seamline.core.precision.hardware import Hardware

    monkeypatch.setenv("SEAMLINE_PRECISION_DIR", str(tmp_path))
    without = Hardware("cpu", "cpu", frozenset({"avx2"}))
    monkeypatch.setattr(Hardware, "detect", classmethod(lambda cls, environ=None: without))
    MemorySink.reset()
    Pipeline.from_dict(
        {
            "pipeline": "toy",
            "loader": {"use": "list", "with": {"texts": ["one two", "three"]}},
            "model": {"use": "toy"},
            "precision": "auto",
            "sink": {"use": "memory"},
        },
        registry=toy_registry(),
    ).run()
    finished = {span.name: span for span in spans.get_finished_spans()}
    decided, run = finished["seamline.precision"], finished["seamline.run"]
    assert decided.parent is not None
    assert decided.parent.span_id == run.context.span_id
    attributes = dict(decided.attributes or {})
    assert attributes["seamline.precision.chosen"] == "float32"
    assert attributes["seamline.precision.candidates"] == ("bfloat16", "float32")
    assert "no bfloat16 instructions" in attributes["seamline.precision.refused"][0]  # type: ignore[index]
    assert attributes["seamline.precision.hardware.bf16_features"] == "none"
