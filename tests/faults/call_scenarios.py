"""A kernel failing *while running* a compiled shape: what each injected fault was seen to do.

The fixture kernels (``plugin/``) are right until their ``at``-th execution (a host
callback counts them), then raise or return NaN; ``fault-shape`` returns the wrong
shape. Verification is off where it would spend calls, so that ``at`` counts batches.
Each scenario runs the orchestrator in this process (the ``memory`` sink, or the
``fault-jsonl`` sink where a checkpoint matters) and records what it did, without
judging it: ``tests/faults/test_call_faults.py`` asserts, :mod:`tests.faults.outcomes`
renders.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from seamline.contracts import Fallback
from seamline.core import commits
from seamline.core.attention.steps import CALL_FAULT_EVENT
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.pipeline import Pipeline
from tests.core.toy import MemorySink, RecordingMonitor, ToyModel

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from seamline.core.registry import Registry

DOCUMENTS = 24
REFERENCE = "{use: native}"


def pipeline_text(attention: str, sink: str = "{use: memory}") -> str:
    return (
        "pipeline: call-faults\n"
        f"loader: {{use: fault-loader, with: {{documents: {DOCUMENTS}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "monitors: [{use: recording}]\n"
        f"sink: {sink}\n"
        "run: {batch_size: 4, buckets: [4, 8], checkpoint_every: 8}\n"
    )


@contextlib.contextmanager
def recorded_spans() -> Iterator[InMemorySpanExporter]:
    """Every span ended inside the block (the global provider is installed once)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield exporter
    finally:
        exporter.shutdown()  # the provider keeps its processors: keep no spans of later runs
        exporter.clear()


@dataclass(frozen=True)
class KernelRun:
    """What one run with the ``memory`` sink wrote and what its monitors and spans saw."""

    error: BaseException | None
    """What the run raised, or None: it finished."""
    records: int
    vectors: Mapping[str, np.ndarray]
    """The vectors written, by document (a document written twice appears once)."""
    closed: tuple[bool, ...]
    """What the sink's ``close`` was told, once per close."""
    fallbacks: tuple[Fallback, ...]
    fault_events: tuple[tuple[str, Mapping[str, Any]], ...]
    """The spans' call-fault events: (span name, event attributes)."""


def run_kernel(registry: Registry, attention: str) -> KernelRun:
    """Run the pipeline with ``attention`` into the ``memory`` sink; what came of it."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    error: BaseException | None = None
    with recorded_spans() as exporter:
        try:
            resolved = parse_pipeline(pipeline_text(attention), "faults.yaml", registry)
            Orchestrator(resolved, registry).run()
        except Exception as caught:  # kept: the tests raise it, the table says it happened
            error = caught
        events = tuple(
            (span.name, dict(event.attributes or {}))
            for span in exporter.get_finished_spans()
            for event in span.events
            if event.name == CALL_FAULT_EVENT
        )
    run = KernelRun(
        error,
        len(MemorySink.records),
        {r.doc_id: np.asarray(r.vector) for r in MemorySink.records},
        tuple(MemorySink.closed),
        tuple(e for e in RecordingMonitor.events if isinstance(e, Fallback)),
        events,
    )
    MemorySink.reset()
    RecordingMonitor.events.clear()
    return run


def run_with_non_finite_model(registry: Registry) -> KernelRun:
    """The toy model's outputs made NaN for every kernel: the input is to blame, not the kernel."""
    real = ToyModel.apply

    def nan_apply(self: Any, params: Any, arrays: Any, attention: Any) -> Any:
        return real(self, params, arrays, attention) * np.float32("nan")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ToyModel, "apply", nan_apply)
        return run_kernel(
            registry, "{use: [fault-nan, native], verify: false, with: {fault-nan: {at: 99}}}"
        )


@dataclass(frozen=True)
class StoppedRun:
    """What a run with ``on_failure: raise`` raised, and what it left in its output folder."""

    error: BaseException | None
    out: Path
    published: bool
    checkpoint_cursor: str | None
    """The cursor of the checkpoint left beside the output (None: no checkpoint)."""
    fallbacks: tuple[Fallback, ...]


def run_stopping(registry: Registry, workdir: Path) -> StoppedRun:
    """A kernel failing at its 5th call, ``on_failure: raise``, into the ``fault-jsonl`` sink."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    out = workdir / "out" / "emb.jsonl"
    sink = f"{{use: fault-jsonl, with: {{path: {json.dumps(str(out))}}}}}"
    text = pipeline_text(
        "{use: [fault-raise, native], verify: false, on_failure: raise, "
        "with: {fault-raise: {at: 5}}}",
        sink,
    )
    path = workdir / "faults.yaml"
    path.write_text(text, encoding="utf-8")
    error: BaseException | None = None
    try:
        Pipeline.from_yaml(path, registry=registry).run()
    except Exception as caught:
        error = caught
    checkpoint = out.parent / ".emb.jsonl.checkpoint"
    cursor = None
    if checkpoint.exists():
        cursor = commits.decode(json.loads(checkpoint.read_text(encoding="utf-8"))["cursor"])[0]
    fallbacks = tuple(e for e in RecordingMonitor.events if isinstance(e, Fallback))
    RecordingMonitor.events.clear()
    return StoppedRun(error, out, out.exists(), cursor, fallbacks)
