"""A kernel failing *while running* a compiled shape: demoted and the batch re-run, or a stop.

The fixture kernels (``plugin/``) are right until their ``at``-th execution (a host
callback counts them), then raise or return NaN; ``fault-shape`` returns the wrong
shape. Verification is off where it would spend calls, so that ``at`` counts batches.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.contracts import Fallback, ShardFailed
from seamline.core.attention.steps import CALL_FAULT_EVENT, AttentionCallFailed
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.pipeline import Pipeline
from tests.core.toy import MemorySink, RecordingMonitor

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from seamline.core.registry import Registry

DOCUMENTS = 24


@pytest.fixture(autouse=True)
def _clean() -> None:
    MemorySink.reset()
    RecordingMonitor.events.clear()


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


def run(registry: Registry, attention: str) -> dict[str, np.ndarray]:
    """The vectors the run wrote, by document."""
    resolved = parse_pipeline(pipeline_text(attention), "faults.yaml", registry)
    Orchestrator(resolved, registry).run()
    assert MemorySink.closed == [True]
    vectors = {r.doc_id: np.asarray(r.vector) for r in MemorySink.records}
    assert len(vectors) == len(MemorySink.records) == DOCUMENTS, "every document exactly once"
    MemorySink.reset()
    return vectors


def fallbacks() -> list[Fallback]:
    return [e for e in RecordingMonitor.events if isinstance(e, Fallback)]


@pytest.mark.parametrize(
    ("kernel", "said"),
    [("fault-raise", "failed while running: "), ("fault-nan", "returned NaN or infinity")],
)
def test_a_kernel_failing_while_running_falls_back_and_the_batch_is_rerun(
    fault_registry: Registry, spans: InMemorySpanExporter, kernel: str, said: str
) -> None:
    expected = run(fault_registry, "{use: native}")
    RecordingMonitor.events.clear()
    got = run(
        fault_registry,
        f"{{use: [{kernel}, native], verify: false, with: {{{kernel}: {{at: 3}}}}}}",
    )
    assert got.keys() == expected.keys()
    for doc_id, vector in expected.items():
        np.testing.assert_array_equal(got[doc_id], vector)  # the re-run batch is native's
    failed = fallbacks()
    assert failed, "a Fallback event is emitted"
    assert {(f.failed, f.replacement) for f in failed} == {(kernel, "native")}
    assert all(said in f.reason for f in failed), [f.reason for f in failed]
    events = [
        (span.name, event)
        for span in spans.get_finished_spans()
        for event in span.events
        if event.name == CALL_FAULT_EVENT
    ]
    assert events, "the batch's span records the fault"
    assert {name for name, _ in events} == {"seamline.model.apply"}
    assert all(event.attributes["seamline.attention.name"] == kernel for _, event in events)


def test_outputs_the_reference_makes_non_finite_too_do_not_demote(
    fault_registry: Registry, faults: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The toy model's outputs made NaN for every kernel: the input is to blame, not the kernel.
    from tests.core.toy import ToyModel

    real = ToyModel.apply

    def nan_apply(self: Any, params: Any, arrays: Any, attention: Any) -> Any:
        return real(self, params, arrays, attention) * np.float32("nan")

    monkeypatch.setattr(ToyModel, "apply", nan_apply)
    resolved = parse_pipeline(
        pipeline_text("{use: [fault-nan, native], verify: false, with: {fault-nan: {at: 99}}}"),
        "faults.yaml",
        fault_registry,
    )
    Orchestrator(resolved, fault_registry).run()
    assert fallbacks() == []
    assert len(MemorySink.records) == DOCUMENTS


def test_on_failure_raise_stops_with_the_last_checkpoint_intact(
    fault_registry: Registry, tmp_path: Any
) -> None:
    out = tmp_path / "out" / "emb.jsonl"
    sink = f"{{use: jsonl, with: {{path: {json.dumps(str(out))}}}}}"
    # The default registry has no jsonl: the toy one plus the fault sink (a jsonl sink).
    sink = sink.replace("jsonl,", "fault-jsonl,")
    text = pipeline_text(
        "{use: [fault-raise, native], verify: false, on_failure: raise, "
        "with: {fault-raise: {at: 5}}}",
        sink,
    )
    path = tmp_path / "faults.yaml"
    path.write_text(text, encoding="utf-8")
    pipeline = Pipeline.from_yaml(path, registry=fault_registry)
    with pytest.raises(ShardFailed) as caught:
        pipeline.run()
    message = str(caught.value)
    assert "attention 'fault-raise' (call, from seamline-fixture-faults 0.1.0)" in message
    assert "on_failure is 'raise'" in message
    assert "--resume" in message
    assert isinstance(caught.value.__cause__, AttentionCallFailed)
    assert not out.exists(), "nothing is published"
    checkpoint = json.loads((out.parent / ".emb.jsonl.checkpoint").read_text(encoding="utf-8"))
    assert checkpoint["cursor"] == "7", "the commit after 8 documents stands"
    assert fallbacks() == []


@pytest.mark.parametrize("attention", ["auto", "[fault-shape, native]"])
def test_a_wrong_shape_under_auto_or_a_list_falls_back(
    fault_registry: Registry, attention: str
) -> None:
    run(fault_registry, f"{{use: {attention}}}")
    shape = [f for f in fallbacks() if f.failed == "fault-shape"]
    assert shape, "fault-shape (first under auto, and in the list) was chosen, then demoted"
    assert all(f.reason.startswith("broke the contract: attention 'fault-shape'") for f in shape)
    if attention != "auto":
        assert {f.replacement for f in shape} == {"native"}


def test_a_failure_reason_is_one_line_without_the_callback_traceback(
    fault_registry: Registry,
) -> None:
    run(fault_registry, "{use: [fault-raise, native], verify: false}")
    (fallback, *_) = fallbacks()
    assert "\n" not in fallback.reason
    assert "Traceback" not in fallback.reason
    assert fallback.reason.endswith("RuntimeError: injected kernel fault at call 1")
