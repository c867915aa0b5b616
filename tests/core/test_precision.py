"""Precision negotiation: offered by the model, native on the hardware, through the gate.

The toy model offers float32 and bfloat16 (its bfloat16 really computes the attention
in bfloat16, and ``bfloat16_error`` adds a known error to fail the gate); the hardware
is given explicitly, as a CPU with or without bfloat16 instructions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.contracts import Loaded, UserError
from seamline.core.config import parse_pipeline
from seamline.core.config.resolve import PipelineConfigError
from seamline.core.config.spec import PrecisionGate
from seamline.core.embedder import BATCH_POLICIES, Embedder
from seamline.core.fingerprint import run_inputs
from seamline.core.orchestrator import Orchestrator
from seamline.core.pipeline import Pipeline
from seamline.core.precision import records
from seamline.core.precision.decision import GateFigures, PrecisionDecision
from seamline.core.precision.gate import compare, refusals
from seamline.core.precision.hardware import (
    HIDDEN_VARIABLE,
    Hardware,
    hidden_features,
    read_cpu_features,
)
from seamline.core.precision.negotiate import decide_precision, encoder_side, preview_precision
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.worker import RemoteWorkerFactory
from tests.core.toy import MemorySink, ToyModel, toy_registry

TEXTS = [" ".join(f"w{(i * 7 + j) % 31}" for j in range(3 + i % 9)) for i in range(40)]
WITH_BF16 = Hardware("cpu", "cpu", frozenset({"avx2", "avx512_bf16"}))
WITHOUT_BF16 = Hardware("cpu", "cpu", frozenset({"avx2", "fma"}))


@pytest.fixture(autouse=True)
def records_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "records"
    monkeypatch.setenv(records.DIRECTORY_VARIABLE, str(folder))
    MemorySink.reset()
    return folder


def pipeline_text(
    precision: str, model: str = "{use: toy}", run: str = "{batch_size: 4, buckets: [16]}"
) -> str:
    return (
        "pipeline: toy\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        f"model: {model}\n"
        "attention: {use: native}\n"
        f"precision: {precision}\n"
        "sink: {use: memory}\n"
        f"run: {run}\n"
    )


def resolved(precision: str, model: str = "{use: toy}"):  # type: ignore[no-untyped-def]
    registry = toy_registry()
    return parse_pipeline(pipeline_text(precision, model), "p.yaml", registry), registry


def decide(precision: str, hardware: Hardware, model: str = "{use: toy}") -> PrecisionDecision:
    pipeline, registry = resolved(precision, model)
    return decide_precision(pipeline, registry, hardware=hardware)


# -- the hardware ------------------------------------------------------------------------------


def test_cpu_features_are_read_from_the_first_flags_line(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n\nflags\t: fpu\n")
    assert read_cpu_features(str(cpuinfo)) == frozenset({"fpu", "avx2", "avx512_bf16"})
    cpuinfo.write_text("processor\t: 0\nFeatures\t: fp asimd bf16\n")  # Arm
    assert "bf16" in (read_cpu_features(str(cpuinfo)) or ())
    assert read_cpu_features(str(tmp_path / "absent")) is None


def test_bfloat16_is_native_only_with_the_instructions() -> None:
    assert WITH_BF16.native("bfloat16") == (
        True,
        "this CPU has bfloat16 instructions (avx512_bf16)",
    )
    ok, why = WITHOUT_BF16.native("bfloat16")
    assert not ok
    assert "no bfloat16 instructions" in why
    assert "emulated" in why
    assert Hardware("cpu", "cpu", None).native("bfloat16")[0] is False
    assert Hardware("cpu", "cpu", frozenset()).native("float32")[0] is True


def test_accelerators_are_judged_by_what_they_are() -> None:
    assert Hardware("tpu", "TPU v5 lite", None).native("bfloat16")[0]
    assert Hardware("gpu", "NVIDIA H100", None, compute_capability="9.0").native("bfloat16")[0]
    ok, why = Hardware("gpu", "Tesla T4", None, compute_capability="7.5").native("bfloat16")
    assert not ok
    assert "8.0 or newer" in why
    assert not Hardware("gpu", "some GPU", None).native("bfloat16")[0]


def test_hidden_features_mask_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import seamline.core.precision.hardware as hardware

    monkeypatch.setattr(hardware, "read_cpu_features", lambda: frozenset({"avx512_bf16", "avx2"}))
    seen = Hardware.detect({HIDDEN_VARIABLE: "avx512_bf16, amx_bf16"})
    ok, why = seen.native("bfloat16")
    assert not ok
    assert f"${HIDDEN_VARIABLE} hides avx512_bf16" in why
    assert Hardware.detect({})._cpu_bf16()[0]


@pytest.mark.parametrize("value", ["avx512_bf16;rm -rf", "AVX512", ",".join(["a"] * 65)])
def test_a_malformed_hidden_list_is_refused(value: str) -> None:
    with pytest.raises(UserError, match=HIDDEN_VARIABLE):
        hidden_features(value)


@pytest.mark.parametrize("value", ["avx512bf16,amxbf16", "avx_512_bf16", "all", "avx512f"])
def test_a_hidden_name_the_check_does_not_look_for_is_refused(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A misspelt name hid nothing, silently: bfloat16 was chosen anyway."""
    import seamline.core.precision.hardware as hardware

    monkeypatch.setattr(hardware, "read_cpu_features", lambda: frozenset({"avx512_bf16"}))
    with pytest.raises(UserError, match=r"avx512_bf16, amx_bf16, bf16") as refused:
        Hardware.detect({HIDDEN_VARIABLE: value})
    assert f"${HIDDEN_VARIABLE} names {value.split(',')[0]!r}" in str(refused.value)


