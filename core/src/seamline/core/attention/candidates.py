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
from seamline.contracts.logs import get_logger
from seamline.core.attention.planner import AttentionPlanner, SpecKey, refusals, signature_of
from seamline.core.attention.tuning import Measured, MeasuredRanking
from seamline.core.config import (
    AttentionMode,
    AttentionSpecConfig,
    ComponentChoice,
    ResolvedAttention,
    Selection,
)
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.seams import BUILD, mark_failure
from seamline.core.trust import untrusted_candidates

log = get_logger("seamline.core")


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
    left_out: Mapping[str, str] = field(default_factory=dict)
    """Name -> why an ``auto`` candidate is not among ``implementations``: it failed to build
    (``failed to build (dist version): Error: message``; ``explain`` lists it with this)."""
    unusable: Mapping[str, str] = field(default_factory=dict)
    """Name -> why an installed attention cannot be an ``auto`` candidate at all (broken,
    refused, in conflict: :attr:`ResolvedAttention.unusable`): refused for every shape."""

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
        return AttentionPlanner(
            self.implementations, self.mode, self.untrusted, ranking, self.unusable
        )

    def close(self) -> None:
        """Close every implementation, and the reference when it is not one of them."""
        for implementation in self.implementations:
            implementation.close()
        if self.reference is not None and all(
            self.reference is not implementation for implementation in self.implementations
        ):
            self.reference.close()


def build_candidates(resolved: ResolvedAttention, registry: Registry) -> AttentionCandidates:
    """Instantiate the candidates and the reference of ``resolved``, and judge their trust.

    Under ``auto`` a candidate whose constructor raises is left out, with a warning
    naming it and its distribution: the pipeline never named it, and one broken
    kernel installed beside the others stopped every ``auto`` run and ``explain``
    with a bare ``TypeError``. A candidate or reference the pipeline names that
    fails to build ends the run, its error marked as that component's ``build``.
    """
    implementations: list[Attention[Any]] = []
    left_out: dict[str, str] = {}
    for name, why in resolved.unusable.items():  # said once a run; each decision names it too
        log.warning("attention installed but not usable: auto leaves it out", why=f"{name}: {why}")
    for choice in resolved.candidates:
        try:
            implementations.append(_built(registry, choice))
        except Exception as err:
            if resolved.mode is not AttentionMode.AUTO:
                raise
            info = registry.get("attention", choice.name)
            failure = f"{type(err).__name__}: {err}"
            where = f"attention {choice.name!r} ({BUILD}, from {info.distribution} {info.version})"
            log.warning("attention left out of auto: it failed to build", why=f"{where}: {failure}")
            left_out[choice.name] = (
                f"failed to build ({info.distribution} {info.version}): {failure}"
            )
            if len(left_out) == len(resolved.candidates):
                raise
    reference: Attention[Any] | None = None
    named_reference = resolved.reference
    if named_reference is not None:
        same = [
            c
            for c in implementations
            if c.name == named_reference.name and c.config == named_reference.config
        ]
        reference = same[0] if same else _built(registry, named_reference)
    named = [*implementations, reference] if reference is not None else list(implementations)
    infos = {a.name: registry.info_of(a) for a in named}
    settings = resolved.settings
    return AttentionCandidates(
        mode=resolved.mode,
        implementations=tuple(implementations),
        reference=reference,
        settings=settings,
        infos=infos,
        untrusted=untrusted_candidates(implementations, infos, settings.require_conformance),
        reference_location=named_reference.location if named_reference is not None else "",
        left_out=left_out,
        unusable=resolved.unusable,
    )


def _built(registry: Registry, choice: ComponentChoice) -> Attention[Any]:
    """``choice`` built, an error from its constructor marked as its ``build``'s (it has no
    seam yet), so that the run's one line names the attention and its distribution."""
    try:
        return cast(Attention[Any], registry.create("attention", choice.name, choice.config))
    except UserError:
        raise
    except Exception as err:
        mark_failure(err, "attention", choice.name, BUILD, registry.get("attention", choice.name))
        raise
