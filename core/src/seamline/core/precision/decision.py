"""What a run decided about precision, and why: plain data, shown everywhere the run is.

A :class:`PrecisionDecision` is made once, at the driver, before any shard runs; it
is carried to workers (as the record :meth:`PrecisionDecision.record` makes) and
written into the run summary and the manifest's provenance; the manifest's top-level
``precision`` (the chosen name alone, validated by the manifest's schema when read
back) tells ``seamline search`` which precision to embed queries in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from seamline.contracts import UserError

FLOAT32 = "float32"

Mode = Literal["explicit", "list", "auto"]
_DELETE = "which you may delete to check again"


@dataclass(frozen=True, slots=True)
class GateFigures:
    """How far a candidate precision's vectors fell from float32's on the calibration sample."""

    windows: int
    """Windows compared (every window of the sample's documents)."""
    min_cosine: float
    median_cosine: float
    max_abs: float
    """Largest absolute difference of any component."""
    top_k: int
    """Neighbours compared per window (the gate's top_k; 0 when not compared)."""
    neighbours: float | None
    """Mean fraction of each window's ``top_k`` float32 neighbours kept; None when the
    sample has too few windows (``top_k + 1`` or fewer) for the figure to mean anything."""
    worst_neighbours: float | None
    """The fraction kept by the worst window."""

    @property
    def neighbours_checked(self) -> bool:
        """Whether the neighbour figure could have failed: with ``top_k + 1`` windows or
        fewer every other window is a neighbour, and it is 100 % whatever the vectors.
        (Records written before such figures were left out may still carry one.)"""
        return self.neighbours is not None and 1 <= self.top_k < self.windows - 1

    def describe(self) -> str:
        """One clause for a terminal: the figures the gate judged."""
        text = f"min cosine {self.min_cosine:.6f} over {self.windows} windows"
        if self.neighbours_checked and self.neighbours is not None:
            return text + f", {self.neighbours:.1%} of top-{self.top_k} neighbours kept"
        return text + f"; {NO_NEIGHBOURS.format(windows=self.windows)}"


NO_NEIGHBOURS = "cosine only: a top-k neighbour check is not possible on {windows} windows"


@dataclass(frozen=True, slots=True)
class PrecisionCandidate:
    """One precision considered, whether it may serve, and why."""

    name: str
    ok: bool
    reasons: tuple[str, ...]
    """Why it was refused; for one accepted, what vouches for it (native support, the gate)."""
    figures: GateFigures | None = None
    """The gate's figures, when the candidate was checked against float32."""
    recorded: str | None = None
    """The record the figures were read from, when an earlier run measured them (a file
    in ``$SEAMLINE_PRECISION_DIR``): said wherever the figures are, since this run did
    not measure them; deleting it makes the next run measure again."""

    def figures_described(self) -> str | None:
        """The gate's figures in one clause (None without figures), without the
        cosine-only clause where a reason says it already: a gate passed on a small
        sample says so in its reason (:func:`~.negotiate.gate_passed`), and ``seamline
        explain``, which shows both, said it twice in one line."""
        if self.figures is None:
            return None
        said = self.figures.describe()
        clause = NO_NEIGHBOURS.format(windows=self.figures.windows)
        if any(clause in reason for reason in self.reasons):
            said = said.replace(f"; {clause}", "")
        return said

    def refusal(self) -> str:
        """Why it was refused, in words; figures read from a record say so and where
        (a refusal by an earlier run's record read as if this run had measured it)."""
        text = ", ".join(self.reasons)
        if self.recorded is None:
            return text
        return f"{text} (figures an earlier run recorded in {self.recorded}, {_DELETE})"


def not_offered(name: str, offered: Sequence[str]) -> PrecisionCandidate:
    """``name`` refused because the model does not compute in it (``offered`` is what it
    does): judged from the model alone, so ``validate`` refuses it as the run does."""
    return PrecisionCandidate(name, False, (f"the model computes in {', '.join(offered)} only",))


def none_can_serve(candidates: Sequence[PrecisionCandidate]) -> UserError:
    """What a run (``explain``, ``validate``) says when every candidate was refused."""
    reasons = "; ".join(f"{c.name}: {c.refusal()}" for c in candidates)
    return UserError(
        f"no precision can serve this pipeline ({reasons}); use 'precision: auto', which "
        "falls back to float32, or add float32 to the list"
    )


@dataclass(frozen=True, slots=True)
class PrecisionDecision:
    """The precision a run computes in, every candidate considered, and the gate's figures."""

    chosen: str
    mode: Mode
    candidates: tuple[PrecisionCandidate, ...]
    verified: bool = True
    """False when a lower precision was trusted unchecked (``precision.verify: false``)."""

    @property
    def chosen_candidate(self) -> PrecisionCandidate:
        return next(c for c in self.candidates if c.name == self.chosen and c.ok)

    def record(self) -> dict[str, Any]:
        """Plain JSON data: the manifest's and the summary's ``precision``."""
        return {
            "chosen": self.chosen,
            "mode": self.mode,
            "verified": self.verified,
            "candidates": [
                {
                    "name": c.name,
                    "ok": c.ok,
                    "reasons": list(c.reasons),
                    "figures": asdict(c.figures) if c.figures is not None else None,
                    "recorded": c.recorded,
                }
                for c in self.candidates
            ],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> PrecisionDecision:
        """The decision a driver recorded (``record()``), rebuilt in a worker."""
        candidates = tuple(
            PrecisionCandidate(
                c["name"],
                bool(c["ok"]),
                tuple(c["reasons"]),
                GateFigures(**c["figures"]) if c.get("figures") else None,
                c.get("recorded"),
            )
            for c in data["candidates"]
        )
        return cls(data["chosen"], data["mode"], candidates, bool(data["verified"]))

    def describe(self) -> str:
        """One line: the precision and what vouches for it."""
        chosen = self.chosen_candidate
        if chosen.figures is not None and chosen.recorded is not None:
            return (
                f"{self.chosen} (checked against float32 by an earlier run: "
                f"{chosen.figures.describe()}; as recorded in {chosen.recorded}, {_DELETE})"
            )
        if chosen.figures is not None:
            return f"{self.chosen} (checked against float32: {chosen.figures.describe()})"
        if self.chosen != FLOAT32 and not self.verified:
            return f"{self.chosen} (not checked against float32: precision.verify is false)"
        refused = [c for c in self.candidates if not c.ok]
        if refused:
            first = refused[0]
            if first.recorded is not None:
                return (
                    f"{self.chosen} ({first.name} refused by an earlier run's figures: "
                    f"{first.reasons[0]}; as recorded in {first.recorded}, {_DELETE})"
                )
            return f"{self.chosen} ({first.name} refused: {first.reasons[0]})"
        return self.chosen


def float32_decision(mode: Mode = "explicit") -> PrecisionDecision:
    """The decision of a pipeline that asks for float32 alone (the default)."""
    return PrecisionDecision(FLOAT32, mode, (PrecisionCandidate(FLOAT32, True, ()),))
