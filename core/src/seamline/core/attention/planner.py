"""Choosing the attention for a shape: negotiation, not force.

Every candidate is asked ``supports(spec)`` for the actual platform, dtype and
shapes. A single explicit choice that cannot serve is an error carrying its
refusals; ``auto`` or a preference list takes the first candidate that can serve
and records why each one before it could not. ``auto`` orders the candidates per
shape by their own ``priority(spec)`` (:mod:`.order`), so one run may use different
kernels for different lengths. A candidate that fails later for a shape — it does
not compile, or it disagrees with the reference — is *demoted* for that shape
only, with the reason, and the next candidate takes over. With
``require_conformance`` a candidate without a passing conformance record for the
versions installed now is refused for every shape, with the reason
(:mod:`.trust`).

A refusal is data, :class:`Refusal` (candidate, reasons), from ``supports()`` to the
decision, the error, the span, the log line and ``explain``: nothing downstream
takes a message apart again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from seamline.contracts import Attention, AttentionSpec, Support, UnsupportedError
from seamline.core.attention.asking import AskTimeout, asked
from seamline.core.attention.order import Ranked, ranked
from seamline.core.config import AttentionMode
from seamline.core.exhaustion import exhausted

SpecKey = tuple[AttentionSpec, ...]
"""The distinct attention calls of one compiled model call: what a decision is about."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one candidate may not serve a shape signature."""

    candidate: str
    reasons: tuple[str, ...]

    def text(self) -> str:
        """For people: ``name: reason; reason``."""
        return f"{self.candidate}: {'; '.join(self.reasons)}"


@dataclass(frozen=True, slots=True)
class MeasuredTimes:
    """How long each serving candidate took on a shape signature (``select: measure``)."""

    seconds: Mapping[str, float]
    """Candidate name -> median seconds of its attention calls for one model call."""
    cached: bool
    """True when read from the tuning cache, False when measured in this process."""
    key: str
    """The tuning cache key."""


class Ranking(Protocol):
    """What orders serving candidates by measurement (see :mod:`.tuning`)."""

    def times(self, specs: SpecKey, serving: Sequence[Attention[Any]]) -> MeasuredTimes | None:
        """The serving candidates' times, or None when nothing is (or may be) measured."""
        ...


@dataclass(frozen=True, slots=True)
class AttentionDecision:
    """Which implementation serves a shape signature, why, and why not the ones before it."""

    signature: str
    chosen: str
    reason: str
    refusals: tuple[Refusal, ...] = ()
    """The candidates tried before ``chosen``, in order, each with its reasons (with
    ``select: measure``: every candidate that does not serve)."""
    order: tuple[str, ...] = ()
    """The candidates in the order they were considered."""
    measured: MeasuredTimes | None = field(default=None)
    """With ``select: measure``: the times the order came from."""

    @property
    def rejected(self) -> dict[str, tuple[str, ...]]:
        """``refusals`` as a mapping (the shape the ``AttentionChosen`` event carries)."""
        return {refusal.candidate: refusal.reasons for refusal in self.refusals}


class NoAttentionError(UnsupportedError):
    """No candidate can serve a shape signature; carries every refusal as data."""

    def __init__(self, signature: str, refusals: tuple[Refusal, ...], mode: AttentionMode) -> None:
        self.signature = signature
        self.refusals = refusals
        details = "; ".join(refusal.text() for refusal in refusals)
        if mode is AttentionMode.EXPLICIT:
            message = (
                f"attention {refusals[0].candidate!r} cannot serve {signature}: {details}. "
                "Choose another implementation, a preference list, or 'auto'"
            )
        else:
            message = f"no attention candidate can serve {signature}: {details}"
        super().__init__(message, tuple(refusal.text() for refusal in refusals))


_REASONS = {
    (AttentionMode.EXPLICIT, True): "explicitly configured",
    (AttentionMode.EXPLICIT, False): "explicitly configured",
    (AttentionMode.LIST, True): "first candidate, and it supports this shape",
    (AttentionMode.LIST, False): "first candidate that serves this shape; earlier ones cannot",
    (AttentionMode.AUTO, True): "highest priority for this shape, and it supports it",
    (AttentionMode.AUTO, False): "highest priority among those that support this shape",
}
"""Why the chosen candidate was chosen, by mode and by whether it was the first one tried."""


