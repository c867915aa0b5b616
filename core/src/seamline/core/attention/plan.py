"""The plan of a pipeline, without running it: which attention serves each shape, and why.

``explain`` builds the candidates through the same factory a run uses
(:func:`~seamline.core.attention.candidates.build_candidates`), asks the model for
its parameter shapes (no weights are read when the model offers
``abstract_params``), probes the attention calls of one batch per length bucket,
and runs the same negotiation — every candidate's ``supports()`` in the same
order — so the answer is the run's answer, short of what only running can reveal
(verification against the reference, compile failures, shadow comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from seamline.contracts import Model
from seamline.core.attention.candidates import build_candidates
from seamline.core.attention.planner import NoAttentionError, Refusal, signature_of
from seamline.core.attention.probe import attention_specs
from seamline.core.batching import resolve_buckets
from seamline.core.config import AttentionMode, ResolvedPipeline
from seamline.core.registry import Registry


@dataclass(frozen=True, slots=True)
class BucketPlan:
    """The attention decision for one shape bucket."""

    length: int
    batch_size: int
    signature: str
    order: tuple[str, ...]
    chosen: str | None
    reason: str
    refusals: tuple[Refusal, ...] = ()
    """The candidates before the chosen one (all of them when none can serve), and why not."""
    spare: tuple[Refusal, ...] = field(default=())
    """Candidates after the chosen one: empty reasons if they too could serve, else why not."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run of the pipeline would do at the attention seam."""

    pipeline: str
    mode: AttentionMode
    reference: str | None
    verify: bool
    on_failure: str
    shadow_every: int
    require_conformance: bool
    weights_loaded: bool
    buckets: list[BucketPlan]


def explain(resolved: ResolvedPipeline, registry: Registry) -> Plan:
    """Plan every bucket of ``resolved`` as a run would, without running it."""
    model = cast(Model[Any], registry.create("model", resolved.model.name, resolved.model.config))
    candidates = build_candidates(resolved.attention, registry)
    planner = candidates.planner()
    params = model.abstract_params()
    weights_loaded = params is None
    if params is None:
        params = model.load()
    batch_size = resolved.spec.run.batch_size
    plans = []
    try:
        for length in resolve_buckets(resolved.spec.run.buckets, model.max_length):
            arrays = model.collate([], batch_size, length).arrays
            specs = attention_specs(model, params, arrays)
            order = tuple(c.name for c in planner.ordered(specs))
            try:
                decision = planner.choose(specs)
            except NoAttentionError as err:
                plans.append(
                    BucketPlan(
                        length, batch_size, err.signature, order, None, str(err), err.refusals
                    )
                )
                continue
            after = order[order.index(decision.chosen) + 1 :]
            spare = tuple(
                Refusal(name, planner.reasons_against(planner.implementation(name), specs))
                for name in after
            )
            plans.append(
                BucketPlan(
                    length,
                    batch_size,
                    signature_of(specs),
                    decision.order or order,
                    decision.chosen,
                    decision.reason,
                    decision.refusals,
                    spare,
                )
            )
    finally:
        candidates.close()
        model.close()
    settings = resolved.attention.settings
    return Plan(
        pipeline=resolved.spec.pipeline,
        mode=resolved.attention.mode,
        reference=candidates.reference.name if candidates.reference is not None else None,
        verify=candidates.verifies,
        on_failure=settings.on_failure,
        shadow_every=candidates.shadow_every,
        require_conformance=settings.require_conformance,
        weights_loaded=weights_loaded,
        buckets=plans,
    )
