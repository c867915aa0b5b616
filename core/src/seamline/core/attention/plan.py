"""The plan of a pipeline, without running it: which attention serves each shape, and why.

``explain`` builds the candidates through the same factory a run uses
(:func:`~seamline.core.attention.candidates.build_candidates`), asks the model for
its parameter shapes (no weights are read when the model offers
``abstract_params``), probes the attention calls of one batch per length bucket,
and runs the same negotiation — every candidate's ``supports()`` in the same
order, and with ``select: measure`` the same tuning cache (read, never measured)
— so the answer is the run's answer, short of what only running can reveal
(verification against the reference, compile failures, shadow comparisons).

``tune`` measures what ``select: measure`` would measure on first use, for every
bucket, and fills the tuning cache, so that runs pay nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from seamline.contracts import UnsupportedError
from seamline.core.attention.candidates import AttentionCandidates, build_candidates
from seamline.core.attention.planner import (
    AttentionPlanner,
    MeasuredTimes,
    NoAttentionError,
    Refusal,
    SpecKey,
    signature_of,
    spec_key,
)
from seamline.core.attention.probe import attention_specs
from seamline.core.attention.tuning import (
    MeasuredRanking,
    TuningCache,
    TuningEntry,
)
from seamline.core.batching import batch_shapes
from seamline.core.config import AttentionMode, ResolvedPipeline, Selection, build_model
from seamline.core.registry import Registry
from seamline.core.stops import raise_kept_stop


class Verdict(StrEnum):
    """What ``explain`` says of one candidate for one bucket."""

    CHOSEN = "chosen"
    CANNOT_SERVE = "cannot serve"
    COULD_SERVE = "could serve"
    LEFT_OUT = "left out"
    """An ``auto`` candidate that failed to build: never asked, for any shape."""


@dataclass(frozen=True, slots=True)
class CandidateVerdict:
    """One candidate's verdict for one bucket, and why: a row of ``explain``'s table."""

    candidate: str
    verdict: Verdict
    why: str
    measured: float | None = None
    """Its median seconds in the tuning cache (``select: measure``), if measured."""


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
    measured: MeasuredTimes | None = None
    """With ``select: measure``: the cached times the order came from (None: not tuned)."""
    left_out: Mapping[str, str] = field(default_factory=dict)
    """``auto`` candidates that failed to build, and why (:attr:`AttentionCandidates.left_out`)."""
    set_aside: tuple[str, ...] = ()
    """With ``select: measure`` and nothing measured for these versions: the JAX and jaxlib
    versions of the timings the cache holds for this shape, set aside (``jax 0.10.2,
    jaxlib 0.10.2``): "not measured yet" alone read as if none were ever taken."""

    def verdicts(self) -> tuple[CandidateVerdict, ...]:
        """Every candidate in the order they were tried, with its verdict, then those left out.

        The rule lives here rather than in whatever prints it, so that the table on a
        terminal and any other form of the plan say the same: the chosen one with the
        planner's reason; one with reasons against it cannot serve; any other could
        serve, and was passed over either as slower (it has a measured time) or because
        the chosen one came first. An installed one whose constructor raised is last,
        ``left out`` with why: it was missing from the table, and only a log line said so.
        """
        reasons = {r.candidate: r.reasons for r in (*self.refusals, *self.spare)}
        measured = self.measured.seconds if self.measured is not None else {}
        rows = []
        for name in self.order:
            if name == self.chosen:
                verdict, why = Verdict.CHOSEN, self.reason
            elif reasons.get(name):
                verdict, why = Verdict.CANNOT_SERVE, "; ".join(reasons[name])
            elif name in measured:
                verdict, why = Verdict.COULD_SERVE, "slower, as measured"
            else:
                verdict, why = Verdict.COULD_SERVE, f"{self.chosen} comes first"
            rows.append(CandidateVerdict(name, verdict, why, measured.get(name)))
        rows.extend(CandidateVerdict(n, Verdict.LEFT_OUT, w) for n, w in self.left_out.items())
        return tuple(rows)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run of the pipeline would do at the attention seam."""

    pipeline: str
    mode: AttentionMode
    select: Selection
    reference: str | None
    verify: bool
    on_failure: str
    shadow_every: int
    require_conformance: bool
    weights_loaded: bool
    buckets: list[BucketPlan]
    left_out: Mapping[str, str] = field(default_factory=dict)
    """``auto`` candidates that failed to build, and why; each bucket lists them too."""

    def unserved(self) -> UnsupportedError | None:
        """The error a run would stop on when a bucket has no candidate that serves it
        (``explain`` exited 2 there without an ``error:`` line, its JSON ``errors: []``),
        naming the first such bucket and counting the others; None when all are served."""
        refused = [bucket for bucket in self.buckets if bucket.chosen is None]
        if not refused:
            return None
        first = NoAttentionError(refused[0].signature, refused[0].refusals, self.mode)
        if len(refused) == 1:
            return first
        return UnsupportedError(  # the count first: the fix stays the message's last clause
            f"{len(refused)} shapes cannot be served, the first: {first}", first.reasons
        )


@dataclass(frozen=True, slots=True)
class BucketTuning:
    """What ``tune`` found for one bucket."""

    length: int
    batch_size: int
    signature: str
    entry: TuningEntry | None
    """None when no candidate serves the bucket."""
    cached: bool
    refusals: tuple[Refusal, ...] = ()