def test_a_hidden_feature_is_said_even_when_bfloat16_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import seamline.core.precision.hardware as hardware

    found = frozenset({"avx512_bf16", "amx_bf16"})
    monkeypatch.setattr(hardware, "read_cpu_features", lambda: found)
    ok, why = Hardware.detect({HIDDEN_VARIABLE: "amx_bf16"}).native("bfloat16")
    assert ok
    assert (
        why
        == f"this CPU has bfloat16 instructions (avx512_bf16; ${HIDDEN_VARIABLE} hides amx_bf16)"
    )


# -- the gate's figures --------------------------------------------------------------------


def test_identical_vectors_pass_and_a_moved_one_is_seen() -> None:
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(30, 16)).astype(np.float32)
    same = compare(reference, reference.copy(), top_k=10)
    assert same.min_cosine == pytest.approx(1.0)
    assert same.neighbours == 1.0
    assert same.worst_neighbours == 1.0
    assert refusals(same, PrecisionGate()) == []
    moved = reference.copy()
    moved[3] = rng.normal(size=16)
    figures = compare(reference, moved, top_k=10)
    assert figures.min_cosine < 0.9
    assert figures.neighbours is not None
    assert figures.neighbours < 1.0
    assert figures.max_abs > 0.1
    reasons = refusals(figures, PrecisionGate())
    assert any("min cosine" in reason for reason in reasons)


def test_a_repeated_text_listed_in_another_order_is_not_a_lost_neighbour() -> None:
    # Windows 1 and 2 are the same text: exactly as near to every other window. A
    # candidate a hair off lists 2 before 1 where float32 listed 1 first; counting set
    # overlap would refuse it (a lost neighbour per window), though nothing retrieves worse.
    angles = np.radians([0.0, 10.0, 10.0, 80.0, 170.0, 260.0])
    reference = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    candidate = reference.copy()
    candidate[1] = [np.cos(np.radians(10.0005)), np.sin(np.radians(10.0005))]
    figures = compare(reference, candidate, top_k=1)
    assert figures.min_cosine > 0.9999
    assert figures.neighbours == 1.0
    assert refusals(figures, PrecisionGate()) == []


def test_neighbours_fail_the_gate_even_when_cosines_pass() -> None:
    figures = GateFigures(100, 0.99999, 0.99999, 1e-3, 10, 0.9, 0.5)
    assert refusals(figures, PrecisionGate(min_neighbours=0.98))[0].startswith("only 90.0%")
    assert refusals(figures, PrecisionGate(min_neighbours=0.9)) == []


def test_a_sample_too_small_for_neighbours_still_checks_cosines() -> None:
    one = np.ones((1, 4), np.float32)
    figures = compare(one, one, top_k=10)
    assert figures.neighbours is None
    assert figures.top_k == 0
    with pytest.raises(ValueError, match="differently"):
        compare(one, np.ones((2, 4), np.float32), top_k=10)


