"""The orchestrator's behaviour with toy components: streaming, negotiation, isolation."""

from __future__ import annotations

import importlib.metadata
import re
import time
import tracemalloc

import numpy as np
import pytest

from seamline.adapters.cli.commands.profile import names_in_cache_key
from seamline.components.attention.native import NativeAttention
from seamline.contracts import (
    AttentionChosen,
    BatchDone,
    Compiled,
    ConfigError,
    ContractViolation,
    DocumentFailed,
    Fallback,
    RunFinished,
    RunStarted,
    UnsupportedError,
    Verified,
)
from seamline.core.config import parse_pipeline
from seamline.core.embedder import Embedder
from seamline.core.monitor_hub import MonitorHub
from seamline.core.orchestrator import Orchestrator
from seamline.core.seams import failed_at
from tests.core.toy import (
    CountingSink,
    HangingMonitor,
    MemorySink,
    RecordingMonitor,
    toy_registry,
)

TEXTS = ["one two three", "!bad", "boom", *[" ".join(["w"] * n) for n in range(1, 15)]]


@pytest.fixture(autouse=True)
def _clean() -> None:
    MemorySink.reset()
    RecordingMonitor.events.clear()


def run(
    attention: str,
    *extra: str,
    texts: list[str] = TEXTS,
    monitors: str = "[{use: recording}, {use: exploding}]",
) -> Orchestrator:
    registry = toy_registry()
    text = (
        "pipeline: toy\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {{use: {attention}}}\n"
        f"monitors: {monitors}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    orchestrator = Orchestrator(parse_pipeline(text, "toy.yaml", registry, extra), registry)
    orchestrator.run()
    return orchestrator


def test_every_document_is_either_written_or_set_aside() -> None:
    orchestrator = run("native")
    written = sorted({r.doc_id for r in MemorySink.records})
    set_aside = {e.id: e.reason for e in MemorySink.errors}
    assert set_aside["d1"] == "unreadable"
    assert "cannot prepare 'boom'" in set_aside["d2"]
    assert len(written) + len(set_aside) == len(TEXTS)
    assert MemorySink.closed == [True]
    # Buckets 4, 8 and the model's max_length 16: at most three shapes compiled.
    summary = orchestrator._summary(1.0)
    assert summary.compilations == 3
    assert summary.first_output_seconds is not None
    assert summary.first_output_seconds > 0


NO_REFERENCE = (
    "pipeline: no-reference\n"
    "loader: {use: list, with: {texts: ['one two', 'three']}}\n"
    "model: {use: toy}\n"
    "attention: {use: long-only%s}\n"
    "monitors: [{use: recording}]\n"
    "sink: {use: memory}\n"
    "run: {batch_size: 4, buckets: [4]}\n"
)


def test_a_verifying_pipeline_without_any_reference_installed_is_refused() -> None:
    """Verification (on by default) had nothing to check against and checked nothing, with
    only ``explain`` saying "reference (none installed)": a kernel that lies ran, exit 0."""
    registry = toy_registry(without=(NativeAttention,))
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(NO_REFERENCE % "", "p.yaml", registry)
    message = str(refused.value)
    assert message.startswith("p.yaml:4:12: attention.verify checks the chosen attention")
    assert "no attention installed and allowed here is one" in message
    assert "attention.verify: false to run unverified" in message


def test_a_run_without_any_reference_attention_installed_finishes_cleanly() -> None:
    # No installed attention declares itself the reference, and verify: false says the
    # run may go unverified: the end of the run must not trip over the missing reference.
    registry = toy_registry(without=(NativeAttention,))
    resolved = parse_pipeline(NO_REFERENCE % ", verify: false", "p.yaml", registry)
    assert resolved.attention.reference is None
    summary = Orchestrator(resolved, registry).run()
    assert summary.counts.documents == 2
    assert MemorySink.closed == [True]
    assert {r.doc_id for r in MemorySink.records} == {"d0", "d1"}
    assert not [e for e in RecordingMonitor.events if isinstance(e, Verified)]
    finished = RecordingMonitor.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.ok


@pytest.mark.parametrize("copies", [False, True], ids=["same-examples", "copied-examples"])
def test_each_record_carries_the_text_of_its_span(copies: bool) -> None:
    # One example per word, so a record's text is a part of its document, not all of it;
    # a model whose collate returns copies of its examples gets the texts all the same.
    texts = ["alpha beta", "gamma  delta epsilon", "zeta"]
    registry = toy_registry()
    text = (
        "pipeline: texts\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        f"model: {{use: toy, with: {{windows: true, copy_examples: {str(copies).lower()}}}}}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "texts.yaml", registry), registry).run()
    got = sorted((r.doc_id, r.index, r.text) for r in MemorySink.records)
    assert got == [
        ("d0", 0, "alpha"),
        ("d0", 1, "beta"),
        ("d1", 0, "gamma"),
        ("d1", 1, "delta"),
        ("d1", 2, "epsilon"),
        ("d2", 0, "zeta"),
    ]
    for record in MemorySink.records:
        document = texts[int(record.doc_id[1:])]
        assert record.text == document[record.span[0] : record.span[1]]


