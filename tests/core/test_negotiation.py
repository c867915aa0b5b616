"""Negotiation beyond supports(): per-shape priority, verification, compile fallback, shadow."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
import structlog

from seamline.components.attention.native import NativeAttention
from seamline.contracts import (
    Alert,
    AttentionChosen,
    AttentionSpec,
    BatchDone,
    Fallback,
    ShadowCompared,
    Support,
    UnsupportedError,
    Verified,
)
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry

TEXTS = [" ".join(["w"] * n) for n in range(1, 9)]  # buckets 4 and 8


@pytest.fixture(autouse=True)
def _clean() -> None:
    MemorySink.reset()
    RecordingMonitor.events.clear()


def run(attention: str, texts: list[str] = TEXTS) -> dict[str, np.ndarray]:
    registry = toy_registry()
    text = (
        "pipeline: negotiation\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "monitors: [{use: recording}]\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    Orchestrator(parse_pipeline(text, "n.yaml", registry), registry).run()
    return {r.doc_id: r.vector for r in MemorySink.records}


def events(kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in RecordingMonitor.events if isinstance(e, kind)]


def test_auto_orders_per_shape_by_priority() -> None:
    run("{use: auto}")
    chosen = {e.signature.split("x")[1]: e.chosen for e in events(AttentionChosen)}
    assert chosen == {"Tq4": "native", "Tq8": "long-only"}


def test_wrong_numbers_are_caught_on_first_use_and_fall_back() -> None:
    reference = run("{use: native}")
    MemorySink.reset()
    RecordingMonitor.events.clear()
    outputs = run("{use: [off-by-ten, native]}")
    verified = events(Verified)
    assert verified
    assert all(not v.ok and v.implementation == "off-by-ten" for v in verified)
    assert all(0.01 < v.max_error < 1.0 for v in verified)
    fallbacks = events(Fallback)
    assert {(f.failed, f.replacement) for f in fallbacks} == {("off-by-ten", "native")}
    assert "differs from the reference 'native'" in fallbacks[0].reason
    for doc_id, vector in reference.items():
        np.testing.assert_allclose(outputs[doc_id], vector, atol=1e-6)


def test_a_candidate_rejected_by_verification_is_a_warning_once_per_shape() -> None:
    """It was a debug line: a user listing a kernel first got another, and a plain 'done'."""
    texts = TEXTS * 3  # several batches of each shape
    with structlog.testing.capture_logs() as logs:
        run("{use: [off-by-ten, native]}", texts)
    warned = [e for e in logs if e["log_level"] == "warning" and "passed over" in e["event"]]
    rejected = {v.signature for v in events(Verified) if not v.ok}
    assert len(events(BatchDone)) > len(rejected) == 2
    assert sorted(e["signature"] for e in warned) == sorted(rejected)  # once per shape
    for entry in warned:
        assert entry["event"].startswith(
            f"attention 'off-by-ten' was passed over for shape {entry['signature']}: it "
            "differs from the reference 'native' by "
        )
        assert "'native' serves that shape instead" in entry["event"]
        assert entry["event"].endswith("or remove it from attention.use")


def test_an_explicit_choice_that_fails_verification_stops_the_run() -> None:
    with pytest.raises(
        UnsupportedError, match=r"'off-by-ten' cannot serve .* differs from the reference"
    ):
        run("{use: off-by-ten}")


def test_verification_can_be_turned_off() -> None:
    outputs = run("{use: off-by-ten, verify: false}")
    reference = run("{use: native}")
    assert not np.allclose(outputs["d5"], reference["d5"], atol=1e-3)


def test_verification_with_a_reference_that_is_not_usable_is_refused_not_skipped() -> None:
    """A third party registering 'native' too put the reference in conflict: verification,
    on by default, then checked nothing, and a kernel that lies ran unverified, exit 0."""
    from dataclasses import replace

    from seamline.contracts import ConfigError

    clash = "registered by tests and by clash 1.0; neither is used"
    infos = [
        replace(info, status="conflict", reason=clash) if info.name == "native" else info
        for info in toy_registry().entries()
    ]
    text = (
        "pipeline: negotiation\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "attention: {use: off-by-ten}\nsink: {use: memory}\n"
    )
    with pytest.raises(ConfigError, match=r"n\.yaml:4:12: attention\.verify checks .*"
                       r"reference 'native' \(from tests\), which is in conflict here: "
                       r"registered by tests and by clash") as refused:  # fmt: skip
        parse_pipeline(text, "n.yaml", Registry(infos))
    assert "attention.verify: false to run unverified" in str(refused.value)
    assert "uninstall one of them, or trust only" in str(refused.value)
    assert "trust: {distributions: [tests, ...]}" in str(refused.value)  # the fix, not "fix that"
    unverified = text.replace("{use: off-by-ten}", "{use: off-by-ten, verify: false}")
    assert parse_pipeline(unverified, "n.yaml", Registry(infos)).attention.reference is None


def test_an_unusable_reference_of_the_default_attention_is_placed_at_the_pipeline_name() -> None:
    """With no attention section, the error was placed at ``1:1`` and began
    "attention.verify checks ...", a setting the file does not have."""
    from dataclasses import replace

    from seamline.contracts import ConfigError

    infos = [
        replace(info, status="conflict", reason="name also registered by clash")
        if info.name == "native"
        else info
        for info in toy_registry().entries()
    ]
    text = (
        "pipeline: negotiation\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "sink: {use: memory}\n"
    )
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(text, "n.yaml", Registry(infos))
    assert str(refused.value).startswith(
        "n.yaml:1:11: the default attention (auto, verified) checks the chosen attention "
        "against the reference 'native' (from tests), which is in conflict here: "
    )


def test_a_kernel_that_does_not_compile_for_a_shape_is_demoted_for_that_shape_only() -> None:
    run("{use: [uncompilable, native]}")
    chosen = {e.signature.split("x")[1]: e.chosen for e in events(AttentionChosen)}
    # Length 4 compiles; 8 falls back.
    assert chosen["Tq4"] == "uncompilable"
    fallbacks = events(Fallback)
    assert {f.failed for f in fallbacks} == {"uncompilable"}
    assert "failed to compile: NotImplementedError: no lowering for length 8" in fallbacks[0].reason


def test_on_failure_raise_turns_fallback_off() -> None:
    with pytest.raises(NotImplementedError, match="no lowering"):
        run("{use: [uncompilable, native], on_failure: raise}")


def test_shadow_mode_catches_a_drift_demotes_and_keeps_the_reference_outputs() -> None:
    reference = run("{use: native}")
    MemorySink.reset()
    RecordingMonitor.events.clear()
    outputs = run("{use: [off-by-ten, native], verify: false, shadow: {every: 1}}")
    compared = events(ShadowCompared)
    assert compared
    assert not compared[0].ok
    assert events(Alert)
    assert "demoted" in events(Alert)[0].message
    # Breached batches publish the reference's outputs; later batches use native.
    for doc_id, vector in reference.items():
        np.testing.assert_allclose(outputs[doc_id], vector, atol=1e-6)


def test_a_batch_launched_before_its_kernel_was_demoted_is_computed_again() -> None:
    """The run launches each batch before it writes the one before (``run.in_flight: 1``),
    so when a shadow comparison demotes the kernel, the next batch of that shape is already
    computed by it. Those outputs are not trusted: the batch runs again on the replacement.
    (Every second batch is shadowed, so nothing else would catch the second.)"""
    texts = [" ".join(["w"] * (1 + n % 3)) for n in range(16)]  # four batches of length 4
    reference = run("{use: native}", texts)
    MemorySink.reset()
    RecordingMonitor.events.clear()
    outputs = run("{use: [off-by-ten, native], verify: false, shadow: {every: 2}}", texts)
    compared = events(ShadowCompared)
    assert [c.ok for c in compared] == [False], "the first batch is shadowed and breaches"
    assert len(events(Alert)) == 1
    assert outputs.keys() == reference.keys()
    for doc_id, vector in reference.items():
        np.testing.assert_allclose(outputs[doc_id], vector, atol=1e-6, err_msg=doc_id)


def test_shadow_of_a_good_kernel_records_agreement() -> None:
    run("{use: [long-only, native], shadow: {every: 2}}")
    compared = events(ShadowCompared)
    assert compared
    assert all(c.ok and c.max_error <= c.tolerance for c in compared)
    assert not events(Alert)


class SilentRefusalAttention(NativeAttention):
    """Says no without saying why: ``Support(False, ())``, past ``Support.no``'s check."""

    name: ClassVar[str] = "silent-no"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False
    auto_priority: ClassVar[int] = 100  # auto would try it first

    def supports(self, spec: AttentionSpec) -> Support:
        return Support(False, ())