@pytest.mark.parametrize(("windows", "top_k"), [(20, 50), (11, 10), (2, 10)])
def test_a_neighbour_check_that_cannot_fail_is_not_reported_as_kept(
    windows: int, top_k: int
) -> None:
    """With top_k + 1 windows or fewer every other window is a neighbour: the figure was
    100 % whatever the vectors ("100.0% of top-19 neighbours kept" for a top_k of 50)."""
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(windows, 16)).astype(np.float32)
    moved = rng.normal(size=(windows, 16)).astype(np.float32)  # nothing like the reference
    figures = compare(reference, moved, top_k)
    assert (figures.neighbours, figures.top_k, figures.neighbours_checked) == (None, 0, False)
    said = figures.describe()
    assert "neighbours kept" not in said
    assert f"cosine only: a top-k neighbour check is not possible on {windows} windows" in said
    assert not any("neighbours" in why for why in refusals(figures, PrecisionGate()))
    assert compare(reference[:1], moved[:1], top_k).describe().endswith("on 1 windows")
    wider = rng.normal(size=(top_k + 2, 16)).astype(np.float32)
    assert compare(wider, wider, top_k).neighbours_checked  # one window left out: it can fail


def test_a_recorded_vacuous_neighbour_figure_is_not_claimed() -> None:
    """A record written before such figures were left out still carries 100 %."""
    old = GateFigures(3, 0.99999, 0.99999, 1e-3, 2, 1.0, 1.0)
    assert not old.neighbours_checked
    assert "100.0%" not in old.describe()


def test_a_run_on_a_small_sample_says_it_checked_the_cosine_only() -> None:
    decision = decide("{use: auto, gate: {documents: 8}}", WITH_BF16)
    assert decision.chosen == "bfloat16"
    assert "cosine only: a top-k neighbour check is not possible on 8 windows" in (
        decision.describe()
    )
    assert "(cosine only" in decision.chosen_candidate.reasons[-1]


# -- the records the gate keeps --------------------------------------------------------------


def test_a_record_comes_back_and_a_tampered_one_is_ignored(records_dir: Path) -> None:
    figures = GateFigures(12, 0.99995, 0.99999, 1e-3, 10, 0.99, 0.9)
    key = records.record_key({"a": 1})
    path = records.store(records_dir, key, "bfloat16", figures)
    assert path is not None
    assert records.find(records_dir, key, "bfloat16") == figures
    assert records.find(records_dir, key, "float16") is None  # another candidate's
    data = json.loads(path.read_text())
    for tamper in (
        {**data, "figures": {**data["figures"], "min_cosine": "1"}},  # strict: no coercion
        {**data, "figures": {**data["figures"], "neighbours": 7.0}},  # out of range
        {**data, "extra": True},
        {**data, "key": "0" * 64},  # another pipeline's record moved here
        {**data, "figures": {**data["figures"], "max_abs": float("inf")}},  # not a figure
    ):
        path.write_text(json.dumps(tamper))
        assert records.find(records_dir, key, "bfloat16") is None
    path.write_text(" " * (records.RECORD_LIMIT + 1))
    assert records.find(records_dir, key, "bfloat16") is None


# -- negotiation -----------------------------------------------------------------------------


def test_float32_alone_needs_no_negotiation() -> None:
    decision = decide("float32", WITHOUT_BF16)
    assert decision.chosen == "float32"
    assert decision.mode == "explicit"


def test_auto_without_bfloat16_instructions_picks_float32_and_says_why(records_dir: Path) -> None:
    decision = decide("auto", WITHOUT_BF16)
    assert decision.chosen == "float32"
    refused = decision.candidates[0]
    assert (refused.name, refused.ok) == ("bfloat16", False)
    assert "no bfloat16 instructions" in refused.reasons[0]
    assert "bfloat16 refused" in decision.describe()
    assert not records_dir.exists()  # nothing was embedded to find that out


def test_auto_with_bfloat16_passes_the_gate_and_records_it(records_dir: Path) -> None:
    decision = decide("auto", WITH_BF16)
    assert decision.chosen == "bfloat16"
    figures = decision.chosen_candidate.figures
    assert figures is not None
    assert figures.windows == len(TEXTS)
    assert 0.9999 <= figures.min_cosine < 1.0  # computed in bfloat16 for real: not identical
    assert "first 40 documents" in decision.chosen_candidate.reasons[-1]
    assert len(list(records_dir.glob("*.json"))) == 1
    again = decide("auto", WITH_BF16)
    assert again.chosen_candidate.figures == figures
    assert "gate passed earlier" in again.chosen_candidate.reasons[-1]