def test_records_do_not_depend_on_batch_neighbours() -> None:
    run("native")
    together = {r.doc_id: r.vector for r in MemorySink.records}
    MemorySink.reset()
    run("native", texts=[TEXTS[5]])
    alone = MemorySink.records[0].vector
    np.testing.assert_allclose(alone, together["d5"], atol=1e-6)


def test_events_cover_the_run_and_a_broken_monitor_does_not_stop_it() -> None:
    run("native")
    kinds = [type(e) for e in RecordingMonitor.events]
    assert kinds[0] is RunStarted
    assert kinds[-1] is RunFinished
    assert {AttentionChosen, Compiled, BatchDone, DocumentFailed} <= set(kinds)
    finished = RecordingMonitor.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.ok
    assert finished.failed_documents == 2


def test_a_hanging_monitor_costs_one_timeout_not_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MonitorHub, "TIMEOUT_S", 0.3)
    HangingMonitor.seen.clear()
    HangingMonitor.release.clear()
    try:
        started = time.monotonic()
        orchestrator = run("native", monitors="[{use: hanging}, {use: recording}]")
        assert time.monotonic() - started < 30
        assert orchestrator.monitors.hung == {"hanging": "observe(RunStarted)"}
        assert len(HangingMonitor.seen) == 1  # never called again after it hung
        kinds = [type(e) for e in RecordingMonitor.events]
        assert kinds[0] is RunStarted
        assert kinds[-1] is RunFinished
        assert len(MemorySink.records) == len(TEXTS) - 2
    finally:
        HangingMonitor.release.set()


def test_compiled_code_names_each_seam() -> None:
    # JAX's persistent cache keys an executable without its op names: when an earlier test
    # turned the cache on (as the CLI does) and compiled the same program under other
    # names, this run would load that executable and read its names. `seamline profile`
    # keys by the names for the same reason.
    with names_in_cache_key():
        orchestrator = run("native")
    for step in orchestrator.steps.in_use():
        names = set(re.findall(r'op_name="([^"]*)"', step.compiled.as_text()))
        attention_ops = [n for n in names if "seamline/model/toy/seamline/attention/native/" in n]
        assert attention_ops, sorted(names)[:5]


def test_preference_list_falls_back_and_records_why() -> None:
    run("[never, native]")
    chosen = [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]
    assert {e.chosen for e in chosen} == {"native"}
    assert chosen[0].rejected == {"never": ("refuses head_dim 8",)}


