"""Choosing the attention for a shape: negotiation, not force.

Every candidate is asked ``supports(spec)`` for the actual platform, dtype and
shapes. A single explicit choice that cannot serve is an error carrying its
reasons; ``auto`` or a preference list takes the first candidate that can serve
and records why each one before it could not. ``auto`` orders the candidates per
shape by their own ``priority(spec)``, so one run may use different kernels for
different lengths. A candidate that fails later for a shape — it does not compile,
or it disagrees with the reference — is *demoted* for that shape only, with the
reason, and the next candidate takes over. With ``require_conformance`` a
candidate without a passing conformance record for the versions installed now is
refused for every shape, with the reason (see :mod:`seamline.core.trust`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seamline.contracts import Attention, AttentionSpec, UnsupportedError

SpecKey = tuple[AttentionSpec, ...]


@dataclass(frozen=True, slots=True)
class AttentionDecision:
    """Which implementation serves a shape signature, why, and why not the others."""

    signature: str
    chosen: str
    reason: str
    rejected: dict[str, tuple[str, ...]] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    """The candidates in the order they were considered."""


class AttentionPlanner:
    """Picks an attention implementation per set of :class:`AttentionSpec`."""

    def __init__(
        self,
        candidates: Sequence[Attention[Any]],
        *,
        explicit: bool,
        auto: bool = False,
        untrusted: Mapping[str, str] | None = None,
    ) -> None:
        if not candidates:
            raise UnsupportedError("no attention implementation is installed or configured")
        self.candidates = list(candidates)
        self.explicit = explicit
        self.auto = auto
        self.untrusted = dict(untrusted or {})
        """Candidate name -> why it is not trusted (refused for every shape)."""
        self._decisions: dict[SpecKey, AttentionDecision] = {}
        self._demoted: dict[SpecKey, dict[str, str]] = {}

    def implementation(self, name: str) -> Attention[Any]:
        return next(c for c in self.candidates if c.name == name)

    def choose(self, specs: Sequence[AttentionSpec]) -> AttentionDecision:
        """One implementation that serves every spec of a model call (negotiated once, cached).

        A model may call its attention with several shapes (self- and cross-attention);
        one compiled function uses one implementation, so it must serve them all.
        """
        key = _key(specs)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._negotiate(key)
            self._decisions[key] = decision
        return decision

    def demote(self, specs: Sequence[AttentionSpec], name: str, reason: str) -> None:
        """Rule ``name`` out for these specs (only), so the next ``choose`` moves on."""
        key = _key(specs)
        self._demoted.setdefault(key, {})[name] = reason
        self._decisions.pop(key, None)

    @property
    def decisions(self) -> list[AttentionDecision]:
        return list(self._decisions.values())

    def ordered(self, specs: Sequence[AttentionSpec]) -> list[Attention[Any]]:
        """Candidates in the order they are tried for ``specs``."""
        if not self.auto:
            return list(self.candidates)
        first = specs[0]
        return sorted(self.candidates, key=lambda c: (-_priority(c, first), c.name))

    def _negotiate(self, key: SpecKey) -> AttentionDecision:
        signature = " + ".join(spec.signature() for spec in key)
        demoted = self._demoted.get(key, {})
        rejected: dict[str, tuple[str, ...]] = {}
        order = self.ordered(key)
        names = tuple(c.name for c in order)
        for position, candidate in enumerate(order):
            if candidate.name in demoted:
                rejected[candidate.name] = (demoted[candidate.name],)
                continue
            reasons = self.reasons_against(candidate, key)
            if not reasons:
                if self.explicit:
                    reason = "explicitly configured"
                elif position == 0:
                    reason = "first candidate, and it supports this shape"
                else:
                    reason = "first candidate that serves this shape; earlier ones cannot"
                if self.auto and position == 0:
                    reason = "highest priority for this shape, and it supports it"
                elif self.auto:
                    reason = "highest priority among those that support this shape"
                return AttentionDecision(signature, candidate.name, reason, rejected, names)
            rejected[candidate.name] = reasons
        details = "; ".join(f"{name}: {', '.join(reasons)}" for name, reasons in rejected.items())
        if self.explicit:
            message = (
                f"attention {self.candidates[0].name!r} cannot serve {signature}: {details}. "
                "Choose another implementation, a preference list, or 'auto'"
            )
        else:
            message = f"no attention candidate can serve {signature}: {details}"
        raise UnsupportedError(message, tuple(f"{n}: {', '.join(r)}" for n, r in rejected.items()))

    def reasons_against(
        self, candidate: Attention[Any], specs: Sequence[AttentionSpec]
    ) -> tuple[str, ...]:
        """Why ``candidate`` may not serve ``specs``: distrust first, then its own refusals."""
        distrust = self.untrusted.get(candidate.name)
        if distrust is not None:
            return (f"conformance required: {distrust}",)
        return refusals(candidate, tuple(specs))


def _key(specs: Sequence[AttentionSpec]) -> SpecKey:
    key = tuple(dict.fromkeys(specs))
    if not key:
        raise ValueError("the model made no attention call to plan for")
    return key


def _priority(candidate: Attention[Any], spec: AttentionSpec) -> int:
    try:
        return int(candidate.priority(spec))
    except Exception:  # a buggy priority() must not take the run down: try it last
        return -(10**9)


def refusals(candidate: Attention[Any], specs: SpecKey) -> tuple[str, ...]:
    """Every reason ``candidate`` gives for not serving one of ``specs`` (empty: it serves all)."""
    reasons: list[str] = []
    for spec in specs:
        try:
            support = candidate.supports(spec)
        except Exception as err:  # a buggy supports() must not take the run down
            return (f"supports() raised {type(err).__name__}: {err}",)
        reasons.extend(r for r in support.reasons if r not in reasons)
        if not support.ok and not support.reasons:
            reasons.append("refused without a reason")
    return tuple(reasons)
