"""Search by document: the best window of each document, ``k`` documents, best first.

A pipeline stores one row per *window* (a long document is cut into overlapping
windows), and a search ranks rows: the top ``k`` of a document-retrieval prompt held
several windows of one document (overlapping by the model's stride, so their text
repeated) and fewer documents than ``k``. ``per_document`` collapses the hits by
document, as Elasticsearch's field collapsing or Vespa's grouping do: each document
counted once, by its best window, documents ordered by that window's score.

Exact, on exact search: the answer is the brute force's, every row's score computed,
each document's best window taken (ties to the window read first), the documents
ranked by it (ties to the one whose best window was read first), the first ``k`` kept.

- An output without a query engine is scanned once, as a per-window search scans it
  (:mod:`.scan`), keeping each query's best ``k`` documents (:class:`BestDocuments`):
  memory bounded by ``k`` whatever the number of rows or documents.
- An output's engine (a LanceDB table) ranks rows, not documents, so it is asked for
  more windows than ``k`` (:func:`nearest_documents`): :data:`FIRST_WINDOWS` a
  document first, four times as many each time until the windows it returns hold ``k``
  documents, or it returns fewer than asked (it has no more), or :data:`MAX_WINDOWS`
  were asked for. Among the nearest ``m`` windows, a document's first is its best, and
  any document none of them holds scores no higher than the last of them: so the first
  ``k`` documents found there are the top ``k``. Past :data:`MAX_WINDOWS`, the
  documents found are still the best ones, in order, but fewer than ``k``, and ``how``
  says so; it says so too when the engine returned fewer windows than asked and they hold
  fewer than ``k`` documents (an output of fewer documents, or a vector index whose probed
  partitions hold fewer windows).

Through an approximate vector index the engine's ``m`` nearest windows are the index's
(as a per-window search's are): each hit is the best window of its document among
those, and a document whose windows the index missed is missing, as it would be from a
per-window search. ``exact`` makes it the brute force's answer.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from seamline.contracts.readback import Nearest
from seamline.contracts.stored import StoredRow

FIRST_WINDOWS = 4
"""How many windows a document an engine is first asked for (``k`` × this many)."""
GROWTH = 4
"""How many times more windows each later ask is for."""
MAX_WINDOWS = 160_000
"""The most windows an engine is asked for in one search (16 × the largest ``k``): past it, a
search returns the documents found so far, and says so."""

Ranked = list[tuple[float, StoredRow]]


def first_of_each(rows: Ranked, k: int) -> Ranked:
    """The first row of each document in ``rows`` (best first), for the first ``k``
    documents: each document's best window, as the rows are ranked."""
    seen: set[str] = set()
    kept: Ranked = []
    for score, row in rows:
        if row.id not in seen:
            seen.add(row.id)
            kept.append((score, row))
            if len(kept) == k:
                break
    return kept


def nearest_documents(ask: Callable[[int], Nearest | None], k: int) -> Nearest | None:
    """The best window of each of the ``k`` documents ``ask`` (an engine's nearest windows,
    given how many; None where the output has no engine) ranks first, its windows asked
    for as the module says; ``how`` is the engine's, with how many windows were read."""
    windows = min(k * FIRST_WINDOWS, MAX_WINDOWS)
    while True:
        found = ask(windows)
        if found is None:  # no engine: the caller scans
            return None
        kept = first_of_each(found.rows, k)
        exhausted = len(found.rows) < windows
        if len(kept) == k or exhausted or windows >= MAX_WINDOWS:
            break
        windows = min(windows * GROWTH, MAX_WINDOWS)
    read = len(found.rows)
    how = f"{found.how}; the best window of each document, from the {read:,} nearest windows"
    if len(kept) < k and not exhausted:  # MAX_WINDOWS read, and more windows left
        how += f" ({len(kept):,} of {k:,} documents found there: the most windows one search reads)"
    elif len(kept) < k:  # the engine had no more: a small output, or a vector index's probes
        how += f" ({len(kept):,} of {k:,} documents: the engine returned no more windows)"
    return Nearest(kept, how, found.plan, found.made_by)


class BestDocuments:
    """One query's best ``k`` documents so far, each by its best row, as rows are offered
    in the order they are read; what is kept is what a brute force over those rows keeps.

    A document that left (``k`` others scored higher) and comes back with a better row
    enters again with that row: its earlier ones scored no higher than the document that
    pushed it out, and whatever is kept only gets better.
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self.best: dict[str, tuple[float, int, StoredRow]] = {}
        """Each kept document's best row: ``(score, -position, row)``."""
        self._heap: list[tuple[float, int, str]] = []
        """``(score, -position, id)``, the worst kept document on top; an entry that no longer
        is its document's best (it improved, or left) is dropped when it reaches the top."""

    def floor(self) -> float:
        """The score a row must reach to be kept (-inf while fewer than ``k`` are kept)."""
        return self._worst()[0] if len(self.best) == self.k else -math.inf

    def _worst(self) -> tuple[float, int, str]:
        """The worst kept document's entry, on top of the heap once stale ones are dropped."""
        heap = self._heap
        while True:
            score, position, doc = heap[0]
            held = self.best.get(doc)
            if held is not None and held[:2] == (score, position):
                return heap[0]
            heapq.heappop(heap)

    def offer(self, score: float, position: int, row: StoredRow) -> None:
        """A row read: kept if its document's best so far and among the best ``k``."""
        item = (score, -position)
        held = self.best.get(row.id)
        if held is not None:
            if item > held[:2]:
                self._keep(item, row)
            return
        if len(self.best) == self.k:
            worst = self._worst()
            if item <= worst[:2]:
                return
            heapq.heappop(self._heap)
            del self.best[worst[2]]
        self._keep(item, row)

    def _keep(self, item: tuple[float, int], row: StoredRow) -> None:
        self.best[row.id] = (*item, row)
        heapq.heappush(self._heap, (*item, row.id))
        if len(self._heap) > 4 * self.k + 64:  # stale entries: rebuilt, so memory stays O(k)
            self._heap = [(s, p, doc) for doc, (s, p, _) in self.best.items()]
            heapq.heapify(self._heap)

    def offer_chunk(
        self, scores: np.ndarray[Any, Any], rows: Sequence[StoredRow], first: int
    ) -> None:
        """A chunk's rows (``first``: the position of its first), those that may be kept
        offered best first (ties in the order read), until none more can be."""
        floor = self.floor()
        candidates = np.flatnonzero(scores >= floor) if floor > -math.inf else np.arange(len(rows))
        order = candidates[np.argsort(-scores[candidates], kind="stable")]
        for index in order.tolist():
            score = float(scores[index])
            if score < self.floor():  # the rest score no higher: none can enter, nor improve
                break
            self.offer(score, first + index, rows[index])

    def ranked(self) -> Ranked:
        """The documents kept, each by its best row, best first (ties to the row read first)."""
        kept = sorted(self.best.values(), key=lambda item: (-item[0], -item[1]))
        return [(score, row) for score, _, row in kept]