def test_auto_orders_by_priority_and_falls_back() -> None:
    run("auto")
    chosen = [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]
    by_length = {e.signature.split("x")[1]: e.chosen for e in chosen}
    short = next(e for e in chosen if "xTq4x" in e.signature)
    assert "never" in short.rejected  # priority 10, but it refuses every shape
    # long-only ranks itself first from length 8; native (priority 0) serves the rest.
    assert by_length == {"Tq4": "native", "Tq8": "long-only", "Tq16": "long-only"}


def test_explicit_choice_that_cannot_serve_fails_loudly() -> None:
    with pytest.raises(UnsupportedError, match="refuses head_dim 8"):
        run("never")
    assert MemorySink.closed == [False]  # nothing is published by a failed run


def test_wrong_attention_shape_is_caught_at_the_seam() -> None:
    # An explicit choice has nothing to fall back to: it fails loudly, with the reason.
    with pytest.raises(
        UnsupportedError, match="broke the contract: attention 'wrong-shape' returned"
    ):
        run("wrong-shape")
    assert MemorySink.closed == [False]


def test_wrong_attention_shape_with_on_failure_raise_is_a_contract_violation() -> None:
    with pytest.raises(ContractViolation, match="attention 'wrong-shape' returned"):
        run("wrong-shape, on_failure: raise")


def test_wrong_attention_shape_in_a_preference_list_falls_back() -> None:
    run("[wrong-shape, native]")
    fallbacks = [e for e in RecordingMonitor.events if isinstance(e, Fallback)]
    assert {(f.failed, f.replacement) for f in fallbacks} == {("wrong-shape", "native")}
    assert all("broke the contract" in f.reason for f in fallbacks)
    chosen = {e.chosen for e in RecordingMonitor.events if isinstance(e, AttentionChosen)}
    assert chosen == {"wrong-shape", "native"}  # chosen first, then demoted for each shape
    assert MemorySink.closed == [True]
    assert len({r.doc_id for r in MemorySink.records}) == len(TEXTS) - 2


def test_a_model_whose_row_width_follows_the_batch_is_a_contract_violation() -> None:
    # Rows of 16 for short batches and 32 for long ones were published side by side, and
    # the run succeeded; a search then called the output "not as seamline wrote it".
    registry = toy_registry()
    text = (
        "pipeline: toy\n"
        "loader: {use: list, with: {texts: ['one two', 'one two three four five six']}}\n"
        "model: {use: toy, with: {width_by_length: true}}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 1, buckets: [4, 8]}\n"
    )
    orchestrator = Orchestrator(parse_pipeline(text, "toy.yaml", registry), registry)
    with pytest.raises(ContractViolation) as refused:
        orchestrator.run()
    assert str(refused.value) == (
        "model 'toy' returned rows of shape [32] for a batch of [1, 8] after rows of shape "
        "[16]; the contract requires one row shape whatever the batch's shape (the "
        "embedding's width is the model's)"
    )
    # Named with its distribution as other components' failures are, not "the pipeline".
    assert failed_at(refused.value) == "model 'toy' (apply, from tests 0)"
    assert MemorySink.closed == [False]


def test_a_model_whose_spans_lie_past_the_text_is_a_contract_violation() -> None:
    # Spans moved 1000 characters on were published as records with an empty text (blank
    # snippets in search), and the run succeeded.
    registry = toy_registry()
    text = (
        "pipeline: toy\n"
        "loader: {use: list, with: {texts: ['one two']}}\n"
        "model: {use: toy, with: {span_shift: 1000}}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
    )
    orchestrator = Orchestrator(parse_pipeline(text, "toy.yaml", registry), registry)
    with pytest.raises(ContractViolation) as refused:
        orchestrator.run()
    assert str(refused.value) == (
        "model 'toy' prepared example d0#0 with span (1000, 1007) for a 7-character "
        "document; a span is the [start, end) characters of the text the example covers: "
        "it must satisfy 0 <= start <= end <= 7"
    )
    assert failed_at(refused.value) == "model 'toy' (prepare, from tests 0)"
    assert MemorySink.closed == [False]