def test_figures_read_from_a_record_say_so_and_where(records_dir: Path) -> None:
    """A record is a file anyone with the cache folder may have written: a run that trusts
    its figures says it did not measure them, and which file to delete to measure again."""
    measured = decide("auto", WITH_BF16)
    assert measured.chosen_candidate.recorded is None
    assert "bfloat16 (checked against float32: min cosine" in measured.describe()
    reused = decide("auto", WITH_BF16)
    (record,) = records_dir.glob("*.json")
    assert reused.chosen_candidate.recorded == str(record)
    said = reused.describe()
    assert said.startswith("bfloat16 (checked against float32 by an earlier run: min cosine")
    assert f"as recorded in {record}, which you may delete to check again" in said
    carried = PrecisionDecision.from_record(reused.record())  # as a worker rebuilds it
    assert carried.describe() == said


def test_another_seamline_code_measures_again(
    records_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every seamline distribution stays 0.1.0 while its code changes: an upgraded
    seamline reused the figures an older one measured. The code digest keys a record."""
    from seamline.core.precision import negotiate

    decide("auto", WITH_BF16)
    monkeypatch.setattr(negotiate, "code_digest", lambda: "0123456789abcdef", raising=False)
    upgraded = decide("auto", WITH_BF16)
    assert upgraded.chosen_candidate.recorded is None  # measured, not read back
    assert len(list(records_dir.glob("*.json"))) == 2


def test_a_record_that_is_not_a_regular_file_is_ignored_without_waiting(
    records_dir: Path,
) -> None:
    """A FIFO where the record would be: opening it must not wait for a writer."""
    import threading

    decide("auto", WITH_BF16)
    (record,) = records_dir.glob("*.json")
    record.unlink()
    os.mkfifo(record)
    decided: list[PrecisionDecision] = []
    worker = threading.Thread(target=lambda: decided.append(decide("auto", WITH_BF16)))
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # let the thread go: a writer that opens and closes ends its wait
        with open(record, "wb"):
            pass
        worker.join()
        pytest.fail("the run waited on a FIFO where the precision record was")
    assert decided[0].chosen_candidate.recorded is None, "measured again, not read"


def test_the_gate_embeds_its_sample_in_the_runs_longest_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One batch shape per precision, the run's own longest with full rows.

    Bucketed as an in-process caller's texts are, 38 short documents would be computed
    in the shortest bucket and a partly filled batch of two rows: shapes of the sample's
    own, each compiled in float32 and in the candidate (on a GPU, a second or more each)
    for a run that may never use them. The longest shape is the run's most used one."""
    shapes: list[tuple[int, int, str]] = []
    collate = ToyModel.collate

    def recording(self: ToyModel, examples: Any, batch_size: int, length: int) -> Any:
        shapes.append((batch_size, length, self.precision))
        return collate(self, examples, batch_size, length)

    monkeypatch.setattr(ToyModel, "collate", recording)
    registry = toy_registry()
    text = pipeline_text(
        "{use: auto, gate: {documents: 38}}",
        "{use: toy, with: {max_length: 64}}",
        "{batch_size: 4, buckets: [16, 32, 64]}",
    )
    decision = decide_precision(
        parse_pipeline(text, "p.yaml", registry), registry, hardware=WITH_BF16
    )
    assert decision.chosen == "bfloat16"
    figures = decision.chosen_candidate.figures
    assert figures is not None
    assert figures.windows == 38
    assert set(shapes) == {(4, 64, "float32"), (4, 64, "bfloat16")}
    assert len(shapes) == 2 * 10  # 38 documents in 10 batches of 4 rows, each precision


def test_the_longest_shape_embeds_as_the_fitted_ones_do() -> None:
    """The gate's sample in the run's longest shape gets the vectors a caller's texts get
    in fitted batches: padding and the rows around a text do not change its vector."""
    registry = toy_registry()
    text = pipeline_text(
        "float32", "{use: toy, with: {max_length: 64}}", "{batch_size: 4, buckets: [16, 32, 64]}"
    )
    side = encoder_side(parse_pipeline(text, "p.yaml", registry), registry, "p.yaml")
    vectors = {}
    for shapes in BATCH_POLICIES:
        with Embedder.from_resolved(side, registry, long_text="windows", shapes=shapes) as e:
            vectors[shapes] = np.concatenate(e.encode(TEXTS[:38]))
    np.testing.assert_allclose(vectors["longest"], vectors["fitted"], rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="shapes must be one of fitted, longest"):
        Embedder.from_resolved(side, registry, shapes="tallest")  # type: ignore[arg-type]


def test_a_new_version_of_an_installed_attention_is_checked_again(
    records_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record of one build of a kernel does not vouch for the next (issue 25).

    `attention: auto` picks per shape after the gate; a kernel's new version (a
    bfloat16 path, say) changes the figures, so it must change the key."""
    assert "first 40" in decide("auto", WITH_BF16).chosen_candidate.reasons[-1]
    pipeline, registry = resolved("auto")
    original = registry.get

    def rebuilt(kind: str, name: str) -> Any:
        info = original(kind, name)  # type: ignore[arg-type]
        return replace(info, version="1") if (kind, name) == ("attention", "native") else info

    monkeypatch.setattr(registry, "get", rebuilt)
    again = decide_precision(pipeline, registry, hardware=WITH_BF16)
    assert "first 40" in again.chosen_candidate.reasons[-1]
    assert len(list(records_dir.glob("*.json"))) == 2


def test_the_same_loader_section_over_other_documents_is_checked_again(
    tmp_path: Path, records_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two projects' pipelines both read ``root: docs``: the second took the first's
    figures ("checked against float32 by an earlier run") for a corpus never checked."""
    from seamline.components.loaders.text_files import TextFilesLoader

    text_files = ComponentInfo(
        "loader", "text-files", "x:TextFilesLoader", "tests", "0", "ok", "", TextFilesLoader, "1.0"
    )
    registry = Registry([*toy_registry().entries(), text_files])
    text = pipeline_text("auto").replace(
        f"{{use: list, with: {{texts: {TEXTS!r}}}}}", "{use: text-files, with: {root: docs}}"
    )
    for project, texts in (("a", TEXTS[:20]), ("b", TEXTS[20:])):
        (tmp_path / project / "docs").mkdir(parents=True)
        for i, body in enumerate(texts):
            (tmp_path / project / "docs" / f"{i:02}.txt").write_text(body)
    reasons = []
    for project in ("a", "b", "b"):
        monkeypatch.chdir(tmp_path / project)
        pipeline = parse_pipeline(text, "p.yaml", registry)
        decision = decide_precision(pipeline, registry, hardware=WITH_BF16)
        reasons.append(decision.chosen_candidate.reasons[-1])
    assert "first 20 documents" in reasons[0]
    assert "first 20 documents" in reasons[1], "b's documents are measured, not a's figures"
    assert "gate passed earlier" in reasons[2], "b's own record serves b again"
    assert len(list(records_dir.glob("*.json"))) == 2


def test_a_candidate_that_fails_the_gate_is_refused_with_its_figures() -> None:
    decision = decide("auto", WITH_BF16, "{use: toy, with: {bfloat16_error: 0.05}}")
    assert decision.chosen == "float32"
    refused = decision.candidates[0]
    assert refused.name == "bfloat16"
    assert not refused.ok
    assert refused.figures is not None
    assert refused.figures.min_cosine < 0.9999
    assert "below precision.gate.min_cosine" in refused.reasons[0]


def test_a_refusal_by_a_record_says_so_and_keeps_the_hardware_s_reason(
    records_dir: Path,
) -> None:
    """A second run refused bfloat16 with the first run's figures, in the same words as
    if it had measured them, and the candidate lost the hardware's reason."""
    model = "{use: toy, with: {bfloat16_error: 0.05}}"
    measured = decide("auto", WITH_BF16, model)
    assert measured.candidates[0].recorded is None
    assert "bfloat16 refused: min cosine" in measured.describe()
    reused = decide("auto", WITH_BF16, model)
    (record,) = records_dir.glob("*.json")
    refused = reused.candidates[0]
    assert refused.recorded == str(record)
    assert "below precision.gate.min_cosine" in refused.reasons[0]
    assert "bfloat16 instructions (avx512_bf16)" in refused.reasons[-1]
    said = reused.describe()
    assert said.startswith("float32 (bfloat16 refused by an earlier run's figures: min cosine")
    assert f"as recorded in {record}, which you may delete to check again" in said
    assert PrecisionDecision.from_record(reused.record()).describe() == said
    with pytest.raises(UserError, match=f"figures an earlier run recorded in {record}"):
        decide("[bfloat16]", WITH_BF16, model)


def test_stricter_thresholds_come_from_the_pipeline() -> None:
    strict = "{use: auto, gate: {min_cosine: 1.0, documents: 8}}"
    decision = decide(strict, WITH_BF16)
    assert decision.chosen == "float32"
    assert decision.candidates[0].figures is not None
    assert decision.candidates[0].figures.windows == 8


def test_an_explicit_precision_that_cannot_serve_fails_loudly() -> None:
    with pytest.raises(UserError, match="no bfloat16 instructions"):
        decide("bfloat16", WITHOUT_BF16)
    with pytest.raises(UserError, match=r"below precision\.gate\.min_cosine"):
        decide("[bfloat16]", WITH_BF16, "{use: toy, with: {bfloat16_error: 0.05}}")


def test_unverified_bfloat16_is_trusted_and_said_so(records_dir: Path) -> None:
    decision = decide("{use: bfloat16, verify: false}", WITH_BF16)
    assert decision.chosen == "bfloat16"
    assert not decision.verified
    assert "not checked against float32" in decision.describe()
    assert not records_dir.exists()


def test_a_model_that_offers_only_float32_is_not_asked_for_more() -> None:
    from seamline.contracts import Model
    from tests.core.toy import ToyModel

    class Float32Only(ToyModel):
        precisions = Model.precisions  # type: ignore[assignment]
        with_precision = Model.with_precision  # type: ignore[assignment]

    assert Float32Only(ToyModel.Config()).precisions() == ("float32",)
    with pytest.raises(ValueError, match="float32 only"):
        Float32Only(ToyModel.Config()).with_precision("bfloat16")


def test_explain_judges_without_embedding(records_dir: Path) -> None:
    pipeline, registry = resolved("auto")
    mode, candidates = preview_precision(pipeline, registry, hardware=WITH_BF16)
    assert mode == "auto"
    assert [c.name for c in candidates] == ["bfloat16", "float32"]
    assert "when the run starts" in candidates[0].reasons[-1]
    assert not records_dir.exists()
    decide_precision(pipeline, registry, hardware=WITH_BF16)  # leaves a record
    _, candidates = preview_precision(pipeline, registry, hardware=WITH_BF16)
    assert "gate passed earlier" in candidates[0].reasons[-1]


@pytest.mark.parametrize("precision", ["bfloat16", "auto"])
def test_explain_refuses_a_gate_with_no_documents_as_the_run_does(precision: str) -> None:
    """An empty input: explain said bfloat16 would be checked when the run started and
    planned bfloat16 tables; the run refused it (exit 2), or under auto computed float32."""
    registry = toy_registry()
    text = pipeline_text(precision).replace(repr(TEXTS), "[]")
    pipeline = parse_pipeline(text, "p.yaml", registry)
    _, candidates = preview_precision(pipeline, registry, hardware=WITH_BF16)
    assert (candidates[0].name, candidates[0].ok) == ("bfloat16", False)
    assert candidates[0].reasons == ("the input has no documents to check it on",)
    if precision == "auto":
        assert decide_precision(pipeline, registry, hardware=WITH_BF16).chosen == "float32"
        assert [c.name for c in candidates if c.ok] == ["float32"]
    else:
        with pytest.raises(UserError, match="no documents to check it on"):
            decide_precision(pipeline, registry, hardware=WITH_BF16)


# -- the pipeline file -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("bf16", "did you mean 'bfloat16'"),
        ("[bfloat16, bfloat16]", "names a precision twice"),
        ("[auto]", "'auto' is not a precision"),
        ("{use: auto, gate: {min_cosine: 1.5}}", "min_cosine"),
        ("{use: auto, gate: {documents: 1}}", "documents"),
    ],
)
def test_a_bad_precision_is_a_located_error(value: str, message: str) -> None:
    with pytest.raises(PipelineConfigError, match=message) as caught:
        resolved(value)
    assert "p.yaml:5:" in str(caught.value)