class AttentionPlanner:
    """Picks an attention implementation per set of :class:`AttentionSpec`."""

    def __init__(
        self,
        candidates: Sequence[Attention[Any]],
        mode: AttentionMode,
        untrusted: Mapping[str, str] | None = None,
        ranking: Ranking | None = None,
        unusable: Mapping[str, str] | None = None,
    ) -> None:
        if not candidates:
            raise UnsupportedError("no attention implementation is installed or configured")
        self.candidates = list(candidates)
        self.mode = mode
        self.untrusted = dict(untrusted or {})
        """Candidate name -> why it is not trusted (refused for every shape)."""
        self.ranking = ranking
        """With ``select: measure``: orders the serving candidates by measured time."""
        self.unusable = tuple(Refusal(name, (why,)) for name, why in (unusable or {}).items())
        """Installed attentions that cannot be built at all (broken, refused, in conflict):
        under ``auto`` each is refused for every shape, tried first, so that the decision,
        its span, the log and ``explain`` name it (a plugin broken by a JAX upgrade had
        dropped out of ``auto`` in silence)."""
        self._decisions: dict[SpecKey, AttentionDecision] = {}
        self._demoted: dict[SpecKey, dict[str, str]] = {}
        self._raised: dict[SpecKey, list[tuple[str, Exception]]] = {}
        """Per shape, the candidates demoted for an exception since it last ran, each with
        its exception (:meth:`_raise_if_not_theirs`)."""
        self._ranked: dict[AttentionSpec, Ranked] = {}
        """``auto``'s order per spec: each ``priority()`` is asked once, under a time limit."""

    def implementation(self, name: str) -> Attention[Any]:
        return next(c for c in self.candidates if c.name == name)

    def choose(self, specs: Sequence[AttentionSpec]) -> AttentionDecision:
        """One implementation that serves every spec of a model call (negotiated once, cached).

        A model may call its attention with several shapes (self- and cross-attention);
        one compiled function uses one implementation, so it must serve them all.
        """
        key = spec_key(specs)
        decision = self._decisions.get(key)
        if decision is None:
            try:
                decision = self._negotiate(key)
            except NoAttentionError:
                self._raise_if_not_theirs(key)
                raise
            self._decisions[key] = decision
        return decision

    def demote(
        self,
        specs: Sequence[AttentionSpec],
        name: str,
        reason: str,
        cause: Exception | None = None,
    ) -> None:
        """Rule ``name`` out for these specs (only), so the next ``choose`` moves on.

        ``cause``: the exception it failed with, when it raised (compiling or running);
        kept until the shape runs (:meth:`ran`), in case every candidate raises it."""
        key = spec_key(specs)
        self._demoted.setdefault(key, {})[name] = reason
        self._decisions.pop(key, None)
        if cause is not None:
            self._raised.setdefault(key, []).append((name, cause))

    def ran(self, specs: Sequence[AttentionSpec]) -> None:
        """The shape's step ran: the exceptions candidates raised before were theirs.

        Called after every batch: nothing to look up unless a candidate raised."""
        if self._raised:
            self._raised.pop(spec_key(specs), None)

    def _raise_if_not_theirs(self, key: SpecKey) -> None:
        """Every candidate left failed on ``key`` the same way: raise that error, demoting none.

        Two or more kernels raising one error (type and message, a host callback's traceback
        aside: :func:`brief`) for one shape is not their fault but the host's: a
        ``jax.transfer_guard("disallow")`` or ``jax.disable_jit()`` around one call dropped
        every kernel for that shape for the Embedder's life, and later calls, the setting
        gone, still raised ``NoAttentionError`` with its stale reason. The demotions are
        undone, so the next call of the shape tries them again. A transfer guard's refusal
        is the host's whatever array it names, and even from one candidate: each kernel
        trips it on an array of its own (``disallow_explicit`` refused cpu-flash's
        ``int32[2,16]`` and blockwise's ``float32[2,16,12,32]``), which no two messages
        then shared (:func:`host_cause`).
        """
        raised = self._raised.pop(key, [])
        causes = {host_cause(e) for _, e in raised}
        guarded = causes == {TRANSFER_GUARD}
        if not raised or (len(raised) < 2 and not guarded) or len(causes) > 1:
            return
        demoted = self._demoted.get(key, {})
        for name, _ in raised:
            demoted.pop(name, None)
        names = ", ".join(repr(name) for name, _ in raised)
        cause = raised[0][1]
        cause.add_note(
            f"seamline: every attention candidate tried for {signature_of(key)} ({names}) "
            "failed with this error, so it is not a kernel's fault: none is dropped for the "
            "shape, and the next call tries them again"
        )
        raise cause

    @property
    def decisions(self) -> list[AttentionDecision]:
        return list(self._decisions.values())

    def names(self, specs: Sequence[AttentionSpec]) -> tuple[str, ...]:
        """Every candidate's name in the order they are tried, the unusable ones first."""
        return (*(r.candidate for r in self.unusable), *(c.name for c in self.ordered(specs)))

    def ordered(self, specs: Sequence[AttentionSpec]) -> list[Attention[Any]]:
        """Candidates in the order they are tried for ``specs``."""
        if self.mode is not AttentionMode.AUTO:
            return list(self.candidates)
        return list(self._ranking(specs[0]).order)

    def _ranking(self, spec: AttentionSpec) -> Ranked:
        found = self._ranked.get(spec)
        if found is None:
            found = self._ranked[spec] = ranked(self.candidates, spec)
        return found

    def _negotiate(self, key: SpecKey) -> AttentionDecision:
        if self.ranking is not None:
            return self._negotiate_measured(key, self.ranking)
        signature = signature_of(key)
        demoted = self._demoted.get(key, {})
        refusals: list[Refusal] = list(self.unusable)
        order = self.ordered(key)
        names = self.names(key)
        for candidate in order:
            if candidate.name in demoted:
                refusals.append(Refusal(candidate.name, (demoted[candidate.name],)))
                continue
            reasons = self.reasons_against(candidate, key)
            if reasons:
                refusals.append(Refusal(candidate.name, reasons))
                continue
            reason = _REASONS[(self.mode, len(refusals) == len(self.unusable))]
            return AttentionDecision(signature, candidate.name, reason, tuple(refusals), names)
        raise NoAttentionError(signature, tuple(refusals), self.mode)

    def _negotiate_measured(self, key: SpecKey, ranking: Ranking) -> AttentionDecision:
        """The fastest serving candidate by measurement; the static order where none is.

        Every candidate is asked ``supports()`` first: the ones that serve are timed
        (or their times read from the tuning cache) as one set, so the cache key does
        not depend on what a run later demotes. A demoted candidate keeps its time
        but is passed over, and the next fastest serves.
        """
        signature = signature_of(key)
        demoted = self._demoted.get(key, {})
        order = self.ordered(key)
        refused = {c.name: self.reasons_against(c, key) for c in order}
        serving = [c for c in order if not refused[c.name]]
        measured = ranking.times(key, serving)
        if measured is not None:
            position = {c.name: i for i, c in enumerate(order)}
            order = sorted(
                order,
                key=lambda c: (
                    (0, measured.seconds[c.name], c.name)
                    if c.name in measured.seconds
                    else (1, float(position[c.name]), c.name)
                ),
            )
        refusals = [
            *self.unusable,
            *(Refusal(c.name, refused[c.name]) for c in order if refused[c.name]),
        ]
        passed_over = []
        for candidate in order:
            if refused[candidate.name]:
                continue
            if candidate.name in demoted:
                passed_over.append(Refusal(candidate.name, (demoted[candidate.name],)))
                continue
            reason = _measured_reason(candidate.name, measured, passed_over, self.mode)
            return AttentionDecision(
                signature,
                candidate.name,
                reason,
                (*passed_over, *refusals),
                (*(r.candidate for r in self.unusable), *(c.name for c in order)),
                measured,
            )
        raise NoAttentionError(signature, (*passed_over, *refusals), self.mode)

    def reasons_against(
        self, candidate: Attention[Any], specs: Sequence[AttentionSpec]
    ) -> tuple[str, ...]:
        """Why ``candidate`` may not serve ``specs``: distrust first, then (under ``auto``) a
        ``priority()`` that did not answer in time, then its own refusals."""
        distrust = self.untrusted.get(candidate.name)
        if distrust is not None:
            return (f"conformance required: {distrust}",)
        if self.mode is AttentionMode.AUTO:
            unheard = self._ranking(specs[0]).unheard.get(candidate.name)
            if unheard is not None:
                return (unheard,)
        return refusals(candidate, tuple(specs))


