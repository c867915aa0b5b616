"""A named reference that cannot serve the model's attention is the pipeline's error.

``reference: xla-sdpa`` with MPNet (whose attention adds a relative-position bias,
which xla-sdpa refuses): ``validate`` and ``explain`` said ok, and the run checked every
candidate against a reference that raised its own refusal, reported as each
candidate's "failed to compile", so the run blamed cpu-flash, native and blockwise in
turn and the hint named the wrong fix. The toy's ``refusing`` reference stands in for
xla-sdpa: ``supports()`` says no, and a call raises the contract's refusal.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest

from seamline.components.attention.native import NativeAttention
from seamline.contracts import AttentionSpec, Support, UnsupportedError, UserError
from seamline.core.attention.plan import explain
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry
from tests.core.toy import MemorySink, toy_registry, two_document_pipeline, with_attention


class RefusingReference(NativeAttention):
    name: ClassVar[str] = "refusing"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.no("it does not add the bias this model needs")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError("attention 'refusing' does not add the bias; use another")


def registry() -> Registry:
    return with_attention(toy_registry(), RefusingReference, "tests", "0")


def pipeline(attention: str, reg: Registry) -> Any:
    return two_document_pipeline(attention, reg)


REFUSAL = r"p\.yaml:4:\d+: attention\.reference 'refusing' cannot check this model's attention \("


@pytest.mark.parametrize(
    "attention",
    [
        "{use: native, reference: refusing}",
        "{use: auto, reference: refusing}",
        "{use: native, reference: refusing, verify: false, shadow: {every: 1}}",
    ],
    ids=["explicit", "auto", "shadow-only"],
)
def test_the_run_names_the_reference_not_the_candidates(attention: str) -> None:
    MemorySink.reset()
    reg = registry()
    with pytest.raises(UserError) as refused:
        Orchestrator(pipeline(attention, reg), reg).run()
    message = str(refused.value)
    assert re.match(REFUSAL, message), message
    assert "it does not add the bias this model needs; name a reference that serves it (here: " in (
        message
    )
    assert "failed to compile" not in message
    assert MemorySink.closed == [False]


def test_explain_refuses_it_as_the_run_does() -> None:
    reg = registry()
    with pytest.raises(UserError, match="^" + REFUSAL):
        explain(pipeline("{use: native, reference: refusing}", reg), reg)


def test_a_reference_that_serves_is_no_problem() -> None:
    MemorySink.reset()
    reg = registry()
    Orchestrator(pipeline("{use: long-only, reference: native}", reg), reg).run()
    assert len({record.doc_id for record in MemorySink.records}) == 2