def test_set_precision_overrides_the_file() -> None:
    registry = toy_registry()
    pipeline = parse_pipeline(pipeline_text("float32"), "p.yaml", registry, ["precision=auto"])
    assert pipeline.spec.precision.names == ("bfloat16", "float32")


@pytest.mark.parametrize(
    "overrides",
    [("precision.verify=false",), ("precision=auto", "precision.verify=false")],
    ids=["file-short-form", "set-short-form"],
)
def test_set_a_key_inside_the_short_form(overrides: tuple[str, ...]) -> None:
    """``precision: auto`` is ``{use: auto}``: a ``--set`` of a key inside it adds to it
    (it was refused: "precision is a str, not a mapping")."""
    registry = toy_registry()
    pipeline = parse_pipeline(pipeline_text("auto"), "p.yaml", registry, list(overrides))
    assert pipeline.spec.precision.use == "auto"
    assert pipeline.spec.precision.verify is False
    assert pipeline.where(("precision", "verify")) == f"--set {overrides[-1]}"


def test_set_precision_keeps_the_file_s_gate() -> None:
    """``--set precision=bfloat16`` judged the candidate by the default gate, dropping the
    file's stricter ``min_cosine`` without a word; a mapping still replaces it all."""
    registry = toy_registry()
    text = pipeline_text("{use: auto, gate: {min_cosine: 0.99999}, verify: true}")
    kept = parse_pipeline(text, "p.yaml", registry, ["precision=bfloat16"])
    assert kept.spec.precision.use == "bfloat16"
    assert kept.spec.precision.gate.min_cosine == 0.99999
    assert kept.where(("precision", "use")) == "--set precision=bfloat16"
    assert kept.where(("precision", "gate", "min_cosine")).startswith("p.yaml:5:")
    listed = parse_pipeline(text, "p.yaml", registry, ["precision=[bfloat16, float32]"])
    assert listed.spec.precision.names == ("bfloat16", "float32")
    assert listed.spec.precision.gate.min_cosine == 0.99999
    replaced = parse_pipeline(text, "p.yaml", registry, ["precision={use: bfloat16}"])
    assert replaced.spec.precision.gate.min_cosine == 0.9999


