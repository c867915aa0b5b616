"""The reference attention beside the chosen one, at run time: its compiled step per batch
shape, made on first use, and what it is asked.

:class:`~seamline.core.attention.steps.CompiledSteps` asks it two things about a batch
the chosen kernel computed: whether the reference's outputs are non-finite too (then
the input is to blame, not the kernel), and, every Nth batch in shadow mode, how far the
kernel's outputs are from the reference's (a ``seamline.shadow`` span and a
``ShadowCompared`` event; a breach is an ``Alert``). Deciding what follows, demoting the
kernel, stays with the steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from seamline.contracts import Alert, Batch, Event, ShadowCompared
from seamline.core.attention.candidates import AttentionCandidates
from seamline.core.attention.compile import Step, StepCompiler
from seamline.core.attention.planner import AttentionDecision
from seamline.core.attention.verification import compare_outputs
from seamline.core.telemetry import ATTENTION_NAME, tracer


class ReferenceSteps:
    """The reference's compiled step for each batch shape, and the comparisons made with it."""

    def __init__(
        self,
        candidates: AttentionCandidates,
        compiler: StepCompiler,
        report: Callable[[Event], None],
    ) -> None:
        self.candidates = candidates
        self._compiler = compiler
        self._report = report
        self._steps: dict[tuple[int, int], Step] = {}

    def release(self) -> None:
        """Drop every compiled reference step (see :meth:`CompiledSteps.release`)."""
        self._steps.clear()

    def serves(self, step: Step) -> bool:
        """Whether there is a reference other than the attention ``step`` runs."""
        reference = self.candidates.reference
        return reference is not None and step.decision.chosen != reference.name

    def step(self, params: Any, batch: Batch, step: Step) -> Step:
        """The reference's compiled step for the shape of ``step`` (made once per shape)."""
        reference = self.candidates.reference
        assert reference is not None
        key = (batch.batch_size, batch.length)
        made = self._steps.get(key)
        if made is None:
            decision = AttentionDecision(step.decision.signature, reference.name, "reference")
            made = self._compiler.compile(params, batch, reference, decision, step.specs)
            self._steps[key] = made
        return made

    def also_non_finite(self, params: Any, batch: Batch, step: Step) -> bool:
        """Whether the reference makes this batch's outputs non-finite too (then it is the input).

        Without a reference, or when the step is the reference, non-finite outputs
        cannot be blamed on the kernel.
        """
        if not self.serves(step):
            return True
        _, finite = self.step(params, batch, step).call(params, batch.arrays)
        return not bool(finite)

    def breach(
        self, params: Any, batch: Batch, step: Step, outputs: np.ndarray, index: int
    ) -> tuple[str, np.ndarray] | None:
        """Compare the ``index``-th batch's outputs with the reference's (shadow mode): None
        when they agree, else why they do not and the reference's outputs, which replace
        the kernel's."""
        reference = self.candidates.reference
        assert reference is not None
        with tracer().start_as_current_span(
            "seamline.shadow", attributes={ATTENTION_NAME: step.decision.chosen}
        ) as span:
            expected = np.asarray(self.step(params, batch, step).call(params, batch.arrays)[0])
            verdict = compare_outputs(outputs, expected, batch.example_rows, step.specs)
            span.set_attributes(
                {"seamline.max_error": verdict.max_error, "seamline.ok": verdict.ok}
            )
            self._report(
                ShadowCompared(
                    step.decision.signature,
                    step.decision.chosen,
                    reference.name,
                    index,
                    verdict.max_error,
                    verdict.tolerance,
                    verdict.ok,
                )
            )
        if verdict.ok:
            return None
        reason = f"shadow comparison: differs from {reference.name!r} by {verdict.max_error:.3g}"
        self._report(
            Alert(
                "seamline.shadow",
                f"attention {step.decision.chosen!r} demoted for {step.decision.signature}: "
                f"{reason}",
                {"max_error": verdict.max_error, "tolerance": verdict.tolerance},
            )
        )
        return reason, expected
