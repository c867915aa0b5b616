"""Compiled model calls per batch shape, each with the attention negotiated for it.

The orchestrator asks :class:`CompiledSteps` for the step of a batch and runs it;
everything between — probing the model's attention shapes, planning, verifying the
chosen kernel against the reference on first use, compiling, falling back when
either fails, and shadow-checking outputs in production — happens here, and is
reported as events through the ``report`` callback the orchestrator gives (which
delivers them to monitors and to the current span).

:meth:`CompiledSteps.launch` starts a batch's step without waiting for it (the run
keeps one batch on the device while it writes the one before), and
:meth:`CompiledSteps.collect` waits for it and guards the call: a kernel that raises
while running a compiled shape, or makes the model's outputs NaN or infinite where the
reference's are not, is demoted for that shape and the batch is run again on the
next candidate. Non-finite outputs are found by one ``isfinite(...).all()``
reduction fused into the compiled step and returned beside the outputs as a flag,
so the check costs no host-side scan of the outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from opentelemetry import trace

from seamline.contracts import (
    Attention,
    AttentionChosen,
    Batch,
    ContractViolation,
    Event,
    Fallback,
    Model,
    SeamlineError,
    UserError,
    Verified,
)
from seamline.contracts.logs import get_logger
from seamline.core.attention.candidates import AttentionCandidates
from seamline.core.attention.checked import AttentionBrokeContract
from seamline.core.attention.compile import (
    Step,
    StepCompiler,
    check_jit_enabled,
    own_numerics,
)
from seamline.core.attention.planner import AttentionDecision, SpecKey, brief
from seamline.core.attention.probe import attention_specs
from seamline.core.attention.reference import ReferenceSteps
from seamline.core.attention.tuning import TuningEntry
from seamline.core.attention.verification import verify
from seamline.core.config import AttentionMode
from seamline.core.devices import DataParallel
from seamline.core.exhaustion import exhausted
from seamline.core.seams import CallStart, mark_failure
from seamline.core.telemetry import (
    ATTENTION_NAME,
    ATTENTION_REASON,
    ATTENTION_REFUSED,
    BATCH_LENGTH,
    tracer,
)

log = get_logger("seamline.core")

Report = Callable[[Event], None]
"""Where events go: the orchestrator delivers them to monitors and the current span."""

Around = Callable[["Step", CallStart], contextlib.AbstractContextManager[trace.Span]]
"""What :meth:`CompiledSteps.collect` wraps the wait for each call of a step in (the model's
``apply`` seam), given when the call began."""

CALL_FAULT_EVENT = "seamline.attention.call_failed"
"""The span event on the batch's ``seamline.model.apply`` span when its kernel failed."""


class AttentionCallFailed(SeamlineError):
    """The attention failed while running a compiled shape, and ``on_failure`` is ``raise``.

    Not a ``UserError``: the kernel failed, so a run stops as when any component's
    call fails (a shard reports it as ``ShardFailed``, naming the attention).
    """


@contextlib.contextmanager
def _no_span(_step: Step, _begun: CallStart) -> Iterator[trace.Span]:
    yield trace.get_current_span()


@dataclass(frozen=True, slots=True)
class Launched:
    """A batch whose step was called on the device and not yet waited for."""

    batch: Batch
    step: Step
    begun: CallStart
    result: Any
    """The call's device arrays ``(outputs, finite)``; None when the call raised."""
    error: Exception | None = None