def test_a_bad_short_form_is_still_placed_in_the_file_under_a_set_inside_it() -> None:
    registry = toy_registry()
    with pytest.raises(PipelineConfigError, match=r"p\.yaml:5:\d+: precision\.use"):
        parse_pipeline(pipeline_text("fastest"), "p.yaml", registry, ["precision.verify=false"])


# -- a run -----------------------------------------------------------------------------------


def _vectors() -> dict[str, np.ndarray]:
    return {record.doc_id: np.asarray(record.vector) for record in MemorySink.records}


def test_a_run_computes_in_the_chosen_precision_and_records_it() -> None:
    pipeline, registry = resolved("float32")
    Orchestrator(pipeline, registry).run()
    float32 = _vectors()
    MemorySink.reset()
    pipeline, registry = resolved("auto")
    decision = decide_precision(pipeline, registry, hardware=WITH_BF16)
    summary = Orchestrator(replace(pipeline, precision=decision), registry).run()
    bfloat16 = _vectors()
    assert float32.keys() == bfloat16.keys()
    assert any(not np.array_equal(float32[k], bfloat16[k]) for k in float32)  # really bf16
    assert summary.precision["chosen"] == "bfloat16"
    assert summary.provenance["precision"]["candidates"][0]["figures"]["windows"] == len(TEXTS)


