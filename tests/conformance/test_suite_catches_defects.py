"""The suite can fail: each deliberately broken component is caught, by the right check.

A suite that passes everything proves nothing. Each defect in broken.py is run
through the contract class of its kind (only the checks meant to catch it, with
two generated cases, to stay fast), and must (a) not pass, (b) fail the check that
should catch it, (c) with a message that names the defect. Positive controls run
the same checks on correct components, so a failure is about the defect and not
about the harness.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from seamline.components.conformance import (
    JsonlSinkConformance,
    LogMonitorConformance,
    NativeConformance,
)
from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import Attention, Executor, Loader, Model, Monitor, Sink
from seamline.contracts.testing import (
    AttentionContract,
    ExecutorContract,
    LoaderContract,
    ModelContract,
    MonitorContract,
    SinkContract,
)
from seamline.contracts.testing import attention as suite_attention
from seamline.contracts.testing.runner import SuiteRun, run
from seamline.contracts.versions import CONTRACT_VERSIONS, installed_version
from seamline.core.attention import asking
from tests.conformance import broken

# -- contract classes building a given component -------------------------------------------


def attention_check(component: type[Attention[Any]]) -> type:
    class Check(AttentionContract):
        @pytest.fixture
        def attention(self) -> Attention[Any]:
            return component(component.Config())

    return Check


def monitor_check(component: type[Monitor[Any]]) -> type:
    class Check(MonitorContract):
        @pytest.fixture
        def monitor(self) -> Monitor[Any]:
            return component(component.Config())

    return Check


def executor_check(component: type[Executor[Any]]) -> type:
    class Check(ExecutorContract):
        @pytest.fixture
        def executor(self) -> Executor[Any]:
            return component(component.Config())

    return Check


def loader_check(component: type[broken.ListLoader]) -> type:
    class Check(LoaderContract):
        @pytest.fixture
        def make_loader(self) -> Callable[[Path, Sequence[str | None]], Loader[Any]]:
            def make(directory: Path, texts: Sequence[str | None]) -> Loader[Any]:
                path = broken.write_texts(directory, texts)
                return component(broken.ListLoaderConfig(path=path))

            return make

    return Check


def sink_check(component: type[broken.LineSink]) -> type:
    class Check(SinkContract):
        @pytest.fixture
        def make_sink(self) -> Callable[[Path], Sink[Any]]:
            return lambda directory: component(broken.LineSinkConfig(path=directory / "out.jsonl"))

        @pytest.fixture
        def read_output(self) -> Any:
            return lambda directory: broken.read_lines(directory / "out.jsonl")

        @pytest.fixture
        def read_errors(self) -> Any:
            return lambda directory: broken.read_line_errors(directory / "out.jsonl")

    return Check


def model_check(component: type[broken.CharModel]) -> type:
    class Check(ModelContract):
        @pytest.fixture
        def model(self) -> Model[Any]:
            return component(component.Config())

    return Check


class UnpublishedPartsSink(JsonlSink):
    """Stages parts and refuses an unfinished run, but publishing a finished one does nothing."""

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        staged = self.staged_run(manifest)
        if staged is None or len(staged.finished) < count:
            super().publish_parts(run_id, count, manifest)  # the refusal, as it should


class UnpublishedPartsCheck(JsonlSinkConformance):
    @pytest.fixture
    def make_sink(self) -> Callable[[Path], Sink[Any]]:
        return lambda directory: UnpublishedPartsSink(
            JsonlSink.Config(path=directory / "out.jsonl")
        )


class HoldsNothingSink(JsonlSink):
    """Declares contract 1.6 but keeps the base class's hold, which holds nothing."""

    def hold_destination(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()


class HoldsNothingCheck(JsonlSinkConformance):
    @pytest.fixture
    def make_sink(self) -> Callable[[Path], Sink[Any]]:
        return lambda directory: HoldsNothingSink(JsonlSink.Config(path=directory / "out.jsonl"))


def run_checks(check_class: type, select: str) -> SuiteRun:
    return run(check_class, max_examples=2, select=select)


def outcomes(suite: SuiteRun) -> str:
    """The results in words, for assertion messages."""
    lines = [f"{r.check}: {r.outcome} {r.message}" for r in suite.results]
    return "\n".join(lines) or suite.output


# -- the defects ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Defect:
    check_class: type
    select: str
    """The -k expression running only the checks meant to catch the defect."""
    check: str
    """The check that must fail."""
    says: tuple[str, ...]
    """What its message must contain."""


DEFECTS = {
    "bias-left-out": Defect(
        attention_check(broken.BiasBlindAttention),
        "feature_case[relative-bias]",
        "feature_case[relative-bias]",
        ("disagrees with the exact reference", "relative bias"),
    ),
    "bias-by-index-not-position": Defect(
        attention_check(broken.BiasIndexPositionsAttention),
        "feature_case[relative-bias-cross-segments]",
        "feature_case[relative-bias-cross-segments]",
        ("disagrees with the exact reference", "relative bias"),
    ),
    "wrong-numerics": Defect(
        attention_check(broken.OffByOnePercentAttention),
        "feature_case[plain-f32]",
        "feature_case[plain-f32]",
        ("disagrees with the exact reference",),
    ),
    "slightly-wrong-numerics": Defect(
        attention_check(broken.SlightlyOffAttention),
        "feature_case[plain-f32]",
        "feature_case[plain-f32]",
        ("disagrees with the exact reference", "> tolerance 1e-05"),
    ),
    "wrong-shape": Defect(
        attention_check(broken.DroppedHeadAttention),
        "feature_case[plain-f32]",
        "feature_case[plain-f32]",
        ("shape (1, 64, 3, 64)", "must have q's shape"),
    ),
    "ignores-segment-ids": Defect(
        attention_check(broken.SegmentBlindAttention),
        "feature_case[segment-ids]",
        "feature_case[segment-ids]",
        ("disagrees with the exact reference", "segment ids"),
    ),
    "nan-for-fully-masked-rows": Defect(
        attention_check(broken.NanRowsAttention),
        "fully_masked",
        "fully_masked_rows_are_zero",
        ("returns NaN", "no key to attend to"),
    ),
    "garbage-in-bf16": Defect(
        attention_check(broken.Bf16GarbageAttention),
        "feature_case[plain-bf16]",
        "feature_case[plain-bf16]",
        ("disagrees with the exact reference", "bfloat16"),
    ),
    "output-changes-on-recompile": Defect(
        attention_check(broken.TracedChoiceAttention),
        "deterministic",
        "deterministic",
        ("gives different results for the same inputs on recompile", "not from timing"),
    ),
    "declares-a-newer-contract": Defect(
        attention_check(broken.FutureContractAttention),
        "declared_contract_version",
        "declared_contract_version_is_supported",
        (
            "attention 'future-contract' implements attention contract 1.99, but "
            f"seamline-contracts {installed_version('seamline-contracts')} hosts attention "
            f"contract 1.0 to {CONTRACT_VERSIONS['attention']}: upgrade seamline-contracts",
            "declare that one as its contract_version",
        ),
    ),
    "refuses-without-reasons": Defect(
        attention_check(broken.MuteRefusalAttention),
        "claims_at_least",
        "claims_at_least_one_case_here",
        ("without saying why",),
    ),
    "monitor-raises": Defect(
        monitor_check(broken.RaisingMonitor),
        "accepts_every_event_type",
        "accepts_every_event_type",
        ("raised KeyError", "on Compiled", "must never raise"),
    ),
    "monitor-observes-names": Defect(
        monitor_check(broken.NamesForTypesMonitor),
        "observes_names_event_types",
        "observes_names_event_types",
        ("observes names", "'BatchDone'", "not event types"),
    ),
    "config-accepts-unknown-fields": Defect(
        monitor_check(broken.LaxConfigMonitor),
        "config_rejects_unknown_fields",
        "config_rejects_unknown_fields",
        ("accepted an unknown field",),
    ),
    "sink-duplicates-on-resume": Defect(
        sink_check(broken.DuplicatingSink),
        "exactly_once",
        "exactly_once_across_a_crash",
        ("more than once",),
    ),
    "sink-visible-before-close": Defect(
        sink_check(broken.EagerSink),
        "nothing_visible",
        "nothing_visible_before_close",
        ("visible before close",),
    ),
    "sink-publishes-no-parts": Defect(
        UnpublishedPartsCheck,
        "staged_parts_are_published",
        "staged_parts_are_published_together_and_once",
        ("published nothing after publish_parts",),
    ),
    "sink-holds-nothing-for-a-staged-run": Defect(
        HoldsNothingCheck,
        "hold_keeps_every_other_run_out",
        "a_staged_run_s_hold_keeps_every_other_run_out",
        ("another run's start() was not refused",),
    ),
    "sink-refuses-a-relative-path": Defect(
        sink_check(broken.PathSpellingSink),
        "relative_to_the_working_directory",
        "resumes_from_a_path_relative_to_the_working_directory",
        ("refused to resume from a relative path", "written for other files"),
    ),
    "loader-shards-overlap": Defect(
        loader_check(broken.OverlappingShardsLoader),
        "shards_are_disjoint",
        "shards_are_disjoint_and_complete[2]",
        ("shard 1/2 repeats ['doc-0']",),
    ),
    "loader-resume-repeats-the-cursor-item": Defect(
        loader_check(broken.RepeatingResumeLoader),
        "resume_yields",
        "resume_yields_exactly_the_rest",
        ("resuming after item 0 ('doc-0') yields ['doc-0'",),
    ),
    "loader-reads-files-it-does-not-name": Defect(
        loader_check(broken.SidecarLoader),
        "reads_only_files",
        "it_reads_only_files_the_host_fingerprints",
        ("reads files the host does not fingerprint as its input", "beside its input (['"),
    ),
    "loader-size-forgets-the-shard": Defect(
        loader_check(broken.MiscountingLoader),
        "size_is",
        "size_is_unknown_or_exact[2]",
        ("size(shard=0/2) says",),
    ),
    "executor-runs-tasks-twice": Defect(
        executor_check(broken.TwiceExecutor),
        "runs_every_planned_task_once",
        "runs_every_planned_task_once",
        ("ran shards [0, 0, 1, 1]", "each exactly once"),
    ),
    "executor-drops-the-trace-context": Defect(
        executor_check(broken.ContextDroppingExecutor),
        "trace_context",
        "every_task_carries_the_trace_context",
        ("spans would leave the run's trace",),
    ),
    "executor-swallows-a-failed-shard": Defect(
        executor_check(broken.SwallowingExecutor),
        "failing_shard",
        "a_failing_shard_stops_the_run_naming_it",
        ("DID NOT RAISE",),
    ),
    "executor-forwards-no-progress": Defect(
        executor_check(broken.SilentExecutor),
        "forwards_progress",
        "forwards_progress_while_shards_run",
        ("declares executor contract 1.2", "handed the job no progress"),
    ),
    "late-unsupported-error": Defect(
        attention_check(broken.LateRefusalAttention),
        "feature_case[causal]",
        "feature_case[causal]",
        (
            "supports() said yes to",
            "[causal]",
            "then the call raised UnsupportedError",
            "refuse it in supports()",
        ),
    ),
    "ignores-the-scale": Defect(
        attention_check(broken.ScaleBlindAttention),
        "feature_case[scale-1]",
        "feature_case[scale-1]",
        ("disagrees with the exact reference", "scale=1.0"),
    ),
    "reads-only-the-first-128-keys": Defect(
        attention_check(broken.FirstKeysAttention),
        "feature_case[batch-3-long-padded]",
        "feature_case[batch-3-long-padded]",
        ("disagrees with the exact reference", "Tk=300"),
    ),
    "rows-past-two-read-another-row": Defect(
        attention_check(broken.TwoRowsAttention),
        "feature_case[batch-3-long-padded]",
        "feature_case[batch-3-long-padded]",
        ("disagrees with the exact reference", "B=3"),
    ),
    **{
        defect: Defect(
            attention_check(kernel),
            "feature_case[batch-5-many-documents]",
            "feature_case[batch-5-many-documents]",
            ("disagrees with the exact reference", "B=5", "up to 14 documents a row"),
        )
        for defect, kernel in (
            ("reads-row-0-s-segment-ids", broken.FirstRowSegmentsAttention),
            ("keeps-8-documents-apart", broken.EightDocumentsAttention),
            ("rows-past-four-read-row-0", broken.FourRowsAttention),
        )
    },
    "model-discards-its-attention": Defect(
        model_check(broken.AttentionDiscardingModel),
        "wrong_attention",
        "outputs_change_with_a_wrong_attention",
        ("changes its outputs by only 0", "must compute with the attention it is given"),
    ),
    "model-span-past-the-text": Defect(
        model_check(broken.SpanPastTheTextModel),
        "spans_are_characters",
        "spans_are_characters_of_the_document",
        ("with span (1000, 1017) for a 17-character document", "0 <= start <= end <= 17"),
    ),
    "model-width-follows-the-length": Defect(
        model_check(broken.LengthWidthModel),
        "short_and_long_batches",
        "row_shape_is_the_same_for_short_and_long_batches",
        ("rows of shape [16]", "after rows of shape [8]", "one row shape"),
    ),
    "loader-position-off-by-one": Defect(
        loader_check(broken.PositionBeforeLoader),
        "position_is",
        "position_is_unknown_or_exact[1]",
        ("position('0', shard=0/1) says 0", "'doc-0' is item 1", "up to and including"),
    ),
    "sink-drops-the-text": Defect(
        sink_check(broken.TextDroppingSink),
        "publishes_exactly_what_was_written",
        "publishes_exactly_what_was_written",
        ("reads back text None", "a sink declaring contract 1.4 stores it"),
    ),
    "sink-changes-metadata-types": Defect(
        sink_check(broken.MetadataAsTextSink),
        "publishes_exactly_what_was_written",
        "publishes_exactly_what_was_written",
        ("reads back metadata", "'line': '0'", "expected {'source': 'file-0.txt', 'line': 0}"),
    ),
    "sink-drops-a-buffer-s-overflow": Defect(
        sink_check(broken.OverflowDroppingSink),
        "long_run_whole",
        "publishes_a_long_run_whole",
        ("200 of 1200 records lost",),
    ),
    "sink-keeps-no-errors": Defect(
        sink_check(broken.ErrorDroppingSink),
        "errors_are_read_back",
        "errors_are_read_back",
        ("the errors read back are []", "must be published with the run"),
    ),
    "loader-drops-unreadable-input": Defect(
        loader_check(broken.DroppingLoader),
        "reads_every_item",
        "reads_every_item_in_order",
        ("yielded 8 items for 10 inputs", "never dropped"),
    ),
}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_the_suite_catches(defect: str) -> None:
    case = DEFECTS[defect]
    suite = run_checks(case.check_class, case.select)
    assert not suite.passed, f"the suite passed {defect}:\n{outcomes(suite)}"
    results = {r.check: r for r in suite.results}
    assert case.check in results, f"{case.check} did not run:\n{outcomes(suite)}"
    result = results[case.check]
    assert result.outcome == "failed", f"{case.check} did not fail:\n{outcomes(suite)}"
    for words in case.says:
        assert words in result.message, f"{case.check}: {words!r} not in {result.message!r}"


@pytest.mark.parametrize(
    ("question", "select", "check"),
    [
        ("supports", "claims_at_least", "claims_at_least_one_case_here"),
        ("priority", "priority_is_an_integer", "priority_is_an_integer"),
    ],
)
def test_the_suite_holds_supports_and_priority_to_the_hosts_time_limit(
    monkeypatch: pytest.MonkeyPatch, question: str, select: str, check: str
) -> None:
    """A first answer later than the host waits fails, naming the limit (shortened here)."""
    assert suite_attention.ASK_TIMEOUT_S is asking.ASK_TIMEOUT_S, "not the host's limit"
    monkeypatch.setattr(suite_attention, "ASK_TIMEOUT_S", 0.2)
    monkeypatch.setattr(broken.SlowFirstAnswerAttention, "DELAY_S", 0.6)
    suite = run_checks(attention_check(broken.SlowFirstAnswerAttention), select)
    results = {r.check: r for r in suite.results}
    assert not suite.passed, outcomes(suite)
    assert results[check].outcome == "failed", outcomes(suite)
    said = results[check].message
    assert f"'slow-first-answer'.{question}() did not answer in 0.2 s" in said, said
    assert "seamline gives up on it after 0.2 s and refuses the shape" in said, said


def test_the_version_failure_names_the_hosted_version_once() -> None:
    """It said "... newer than this seamline's 1.2 ... (this seamline-contracts hosts 1.2)"."""
    suite = run_checks(attention_check(broken.FutureContractAttention), "declared_contract")
    said = {r.check: r.message for r in suite.results}["declared_contract_version_is_supported"]
    assert said.count(CONTRACT_VERSIONS["attention"]) == 1, said


# -- positive controls: the same checks pass on correct components -------------------------

ATTENTION_CHECKS = (
    "feature_case[causal]",
    "feature_case[scale-1]",
    "feature_case[batch-3-long-padded]",
    "feature_case[batch-5-many-documents]",
    "feature_case[relative-bias]",
    "feature_case[relative-bias-segments]",
    "feature_case[plain-f32]",
    "feature_case[plain-bf16]",
    "feature_case[segment-ids]",
    "fully_masked_rows_are_zero",
    "claims_at_least_one_case_here",
    "config_rejects_unknown_fields",
    "deterministic",
    "priority_is_an_integer",
)


CONTROLS = {
    "native-attention": (
        NativeConformance,
        "feature_case[plain-f32] or feature_case[plain-bf16] or feature_case[segment-ids] "
        "or fully_masked or claims_at_least or config_rejects or feature_case[relative-bias] "
        "or feature_case[relative-bias-segments] or feature_case[causal] "
        "or feature_case[scale-1] or feature_case[batch-3-long-padded] "
        "or feature_case[batch-5-many-documents] or deterministic or priority_is_an_integer",
        set(ATTENTION_CHECKS),
    ),
    "char-model": (
        model_check(broken.CharModel),
        "wrong_attention or short_and_long_batches or batch_composition_invariance "
        "or spans_are_characters",
        {
            "spans_are_characters_of_the_document",
            "outputs_change_with_a_wrong_attention",
            "row_shape_is_the_same_for_short_and_long_batches",
            "batch_composition_invariance",
        },
    ),
    "log-monitor": (
        LogMonitorConformance,
        "accepts_every_event_type or config_rejects",
        {"accepts_every_event_type", "config_rejects_unknown_fields"},
    ),
    "list-loader": (
        loader_check(broken.ListLoader),
        "shards_are_disjoint or resume_yields or reads_every_item or size_is or position_is"
        " or reads_only_files",
        {
            "it_reads_only_files_the_host_fingerprints",
            "position_is_unknown_or_exact[1]",
            "position_is_unknown_or_exact[2]",
            "shards_are_disjoint_and_complete[2]",
            "shards_are_disjoint_and_complete[3]",
            "size_is_unknown_or_exact[1]",
            "size_is_unknown_or_exact[2]",
            "size_is_unknown_or_exact[3]",
            "resume_yields_exactly_the_rest",
            "reads_every_item_in_order",
        },
    ),
    "line-sink": (
        sink_check(broken.LineSink),
        "exactly_once or nothing_visible or relative_to_the_working_directory "
        "or publishes_exactly_what_was_written or long_run_whole or errors_are_read_back",
        {
            "publishes_exactly_what_was_written",
            "publishes_a_long_run_whole",
            "errors_are_read_back",
            "exactly_once_across_a_crash",
            "nothing_visible_before_close",
            "resumes_from_a_path_relative_to_the_working_directory",
        },
    ),
    "serial-executor": (
        executor_check(broken.SerialExecutor),
        "runs_every_planned_task_once or trace_context or failing_shard",
        {
            "runs_every_planned_task_once",
            "every_task_carries_the_trace_context",
            "a_failing_shard_stops_the_run_naming_it",
        },
    ),
    "threaded-executor": (
        executor_check(broken.ThreadedExecutor),
        "runs_every_planned_task_once or forwards_progress",
        {"runs_every_planned_task_once", "forwards_progress_while_shards_run"},
    ),
}


@pytest.mark.parametrize("control", list(CONTROLS))
def test_a_correct_component_passes_the_same_checks(control: str) -> None:
    check_class, select, expected = CONTROLS[control]
    suite = run_checks(check_class, select)
    assert suite.passed, outcomes(suite)
    assert {r.check for r in suite.results} == expected, outcomes(suite)
    assert all(r.outcome == "passed" for r in suite.results), outcomes(suite)