def _with_silent_refusal() -> Registry:
    cls = SilentRefusalAttention
    silent = ComponentInfo(
        cls.kind, cls.name, f"{cls.__module__}:{cls.__name__}", "tests", "0", "ok", "", cls, "1.0"
    )
    return Registry([*toy_registry().entries(), silent])


@pytest.mark.parametrize("attention", ["{use: [silent-no, native]}", "{use: auto}"])
def test_a_refusal_without_a_reason_is_still_a_refusal(attention: str) -> None:
    # A kernel whose supports() answers no with no reason must not be taken for a yes.
    registry = _with_silent_refusal()
    text = (
        "pipeline: negotiation\n"
        f"loader: {{use: list, with: {{texts: {TEXTS[:3]!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "monitors: [{use: recording}]\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "n.yaml", registry), registry).run()
    (chosen,) = events(AttentionChosen)
    assert chosen.chosen == "native"
    assert chosen.rejected["silent-no"] == ("refused without a reason",)


def test_an_explicit_kernel_that_refuses_without_a_reason_fails_saying_so() -> None:
    registry = _with_silent_refusal()
    text = (
        "pipeline: negotiation\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "attention: {use: silent-no}\nsink: {use: memory}\nrun: {batch_size: 4, buckets: [4]}\n"
    )
    with pytest.raises(UnsupportedError, match="silent-no: refused without a reason"):
        Orchestrator(parse_pipeline(text, "n.yaml", registry), registry).run()
