"""The gate: how far a lower precision's vectors fall from float32's, and the verdict.

Two figures decide, both measured on the same windows embedded both ways:

* the **cosine** between each window's two vectors (its minimum is what one document's
  search result can lose), and
* **neighbour agreement**: for each window, the fraction of its ``top_k`` nearest
  windows (cosine, among the sample) under float32 that the candidate's vectors still
  rank in their ``top_k`` — what a retrieval index built from them would change
  (windows exactly as near as the ``top_k``-th count as kept: :func:`neighbours_kept`).
  The benchmarks report the same figure, from this module.

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
    # With no more than top_k + 1 windows, every other window is among each one's
    # nearest, under either precision: the figure is 100 % whatever the vectors are. It
    # was reported as "100.0% of top-19 neighbours kept" for a top_k of 50; now it is
    # not measured, and the figures say the gate checked the cosine only.
    k = top_k if top_k < len(ref) - 1 else 0
    kept: npt.NDArray[np.float64] | None = None
    if k >= 1:
        kept = neighbours_kept(ref, cand, k)
    return GateFigures(
        windows=len(ref),
        min_cosine=float(np.min(cosines)),
        median_cosine=float(np.median(cosines)),
        max_abs=float(np.max(np.abs(reference.astype(np.float64) - candidate))),
        top_k=k,
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
    if (
        figures.neighbours_checked
        and figures.neighbours is not None
        and not figures.neighbours >= gate.min_neighbours
    ):
        reasons.append(
            f"only {figures.neighbours:.1%} of each window's top-{figures.top_k} float32 "
            f"neighbours kept, below precision.gate.min_neighbours {gate.min_neighbours:.0%}"
        )
    return reasons


def _unit(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    unit: npt.NDArray[np.float64] = x / np.maximum(norms, 1e-12)
    return unit


def nearest(vectors: npt.NDArray[np.float64], k: int, chunk: int = 1024) -> npt.NDArray[np.intp]:
    """Each row's ``k`` nearest other rows by dot product (cosine, for unit rows), as a set
    of indices per row in no particular order; a ``chunk`` of rows at a time, so that a
    benchmark's tens of thousands of windows never need the whole similarity matrix."""
    count = vectors.shape[0]
    found = np.empty((count, k), np.intp)
    for start in range(0, count, chunk):
        similarity = vectors[start : start + chunk] @ vectors.T
        rows = np.arange(similarity.shape[0])
        similarity[rows, start + rows] = -np.inf  # not its own neighbour
        found[start : start + chunk] = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    return found


TIED = 1e-6
"""Reference similarities this close to the ``k``-th largest are a tie.

float32 itself does not give one text one vector: the same window embedded at two
positions of a batch came out ~3e-8 apart a value (their cosine ~1e-7 from 1), so the
copies of a repeated text were "tied" only up to that round-off, and the gate counted
the candidate's choice among them as lost neighbours (20 copies of one sentence: 83.5 %
kept, bfloat16 refused for it). Ten times the round-off is still a hundred times finer
than the gate's own cosine threshold (1e-4)."""


def neighbours_kept(
    reference: npt.NDArray[np.float64],
    candidate: npt.NDArray[np.float64],
    k: int,
    chunk: int = 1024,
) -> npt.NDArray[np.float64]:
    """Per row, the fraction of its ``k`` nearest neighbours under ``candidate`` that are
    among its ``k`` nearest under ``reference``.

    Ties count as kept: a neighbour is one of the reference's ``k`` nearest when its
    reference similarity is at least the ``k``-th largest, less :data:`TIED`. A corpus
    holds the same text twice (a boilerplate paragraph, a repeated window), and the two
    are as near as each other: which of them a precision lists first is not a lost
    neighbour, and a count of set overlap would refuse a faithful candidate for it.
    """
    theirs = nearest(candidate, k, chunk)
    kept = np.empty(reference.shape[0], np.float64)
    for start in range(0, reference.shape[0], chunk):
        similarity = reference[start : start + chunk] @ reference.T
        rows = np.arange(similarity.shape[0])
        similarity[rows, start + rows] = -np.inf
        kth = np.partition(similarity, -k, axis=1)[:, -k]
        listed = np.take_along_axis(similarity, theirs[start : start + chunk], axis=1)
        kept[start : start + chunk] = np.mean(listed >= kth[:, None] - TIED, axis=1)
    return kept