def test_pipeline_run_negotiates_at_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Hardware, "detect", classmethod(lambda cls, environ=None: WITHOUT_BF16))
    registry = toy_registry()
    pipeline = Pipeline.from_dict(
        {
            "pipeline": "toy",
            "loader": {"use": "list", "with": {"texts": TEXTS}},
            "model": {"use": "toy"},
            "precision": "auto",
            "sink": {"use": "memory"},
        },
        registry=registry,
    )
    summary = pipeline.run()
    assert summary.precision["chosen"] == "float32"
    assert summary.precision["candidates"][0]["ok"] is False


def test_the_chosen_precision_decides_whether_a_run_may_resume() -> None:
    pipeline, registry = resolved("auto")
    loader = registry.create("loader", "list", pipeline.loader.config)
    float32 = run_inputs(pipeline.spec, loader.config, "float32")
    bfloat16 = run_inputs(pipeline.spec, loader.config, "bfloat16")
    assert float32["pipeline"]["precision"] != bfloat16["pipeline"]["precision"]
    assert {k: v for k, v in float32["pipeline"].items() if k != "precision"} == {
        k: v for k, v in bfloat16["pipeline"].items() if k != "precision"
    }


def test_a_resume_refused_for_the_negotiated_precision_says_so() -> None:
    """``precision: auto`` negotiated bfloat16, then float32 under
    $SEAMLINE_CPU_FEATURES_HIDDEN: the resume was refused for "the pipeline file's
    precision section" of a file nobody had changed."""
    from seamline.contracts.sink_kit._checkpoint import changed_inputs

    pipeline, registry = resolved("auto")
    loader = registry.create("loader", "list", pipeline.loader.config)
    bfloat16 = run_inputs(pipeline.spec, loader.config, "bfloat16")
    float32 = run_inputs(pipeline.spec, loader.config, "float32", "float32 (bfloat16 refused)")
    said = "; ".join(changed_inputs(bfloat16, float32))
    assert said == (
        "the precision the run computes in: 'bfloat16' then, 'float32' now (precision: auto "
        "is unchanged; it negotiated otherwise in this environment: float32 (bfloat16 refused))"
    )
    explicit, _ = resolved("float32")
    asked = run_inputs(explicit.spec, loader.config, "float32")
    said = "; ".join(changed_inputs(bfloat16, asked))
    assert "(precision: auto then, float32 now)" in said
    assert "section" not in said