def _measured_reason(
    chosen: str, measured: MeasuredTimes | None, passed_over: list[Refusal], mode: AttentionMode
) -> str:
    if measured is None or chosen not in measured.seconds:
        why = "nothing measured for this shape, so by the static order"
        return f"{why}: {_REASONS[(mode, not passed_over)]}"
    others = ", ".join(
        f"{name} {seconds * 1e3:.3g} ms"
        for name, seconds in sorted(measured.seconds.items(), key=lambda item: item[1])
        if name != chosen
    )
    source = "from the tuning cache" if measured.cached else "measured now"
    faster = " among those not demoted" if passed_over else ""
    return (
        f"fastest measured{faster}: {measured.seconds[chosen] * 1e3:.3g} ms"
        + (f" (vs {others})" if others else "")
        + f", {source}"
    )


TRACEBACK = "Traceback (most recent call last):"


TRANSFER_GUARD = "a JAX transfer guard refused a transfer"


def host_cause(error: BaseException) -> str:
    """What ``error`` says went wrong, for comparing candidates' failures: a JAX transfer
    guard's refusal (``Disallowed host-to-device transfer: aval=...``, ``Disallowed
    explicit ...``) is one cause whatever array it names; any other error is its
    :func:`brief`."""
    text = str(error)
    if "Disallowed" in text and "transfer" in text:
        return TRANSFER_GUARD
    return brief(error)


