"""The one factory of a pipeline's attention candidates, shared by a run and by ``explain``.

A run and ``explain`` must agree on what they negotiate with: the same instances
(built from the same validated configs), the same reference, the same trust
verdicts, the same mode. Both build them here, so what ``explain`` prints is what
a run does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from seamline.contracts import Attention, UserError
from seamline.core.attention.planner import AttentionPlanner, SpecKey, refusals, signature_of
from seamline.core.attention.tuning import Measured, MeasuredRanking
from seamline.core.config import AttentionMode, AttentionSpecConfig, ResolvedAttention, Selection
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.trust import untrusted_candidates


@dataclass(frozen=True)
class AttentionCandidates:
    """A pipeline's attention implementations, its reference, and what it asks of them."""

    mode: AttentionMode
    implementations: tuple[Attention[Any], ...]
    """In preference order (for ``auto``: every installed one; the planner orders per shape)."""
    reference: Attention[Any] | None
    """What the others are verified and shadowed against; None when none is installed."""
    settings: AttentionSpecConfig
    infos: Mapping[str, ComponentInfo | None] = field(default_factory=dict)
    """Name -> the registry's entry (distribution, version); None for a hand-made one."""
    untrusted: Mapping[str, str] = field(default_factory=dict)
    """Name -> why it is not trusted (only with ``require_conformance``)."""
    reference_location: str = ""
    """Where the pipeline named the reference (``file:line:column``), for its errors."""

    def check_reference(self, specs: SpecKey) -> None:
        """Raise a ``UserError`` if the reference cannot serve ``specs`` itself.

        A reference is named by a pipeline, not negotiated: one that cannot serve this
        model's attention (``xla-sdpa`` has no relative-position bias, which MPNet's
        needs) failed every candidate it checked with its own refusal, as "failed to
        compile", and the run blamed the kernels and the hint named the wrong fix.
        """
        reference = self.reference
        if reference is None:
            return
        reasons = refusals(reference, specs)
        if not reasons:
            return
        serving = [a.name for a in self.implementations if not refusals(a, specs)]
        others = f" (here: {', '.join(serving)})" if serving else ""
        where = f"{self.reference_location}: " if self.reference_location else ""
        raise UserError(
            f"{where}attention.reference {reference.name!r} cannot check this model's "
            f"attention ({signature_of(specs)}): {'; '.join(reasons)}; name a reference "
            f"that serves it{others}, or set attention.verify: false and no shadow to run "
            "unchecked"
        )

    @property
    def verifies(self) -> bool:
        """Whether a candidate is checked against the reference on first use of a shape."""
        return self.settings.verify and self.reference is not None

    @property
    def shadow_every(self) -> int:
        return self.settings.shadow.every if self.settings.shadow else 0

    def planner(
        self, *, measure: bool = True, on_entry: Measured | None = None
    ) -> AttentionPlanner:
        """A fresh planner over these candidates (decisions and demotions start empty).

        With ``select: measure`` it orders serving candidates by measured time:
        measuring them on first use of a shape when ``measure``, else (``explain``)
        only reading the tuning cache. ``on_entry`` hears of every timing used.
        """
        ranking = None
        if self.settings.select is Selection.MEASURE:
            ranking = MeasuredRanking(self.infos, measure=measure, on_entry=on_entry)
        return AttentionPlanner(self.implementations, self.mode, self.untrusted, ranking)

    def close(self) -> None:
        """Close every implementation, and the reference when it is not one of them."""
        for implementation in self.implementations:
            implementation.close()
        if self.reference is not None and all(
            self.reference is not implementation for implementation in self.implementations
        ):
            self.reference.close()


def build_candidates(resolved: ResolvedAttention, registry: Registry) -> AttentionCandidates:
    """Instantiate the candidates and the reference of ``resolved``, and judge their trust."""
    implementations = tuple(
        cast(Attention[Any], registry.create("attention", choice.name, choice.config))
        for choice in resolved.candidates
    )
    reference: Attention[Any] | None = None
    choice = resolved.reference
    if choice is not None:
        same = [c for c in implementations if c.name == choice.name and c.config == choice.config]
        reference = (
            same[0]
            if same
            else cast(Attention[Any], registry.create("attention", choice.name, choice.config))
        )
    named = [*implementations, reference] if reference is not None else list(implementations)
    infos = {a.name: registry.info_of(a) for a in named}
    settings = resolved.settings
    return AttentionCandidates(
        mode=resolved.mode,
        implementations=implementations,
        reference=reference,
        settings=settings,
        infos=infos,
        untrusted=untrusted_candidates(implementations, infos, settings.require_conformance),
        reference_location=choice.location if choice is not None else "",
    )