class CompiledSteps:
    """Plans, verifies, compiles and shadow-checks the model call of each batch shape."""

    def __init__(
        self,
        model: Model[Any],
        candidates: AttentionCandidates,
        report: Report,
        parallel: DataParallel | None = None,
    ) -> None:
        self.model = model
        self.parallel = parallel
        """Several local devices: steps are compiled to split each batch's rows over them."""
        self.candidates = candidates
        self.planner = candidates.planner(on_entry=_timed)
        self._report = report
        self._fallback = candidates.settings.on_failure == "fallback"
        self._steps: dict[tuple[int, int], Step] = {}
        self._compiler = StepCompiler(model, candidates, report, parallel)
        self._reference = ReferenceSteps(candidates, self._compiler, report)
        self._verified: set[tuple[SpecKey, str]] = set()
        self.batches = 0
        """Batches checked so far (the shadow cadence counts them)."""

    @property
    def compilations(self) -> int:
        """Shapes compiled and in use (a shape recompiled after a demotion counts once)."""
        return len(self._steps)

    @property
    def decisions(self) -> list[AttentionDecision]:
        return self.planner.decisions

    @property
    def served(self) -> dict[str, str]:
        """Shape signature → the attention implementation that serves it (so far)."""
        return {decision.signature: decision.chosen for decision in self.planner.decisions}

    def release(self) -> None:
        """Drop every compiled step, the reference's too: each holds its executable (and
        XLA's buffers for it) for as long as it is referenced. For an owner that is done
        with the model for good (a closed ``Embedder``); a later batch compiles again."""
        self._steps.clear()
        self._reference.release()

    def in_use(self) -> list[Step]:
        """The compiled step of every batch shape seen so far."""
        return list(self._steps.values())

    def compiled(self, batch: Batch) -> bool:
        """Whether this batch's shape has its step already (else :meth:`step` compiles it)."""
        return (batch.batch_size, batch.length) in self._steps

    def step(self, params: Any, batch: Batch) -> Step:
        """The compiled call for this batch's shape: planned, verified and compiled once.

        A candidate that disagrees with the reference, or fails to compile, is
        demoted for this shape and the next one is tried (unless ``on_failure:
        raise``); when no candidate is left the planner raises with every refusal.
        Running out of memory or open files is no candidate's failure: it demotes
        nothing and stops the run (``ResourceExhausted``, :mod:`seamline.core.exhaustion`).
        """
        key = (batch.batch_size, batch.length)
        step = self._steps.get(key)
        if step is not None:
            return step
        with own_numerics():  # the host's promotion rules are for its own code
            return self._negotiated(params, batch, key)

    def _negotiated(self, params: Any, batch: Batch, key: tuple[int, int]) -> Step:
        """:meth:`step` for a shape not compiled yet: probe, plan, verify, compile."""
        specs = tuple(attention_specs(self.model, params, batch.arrays))
        failed: tuple[str, str] | None = None  # (implementation, reason) that fell through
        while True:
            decision = self._plan(batch, specs)
            if failed is not None:
                self._fell_back(failed[0], decision.chosen, failed[1], decision.signature)
            attention = self.planner.implementation(decision.chosen)
            cause: Exception | None = None  # what it raised: every candidate may raise it
            try:
                # Verification traces and compiles the kernel too, so either may fail here.
                problem = self._verification_problem(attention, specs, decision.signature)
                if problem is None:
                    step = self._compiler.compile(params, batch, attention, decision, specs)
                    self._steps[key] = step
                    return step
            except AttentionBrokeContract as err:
                if not self._fallback:
                    raise  # the kernel's output broke the contract for this shape
                problem = f"broke the contract: {err}"
            except (ContractViolation, UserError):
                raise  # a bug in the model, or the pipeline's: not a shape the kernel cannot serve
            except Exception as err:
                # Out of memory or open files: the machine's limit, not the kernel's fault.
                _stop_if_exhausted(err, "compiling", batch, decision.chosen)
                if not self._fallback:
                    raise
                problem, cause = f"failed to compile: {brief(err)}", err
            self.planner.demote(specs, decision.chosen, problem, cause)
            failed = (decision.chosen, problem)

    def launch(
        self, params: Any, batch: Batch, begin: Callable[[], CallStart] = CallStart.now
    ) -> Launched:
        """Start the batch's step on the device and return without waiting for it.

        The step is compiled first if its shape is new (not part of the call: ``begin``
        marks the call's start after it). JAX dispatches the call asynchronously, so
        the host can write the previous batch while the device computes this one. An
        error the call raises at once is kept for :meth:`collect`, which treats it as
        one raised while running.
        """
        check_jit_enabled()  # else every kernel fails alike, and none is to blame
        step = self.step(params, batch)
        begun = begin()
        try:
            return Launched(batch, step, begun, step.call(params, batch.arrays))
        except ContractViolation:
            raise
        except Exception as err:
            return Launched(batch, step, begun, None, err)

    def collect(
        self,
        params: Any,
        launched: Launched,
        around: Around = _no_span,
        begin: Callable[[], CallStart] = CallStart.now,
    ) -> tuple[Step, np.ndarray]:
        """A launched batch's outputs, and the step that made them, with call-time faults isolated.

        Waiting for the outputs runs inside ``around(step, begun)``, whose span starts
        at the launch. A kernel that raised while running, or whose outputs are NaN or
        infinite where the reference's are not, is demoted for this shape (a
        ``Fallback`` event, a span event on the call's span, a warning) and the batch
        is run again on the next candidate; with ``on_failure: raise`` the run stops
        instead (:class:`AttentionCallFailed`). Outputs the reference makes non-finite
        too are the model's, not the kernel's: they are returned, and the kernel keeps
        its shape. A batch launched on a step that was demoted before it was collected
        (a fault or a shadow comparison on the batch before it) is not trusted: it is
        run again on the step that replaced it.
        """
        batch = launched.batch
        key = (batch.batch_size, batch.length)
        while True:
            step = launched.step
            if self._steps.get(key) is not step:
                launched = self.launch(params, batch, begin)
                continue
            with around(step, launched.begun) as span:
                fault, outputs, cause = self._outcome(params, launched)
                if fault is None:
                    self.planner.ran(step.specs)
                    return step, outputs
                chosen = step.decision.chosen
                span.add_event(
                    CALL_FAULT_EVENT,
                    {
                        ATTENTION_NAME: chosen,
                        "seamline.signature": step.decision.signature,
                        "seamline.reason": fault,
                    },
                )
                if not self._fallback:
                    error = AttentionCallFailed(
                        f"attention {chosen!r} {fault} for {step.decision.signature}, and "
                        "on_failure is 'raise', so the run stopped (attention.on_failure: "
                        "fallback would have tried the next candidate)"
                    )
                    info = self.candidates.infos.get(chosen)
                    mark_failure(error, "attention", chosen, "call", info)
                    raise error
            self.planner.demote(step.specs, chosen, fault, cause)
            del self._steps[key]
            replacement = self.step(params, batch).decision.chosen
            self._fell_back(chosen, replacement, fault, step.decision.signature)
            launched = self.launch(params, batch, begin)

    def _outcome(
        self, params: Any, launched: Launched
    ) -> tuple[str | None, np.ndarray, Exception | None]:
        """``(fault, outputs, raised)`` of a launched call, waited for: fault is None, or why
        the kernel is to blame; raised is the exception the call raised, if it did."""
        batch, step = launched.batch, launched.step
        error = launched.error
        if error is None:
            try:
                # One fetch of both waits for the device, so a span around this covers it.
                values, finite = jax.device_get(launched.result)
                outputs = np.asarray(values)
            except ContractViolation:
                raise
            except Exception as err:
                error = err
        if error is not None:
            _stop_if_exhausted(error, "running", batch, step.decision.chosen)
            return f"failed while running: {brief(error)}", np.empty(0), error
        if bool(finite) or self._reference.also_non_finite(params, batch, step):
            return None, outputs, None
        return "returned NaN or infinity where the reference does not", outputs, None

    def shadow(self, params: Any, batch: Batch, step: Step, outputs: np.ndarray) -> np.ndarray:
        """Every Nth batch, run the reference too; on a breach, demote and keep its outputs."""
        self.batches += 1
        every = self.candidates.shadow_every
        if not every or not self._reference.serves(step) or (self.batches - 1) % every:
            return outputs
        self.candidates.check_reference(step.specs)
        breach = self._reference.breach(params, batch, step, outputs, self.batches)
        if breach is None:
            return outputs
        reason, expected = breach
        log.debug(
            "attention demoted by shadow comparison", chosen=step.decision.chosen, reason=reason
        )
        self.planner.demote(step.specs, step.decision.chosen, reason)
        del self._steps[(batch.batch_size, batch.length)]
        return expected

    # -- the parts of a step ----------------------------------------------------------------

    def _plan(self, batch: Batch, specs: SpecKey) -> AttentionDecision:
        with tracer().start_as_current_span(
            "seamline.plan", attributes={BATCH_LENGTH: batch.length}
        ) as span:
            decision = self.planner.choose(specs)
            span.set_attributes(
                {
                    ATTENTION_NAME: decision.chosen,
                    ATTENTION_REASON: decision.reason,
                    ATTENTION_REFUSED: [refusal.text() for refusal in decision.refusals],
                }
            )
        self._report(
            AttentionChosen(decision.signature, decision.chosen, decision.reason, decision.rejected)
        )
        # Monitors (the log monitor among them) report it; this line is for debugging.
        log.debug(
            "attention chosen",
            signature=decision.signature,
            chosen=decision.chosen,
            reason=decision.reason,
            refused={refusal.candidate: list(refusal.reasons) for refusal in decision.refusals},
        )
        return decision

    def _verification_problem(
        self, attention: Attention[Any], specs: SpecKey, signature: str
    ) -> str | None:
        """Why ``attention`` may not serve ``specs`` by the reference's measure, or None."""
        reference = self.candidates.reference
        if not self.candidates.verifies or reference is None or attention is reference:
            return None
        if (specs, attention.name) in self._verified:
            return None
        self.candidates.check_reference(specs)
        with tracer().start_as_current_span(
            "seamline.verify",
            attributes={
                **self._compiler.attributes_of(attention),
                ATTENTION_NAME: attention.name,
                "seamline.signature": signature,
            },
        ) as span:
            verdict = verify(attention, reference, specs)
            span.set_attributes(
                {"seamline.max_error": verdict.max_error, "seamline.ok": verdict.ok}
            )
            self._report(
                Verified(
                    signature,
                    attention.name,
                    reference.name,
                    verdict.max_error,
                    verdict.tolerance,
                    verdict.ok,
                )
            )
        if verdict.ok:
            self._verified.add((specs, attention.name))
            return None
        return (
            f"differs from the reference {reference.name!r} by {verdict.max_error:.3g} "
            f"(tolerance {verdict.tolerance:g})"
        )

    def _fell_back(self, failed: str, replacement: str, reason: str, signature: str) -> None:
        """Report the demotion, and warn: the pipeline asked for ``failed`` first and gets
        another kernel for this shape (once per candidate and shape, as demotions are)."""
        self._report(Fallback("attention", failed, replacement, reason))
        log.warning(
            fell_back_line(failed, replacement, reason, signature, self.candidates.mode),
            failed=failed,
            replacement=replacement,
            reason=reason,
            signature=signature,
        )


