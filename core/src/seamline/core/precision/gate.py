"""The gate: how far a lower precision's vectors fall from float32's, and the verdict.

Two figures decide, both measured on the same windows embedded both ways:

* the **cosine** between each window's two vectors (its minimum is what one document's
  search result can lose), and
* **neighbour agreement**: for each window, the fraction of its ``top_k`` nearest
  windows (cosine, among the sample) under float32 that the candidate's vectors still
  rank in their ``top_k`` — what a retrieval index built from them would change.

The thresholds are the pipeline's (``precision.gate``), strict by default. The
largest absolute difference and the median cosine are reported beside them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from seamline.core.config.spec import PrecisionGate
from seamline.core.precision.decision import GateFigures

Matrix = npt.NDArray[np.float32]


def compare(reference: Matrix, candidate: Matrix, top_k: int) -> GateFigures:
    """The gate's figures for ``candidate`` against ``reference`` (one row per window)."""
    if reference.shape != candidate.shape or reference.ndim != 2 or len(reference) == 0:
        raise ValueError(
            f"the two precisions embedded the sample differently: {reference.shape} "
            f"against {candidate.shape}"
        )
    ref = _unit(reference.astype(np.float64))
    cand = _unit(candidate.astype(np.float64))
    cosines = np.sum(ref * cand, axis=1)
    k = min(top_k, len(ref) - 1)
    kept: npt.NDArray[np.float64] | None = None
    if k >= 1:
        kept = _neighbours_kept(ref, cand, k)
    return GateFigures(
        windows=len(ref),
        min_cosine=float(np.min(cosines)),
        median_cosine=float(np.median(cosines)),
        max_abs=float(np.max(np.abs(reference.astype(np.float64) - candidate))),
        top_k=max(k, 0),
        neighbours=None if kept is None else float(np.mean(kept)),
        worst_neighbours=None if kept is None else float(np.min(kept)),
    )


def refusals(figures: GateFigures, gate: PrecisionGate) -> list[str]:
    """Why the figures fail the gate, in words (empty: they pass)."""
    reasons = []
    if not figures.min_cosine >= gate.min_cosine:  # NaN fails too
        reasons.append(
            f"min cosine {figures.min_cosine:.6f} against float32 is below "
            f"precision.gate.min_cosine {gate.min_cosine} ({figures.windows} windows)"
        )
    if figures.neighbours is not None and not figures.neighbours >= gate.min_neighbours:
        reasons.append(
            f"only {figures.neighbours:.1%} of each window's top-{figures.top_k} float32 "
            f"neighbours kept, below precision.gate.min_neighbours {gate.min_neighbours:.0%}"
        )
    return reasons


def _unit(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit: npt.NDArray[np.float64] = x / np.maximum(norms, 1e-12)
    return unit


def _neighbours_kept(
    ref: npt.NDArray[np.float64], cand: npt.NDArray[np.float64], k: int
) -> npt.NDArray[np.float64]:
    """Per window: the fraction of its ``k`` nearest (others, by cosine) kept by ``cand``."""

    def nearest(x: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        scores = x @ x.T
        np.fill_diagonal(scores, -np.inf)
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]

    before, after = nearest(ref), nearest(cand)
    return np.array(
        [len(set(a.tolist()) & set(b.tolist())) / k for a, b in zip(before, after, strict=True)]
    )
