"""Choosing the attention for a shape: negotiation, not force.

Every candidate is asked ``supports(spec)`` for the actual platform, dtype and
shapes. A single explicit choice that cannot serve is an error carrying its
reasons; ``auto`` or a preference list takes the first candidate that can serve
and records why each one before it could not. Decisions are cached per shape
signature, so each bucket is negotiated once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seamline.contracts import Attention, AttentionSpec, UnsupportedError


@dataclass(frozen=True, slots=True)
class AttentionDecision:
    """Which implementation serves a shape signature, why, and why not the others."""

    signature: str
    chosen: str
    reason: str
    rejected: dict[str, tuple[str, ...]] = field(default_factory=dict)


class AttentionPlanner:
    """Picks an attention implementation per :class:`AttentionSpec`."""

    def __init__(self, candidates: Sequence[Attention[Any]], explicit: bool) -> None:
        if not candidates:
            raise UnsupportedError("no attention implementation is installed or configured")
        self.candidates = list(candidates)
        self.explicit = explicit
        self._decisions: dict[tuple[AttentionSpec, ...], AttentionDecision] = {}

    def implementation(self, name: str) -> Attention[Any]:
        return next(c for c in self.candidates if c.name == name)

    def choose(self, specs: Sequence[AttentionSpec]) -> AttentionDecision:
        """One implementation that serves every spec of a model call (negotiated once, cached).

        A model may call its attention with several shapes (self- and cross-attention);
        one compiled function uses one implementation, so it must serve them all.
        """
        key = tuple(dict.fromkeys(specs))
        if not key:
            raise ValueError("the model made no attention call to plan for")
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._negotiate(key)
            self._decisions[key] = decision
        return decision

    @property
    def decisions(self) -> list[AttentionDecision]:
        return list(self._decisions.values())

    def _negotiate(self, specs: tuple[AttentionSpec, ...]) -> AttentionDecision:
        signature = " + ".join(spec.signature() for spec in specs)
        rejected: dict[str, tuple[str, ...]] = {}
        for position, candidate in enumerate(self.candidates):
            reasons = _refusals(candidate, specs)
            if not reasons:
                if self.explicit:
                    reason = "explicitly configured"
                elif position == 0:
                    reason = "first candidate, and it supports this shape"
                else:
                    reason = "first candidate that supports this shape; earlier ones cannot"
                return AttentionDecision(signature, candidate.name, reason, rejected)
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


def _refusals(candidate: Attention[Any], specs: tuple[AttentionSpec, ...]) -> tuple[str, ...]:
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