def test_a_model_that_returns_nan_is_refused_where_it_ran_naming_it() -> None:
    # The run stopped in the sink ("sink 'jsonl' ... check the model's weights file"), and
    # an Embedder returned the NaN.
    registry = toy_registry()
    text = (
        "pipeline: toy\n"
        "loader: {use: list, with: {texts: ['one two', 'three']}}\n"
        "model: {use: toy, with: {nan: true}}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4]}\n"
    )
    orchestrator = Orchestrator(parse_pipeline(text, "toy.yaml", registry), registry)
    with pytest.raises(ContractViolation) as refused:
        orchestrator.run()
    assert str(refused.value).startswith(
        "model 'toy' returned NaN or infinity for 2 of the 2 examples of a batch of 4x4 "
        "(the first: example d0#0); the contract requires finite outputs"
    )
    assert failed_at(refused.value) == "model 'toy' (apply, from tests 0)"
    assert MemorySink.records == []
    assert MemorySink.closed == [False]
    nan = {"use": "toy", "with": {"nan": True}}
    refusal = pytest.raises(ContractViolation, match="model 'toy' returned NaN")
    with Embedder(model=nan, attention="native", registry=registry) as embedder, refusal as refused:
        embedder.encode(["one two"])
    assert refused.value.__notes__ == ["(in model 'toy' (apply, from tests 0))"]


def streamed_peak(documents: int) -> int:
    """Peak traced Python memory of a run streaming ``documents`` through to a counting sink."""
    registry = toy_registry()
    text = (
        "pipeline: stream\n"
        f"loader: {{use: count, with: {{documents: {documents}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: counting}\n"
        "run: {batch_size: 64, buckets: [16], prefetch: 4}\n"
    )
    orchestrator = Orchestrator(parse_pipeline(text, "stream.yaml", registry), registry)
    CountingSink.written = 0
    tracemalloc.start()
    try:
        orchestrator.run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert CountingSink.written == documents


def test_memory_does_not_grow_with_the_corpus() -> None:
    streamed_peak(640)  # compile outside the measurement
    small, large = streamed_peak(1_280), streamed_peak(12_800)
    # Ten times the documents: if outputs or documents accumulated, the peak would grow ~10x.
    assert large < 1.5 * small, (small, large)


def test_the_manifest_names_the_versions_that_decide_the_numbers() -> None:
    # Only seamline-core, seamline-contracts, jax and jaxlib were listed: the tokenizers
    # library, which cuts the text into the ids a vector is made from, was not.
    orchestrator = run("native")
    versions = orchestrator.manifest()["versions"]
    assert set(versions) >= {"jax", "jaxlib", "numpy", "tokenizers", "seamline-core"}
    assert versions["tokenizers"] == importlib.metadata.version("tokenizers")


def test_a_run_whose_publication_fails_did_not_finish_well(monkeypatch: pytest.MonkeyPatch) -> None:
    # The sink's close publishes: LanceDB's merge failing there (a read-only /tmp) was
    # logged "run finished", "ok": true, and the run's root span was left UNSET.
    from opentelemetry.trace import StatusCode

    from tests.faults.call_scenarios import recorded_spans

    def failing(self: MemorySink, complete: bool = True) -> None:
        MemorySink.closed.append(complete)
        raise RuntimeError("cannot publish")

    monkeypatch.setattr(MemorySink, "close", failing)
    with recorded_spans() as spans:
        with pytest.raises(RuntimeError, match="cannot publish"):
            run("native", monitors="[{use: recording}]")
        (root,) = [s for s in spans.get_finished_spans() if s.name == "seamline.run"]
    assert MemorySink.closed == [True], "the work completed: the sink was asked to publish"
    finished = RecordingMonitor.events[-1]
    assert isinstance(finished, RunFinished)
    assert not finished.ok
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == "RuntimeError: cannot publish"
    assert [e.name for e in root.events].count("exception") == 1
