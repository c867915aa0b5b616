"""A ``supports()`` that answers with a bool, not a ``Support``, is a refusal naming why.

``return spec.q_len <= 512`` is an easy mistake for a third party: ``explain`` raised
``AttributeError: 'bool' object has no attribute 'reasons'`` as a traceback, and a run
failed "in the pipeline", naming neither the attention nor its distribution.
"""

from __future__ import annotations

from typing import Any

import pytest

from seamline.contracts import AttentionChosen
from seamline.contracts.testing._attention_cases import ATTENTION_CASES
from seamline.contracts.testing.attention import AttentionContract
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, NeverAttention, RecordingMonitor, toy_registry

SAID = (
    "supports() returned bool, not a Support: the contract asks for Support.yes() or "
    "Support.no('reason', ...)"
)


@pytest.fixture
def answers_a_bool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NeverAttention, "supports", lambda self, spec: True)


@pytest.mark.usefixtures("answers_a_bool")
def test_a_run_passes_over_it_and_says_why() -> None:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    registry = toy_registry()
    text = (
        "pipeline: p\nloader: {use: list, with: {texts: ['a b', 'c d e']}}\n"
        "model: {use: toy}\nattention: {use: [never, native]}\n"
        "monitors: [{use: recording}]\nsink: {use: memory}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", registry), registry).run()
    chosen = [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]
    assert chosen
    assert {e.chosen for e in chosen} == {"native"}
    assert all(e.rejected["never"] == (SAID,) for e in chosen)
    assert len(MemorySink.records) == 2


@pytest.mark.usefixtures("answers_a_bool")
def test_the_conformance_suite_says_what_to_return() -> None:
    attention: Any = NeverAttention(NeverAttention.Config())
    with pytest.raises(AssertionError, match=r"'never'.supports\(\) returned bool, not a Supp"):
        AttentionContract.support_for(attention, ATTENTION_CASES["plain-f32"])