@dataclass(frozen=True, slots=True)
class _Probed:
    """A pipeline's candidates and the attention specs of one batch per length bucket."""

    candidates: AttentionCandidates
    weights_loaded: bool
    buckets: list[tuple[int, int, SpecKey]]
    """(length, batch size, specs) per bucket."""


@contextlib.contextmanager
def _probed(resolved: ResolvedPipeline, registry: Registry, precision: str) -> Iterator[_Probed]:
    """Build the model in ``precision`` and the candidates, probe every bucket; close them
    all afterwards. The attention specs carry the dtype the model hands the attention in
    that precision, as a run's do."""
    created = build_model(resolved.model, registry, resolved.overrides_under(("model", "with")))
    model = created.with_precision(precision)
    candidates = build_candidates(resolved.attention, registry)
    try:
        params = model.abstract_params()
        weights_loaded = params is None
        if params is None:
            params = model.load()
        shapes = batch_shapes(resolved.spec.run, model.max_length)
        buckets = []
        for length in shapes.buckets:
            rows = shapes.rows(length)
            arrays = model.collate([], rows, length).arrays
            buckets.append((length, rows, spec_key(attention_specs(model, params, arrays))))
        yield _Probed(candidates, weights_loaded, buckets)
    finally:
        candidates.close()
        model.close()
        if created is not model:
            created.close()


def explain(resolved: ResolvedPipeline, registry: Registry, precision: str | None = None) -> Plan:
    """Plan every bucket of ``resolved`` as a run would, without running it.

    ``precision`` is the one the run is expected to compute in (``seamline explain``
    takes it from the precision preview), else the pipeline's decided one (float32
    before a decision).
    """
    plans = []
    with _probed(resolved, registry, precision or resolved.chosen_precision) as probed:
        candidates = probed.candidates
        planner = candidates.planner(measure=False)
        for length, batch_size, specs in probed.buckets:
            if candidates.verifies or candidates.shadow_every:  # as a run refuses it
                candidates.check_reference(specs)
            bucket = _bucket_plan(planner, length, batch_size, specs)
            ranking = planner.ranking
            aside = (
                ranking.set_aside.get(bucket.signature, [])
                if isinstance(ranking, MeasuredRanking)
                else []
            )
            plans.append(replace(bucket, left_out=candidates.left_out, set_aside=tuple(aside)))
    reference = candidates.reference.name if candidates.reference is not None else None
    settings = resolved.attention.settings
    return Plan(
        pipeline=resolved.spec.pipeline,
        mode=resolved.attention.mode,
        select=settings.select,
        reference=reference,
        verify=candidates.verifies,
        on_failure=settings.on_failure,
        shadow_every=candidates.shadow_every,
        require_conformance=settings.require_conformance,
        weights_loaded=probed.weights_loaded,
        buckets=plans,
        left_out=dict(candidates.left_out),
    )


def _bucket_plan(
    planner: AttentionPlanner, length: int, batch_size: int, specs: SpecKey
) -> BucketPlan:
    order = planner.names(specs)
    try:
        decision = planner.choose(specs)
    except NoAttentionError as err:
        return BucketPlan(length, batch_size, err.signature, order, None, str(err), err.refusals)
    after = decision.order[decision.order.index(decision.chosen) + 1 :]
    spare = tuple(
        Refusal(name, planner.reasons_against(planner.implementation(name), specs))
        for name in after
        if name not in decision.rejected
    )
    return BucketPlan(
        length,
        batch_size,
        signature_of(specs),
        decision.order or order,
        decision.chosen,
        decision.reason,
        decision.refusals,
        spare,
        decision.measured,
    )


def tune(
    resolved: ResolvedPipeline,
    registry: Registry,
    cache: TuningCache | None = None,
    *,
    again: bool = False,
) -> list[BucketTuning]:
    """Time every serving candidate on every bucket's shapes and keep the times in the cache.

    What is already cached is reported, not measured again, unless ``again``; then the
    old entry is kept until the new one replaces it (it was deleted first, and a tune
    stopped by Ctrl-C lost the times a ``select: measure`` run would have read).
    Works for any attention mode: the timings a later ``select: measure`` run reads
    are those of the candidates that serve, whatever the pipeline selects today. The
    shapes are those of the precision ``resolved`` has decided (``seamline tune``
    negotiates it first), so that a bfloat16 run finds timings of bfloat16 shapes.
    Writing the cache is the point, so a folder that cannot be written raises
    :class:`~.tuning.TuningCacheUnwritable` (a user error), where a run only warns.
    A Ctrl-C that Python dropped (:mod:`seamline.core.stops`, while ``seamline tune``
    keeps such stops) is raised before each bucket: the tune went on measuring for
    minutes and exited 0.
    """
    cache = cache if cache is not None else TuningCache()
    cache.check_writable()  # before minutes of measuring, not after the first bucket's
    results = []
    with _probed(resolved, registry, resolved.chosen_precision) as probed:
        candidates = probed.candidates
        ranking = MeasuredRanking(candidates.infos, cache, must_save=True, again=again)
        planner = candidates.planner(measure=False)
        for length, batch_size, specs in probed.buckets:
            raise_kept_stop()
            refusals = list(planner.unusable)
            serving = []
            for candidate in planner.ordered(specs):
                reasons = planner.reasons_against(candidate, specs)
                if reasons:
                    refusals.append(Refusal(candidate.name, reasons))
                else:
                    serving.append(candidate)
            found = ranking.entry(specs, serving)
            entry, cached = found if found is not None else (None, False)
            signature = signature_of(specs)
            results.append(
                BucketTuning(length, batch_size, signature, entry, cached, tuple(refusals))
            )
    return results
