"""The plan of a pipeline, without running it: which attention serves each shape, and why.

``explain`` builds the components, asks the model for its parameter shapes (no
weights are read when the model offers ``abstract_params``), probes the attention
calls of one batch per length bucket, and runs the same negotiation the
orchestrator runs — every candidate's ``supports()`` in the same order — so the
answer is the run's answer, short of what only running can reveal (verification
against the reference, compile failures, shadow comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seamline.contracts import Attention, Model, UnsupportedError
from seamline.core.batching import resolve_buckets
from seamline.core.config import ResolvedPipeline
from seamline.core.planner import AttentionPlanner
from seamline.core.probe import attention_specs
from seamline.core.registry import Registry
from seamline.core.trust import untrusted_candidates


@dataclass(frozen=True, slots=True)
class BucketPlan:
    """The attention decision for one shape bucket."""

    length: int
    batch_size: int
    signature: str
    order: tuple[str, ...]
    chosen: str | None
    reason: str
    rejected: dict[str, tuple[str, ...]] = field(default_factory=dict)
    spare: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Candidates after the chosen one: an empty tuple if they too could serve, else why not."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run of the pipeline would do at the attention seam."""

    pipeline: str
    mode: str
    reference: str | None
    verify: bool
    on_failure: str
    shadow_every: int
    require_conformance: bool
    weights_loaded: bool
    buckets: list[BucketPlan]


def explain(resolved: ResolvedPipeline, registry: Registry) -> Plan:
    """Plan every bucket of ``resolved`` as a run would, without running it."""
    model: Model[Any] = registry.create("model", resolved.model.name, resolved.model.config)  # type: ignore[assignment]
    candidates: list[Attention[Any]] = [
        registry.create("attention", a.name, a.config)  # type: ignore[misc]
        for a in resolved.attention
    ]
    planner = AttentionPlanner(
        candidates,
        explicit=resolved.attention_explicit,
        auto=resolved.attention_auto,
        untrusted=untrusted_candidates(candidates, resolved.spec.attention.require_conformance),
    )
    params = model.abstract_params()
    weights_loaded = params is None
    if params is None:
        params = model.load()
    batch_size = resolved.spec.run.batch_size
    plans = []
    for length in resolve_buckets(resolved.spec.run.buckets, model.max_length):
        arrays = model.collate([], batch_size, length).arrays
        specs = attention_specs(model, params, arrays)
        signature = " + ".join(spec.signature() for spec in specs)
        order = tuple(c.name for c in planner.ordered(specs))
        try:
            decision = planner.choose(specs)
        except UnsupportedError as err:
            rejected = dict(_split(reason) for reason in err.reasons)
            plans.append(BucketPlan(length, batch_size, signature, order, None, str(err), rejected))
            continue
        after = order[order.index(decision.chosen) + 1 :]
        spare = {
            name: planner.reasons_against(planner.implementation(name), specs) for name in after
        }
        plans.append(
            BucketPlan(
                length,
                batch_size,
                signature,
                decision.order or order,
                decision.chosen,
                decision.reason,
                decision.rejected,
                spare,
            )
        )
    settings = resolved.spec.attention
    mode = (
        "explicit"
        if resolved.attention_explicit
        else ("auto" if resolved.attention_auto else "list")
    )
    reference = resolved.attention_reference.name if resolved.attention_reference else None
    return Plan(
        pipeline=resolved.spec.pipeline,
        mode=mode,
        reference=reference,
        verify=settings.verify and reference is not None,
        on_failure=settings.on_failure,
        shadow_every=settings.shadow.every if settings.shadow else 0,
        require_conformance=settings.require_conformance,
        weights_loaded=weights_loaded,
        buckets=plans,
    )


def _split(reason: str) -> tuple[str, tuple[str, ...]]:
    name, _, text = reason.partition(": ")
    return name, (text,)