def test_a_worker_in_another_process_computes_in_the_drivers_precision() -> None:
    pipeline, registry = resolved("auto")
    decision = decide_precision(pipeline, registry, hardware=WITH_BF16)
    factory = RemoteWorkerFactory.of(replace(pipeline, precision=decision), registry)
    worker = factory()
    try:
        assert worker.pipeline.precision == decision  # type: ignore[attr-defined]
        assert worker.orchestrator.model.describe()["precision"] == "bfloat16"  # type: ignore[attr-defined]
    finally:
        worker.close()


def test_an_emulated_precision_is_accepted_only_when_asked() -> None:
    decision = decide("{use: bfloat16, require_native: false}", WITHOUT_BF16)
    assert decision.chosen == "bfloat16"
    assert "require_native is false" in decision.chosen_candidate.reasons[0]
    assert decision.chosen_candidate.figures is not None  # and it still went through the gate


def test_a_manifest_names_a_known_precision_or_is_refused() -> None:
    """``seamline search`` embeds queries in the manifest's precision: an edited one is
    checked by the manifest's schema before anything acts on it."""
    from pydantic import ValidationError

    from seamline.contracts.manifest import Manifest

    assert Manifest.model_validate({}).precision == "float32"  # written before 1.3
    assert Manifest.model_validate({"precision": "bfloat16"}).precision == "bfloat16"
    for edited in ("float16", "__import__('os')", 16):
        with pytest.raises(ValidationError):
            Manifest.model_validate({"precision": edited})


def test_an_embedder_of_a_pipeline_computes_in_its_precision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``Embedder.from_pipeline`` negotiates as a run would: no quieter float32."""
    from seamline.core.embedder import Embedder

    monkeypatch.setattr(Hardware, "detect", classmethod(lambda cls, environ=None: WITH_BF16))
    path = tmp_path / "p.yaml"
    path.write_text(pipeline_text("auto"))
    with Embedder.from_pipeline(path, registry=toy_registry()) as embedder:
        assert embedder.precision == "bfloat16"
        assert embedder.encoder.model.describe()["precision"] == "bfloat16"
        assert embedder.encode("w1 w2").shape == (32,)


def test_an_embedders_gate_places_a_loader_refusal_and_says_why_it_read_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A bare UserError ("root 'build/corpus' does not exist"), with no place and no word
    # of why encoding texts read a corpus at all.
    from seamline.contracts import ConfigError
    from seamline.core.embedder import Embedder
    from tests.core.toy import ListLoader

    def refuses(self: ListLoader, **_: Any) -> Iterator[Loaded]:
        raise UserError("list loader: its texts are somewhere else")
        yield

    monkeypatch.setattr(Hardware, "detect", classmethod(lambda cls, environ=None: WITH_BF16))
    monkeypatch.setattr(ListLoader, "read", refuses)
    path = tmp_path / "p.yaml"
    path.write_text(pipeline_text("auto"))
    with pytest.raises(ConfigError) as refused:
        Embedder.from_pipeline(path, registry=toy_registry())
    assert str(refused.value) == (
        f"{path}:2:27: list loader: its texts are somewhere else; read for the precision gate, "
        "which embeds the loader's first documents to check a precision below float32 "
        "against float32"
    )