def fell_back_line(
    failed: str, replacement: str, reason: str, signature: str, mode: AttentionMode
) -> str:
    """The warning for a candidate demoted for a shape: which, where, why, and the fix.

    Once a debug line (``attention fell back``): a kernel the user listed first that
    differed from the reference by 4.39 was passed over, and the run printed a plain
    ``done`` with no word that another kernel served."""
    leave_out = (
        "list the candidates to use in attention.use without it"
        if mode is AttentionMode.AUTO
        else "remove it from attention.use"
    )
    return (
        f"attention {failed!r} was passed over for shape {signature}: it {reason}; "
        f"{replacement!r} serves that shape instead. Fix {failed!r} (`seamline check "
        f"attention:{failed}` runs its conformance checks), or {leave_out}"
    )


def _timed(entry: TuningEntry, cached: bool) -> None:
    """``select: measure`` used timings: say which, and where they came from."""
    log.info(
        "attention timings",
        signature=entry.signature,
        source="tuning cache" if cached else "measured now",
        milliseconds={n: round(t.median * 1e3, 4) for n, t in entry.timings.items()},
        key=entry.key,
    )


def _stop_if_exhausted(error: Exception, doing: str, batch: Batch, chosen: str) -> None:
    """Raise :class:`ResourceExhausted` when ``error`` is the machine running out of memory
    or open files: every candidate would fail the same way, so none is demoted for it."""
    where = (
        f"{doing} batches of {batch.batch_size} sequences of {batch.length} tokens "
        f"with attention {chosen!r}"
    )
    stop = exhausted(error, where, brief(error, limit=200))
    if stop is not None:
        raise stop from error