def brief(error: BaseException, limit: int = 400) -> str:
    """``Type: message`` on one line: a host callback's traceback (which XLA puts in its
    message) shrinks to the exception it ended in, and the whole to ``limit`` characters."""
    text = str(error)
    if TRACEBACK in text:
        head, _, tail = text.partition(TRACEBACK)
        last = [line for line in tail.splitlines() if line.strip()][-1:] or [""]
        text = f"{head.strip()} {last[0].strip()}"
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(error).__name__}: {text}"


def spec_key(specs: Sequence[AttentionSpec]) -> SpecKey:
    """The distinct specs in call order (what a decision, a demotion or a cache entry is for)."""
    key = tuple(dict.fromkeys(specs))
    if not key:
        raise ValueError("the model made no attention call to plan for")
    return key


def signature_of(specs: Sequence[AttentionSpec]) -> str:
    """The shape signature of a model call, for logs, spans and events."""
    return " + ".join(spec.signature() for spec in specs)


def refusals(candidate: Attention[Any], specs: SpecKey) -> tuple[str, ...]:
    """Every reason ``candidate`` gives for not serving one of ``specs`` (empty: it serves all)."""
    reasons: list[str] = []
    for spec in specs:
        try:
            answer = asked(candidate, spec)  # a third party's: checked, not trusted
        except AskTimeout as err:  # a blocked supports() must not hang the command
            return (str(err),)
        except Exception as err:  # a buggy supports() must not take the run down
            where = f"asking attention {candidate.name!r} whether it serves {spec.signature()}"
            stop = exhausted(err, where, f"{type(err).__name__}: {err}")
            if stop is not None:  # the machine's limit: not a refusal of this kernel's
                raise stop from err
            return (f"supports() raised {type(err).__name__}: {err}",)
        if not isinstance(answer, Support):  # `return spec.q_len <= 512` was a traceback
            return (
                f"supports() returned {type(answer).__name__}, not a Support: the contract "
                "asks for Support.yes() or Support.no('reason', ...)",
            )
        support = answer
        reasons.extend(r for r in support.reasons if r not in reasons)
        if not support.ok and not support.reasons:
            reasons.append("refused without a reason")
    return tuple(reasons)
