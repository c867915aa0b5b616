"""Exact search over an output whose sink's reader has no query engine: every vector, in chunks.

The sink's reader (:class:`~seamline.contracts.readback.OutputReader`) yields vectors a
chunk at a time, with the row of each (:class:`~seamline.contracts.stored.StoredRow`:
``id``, ``window``, ``span``, ``metadata``, and ``text`` where the sink stored it),
checked as it is read (in bulk, where the reader can: a row is made only for the few
that enter a query's best); only the best ``k`` are kept, so memory stays bounded for
any index size. Which files are read, and how, is the reader's: nothing here knows a
sink's format.

Many queries are answered by one read of the output (:func:`nearest_each`): ``seamline
search --queries`` with a thousand questions read a large JSON Lines output a thousand
times, parsing every line each time. A chunk is scored against a group of queries at
once (one matrix product), each query keeping its own best ``k``.

``per_document``: each query keeps its best ``k`` documents instead, each by its best row
(:class:`~.documents.BestDocuments`), in the same one read and the same bounded memory.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol

import numpy as np

from seamline.adapters.search.documents import BestDocuments
from seamline.contracts.readback import OutputReader, cosines, current_readers, reread
from seamline.contracts.stored import StoredRow

Ranked = tuple[list[tuple[float, StoredRow]], int]
"""``(score, row)`` best first, and how many rows were scanned."""

QUERIES_A_READ = 256
"""How many queries one read of the output answers: a chunk's scores are
``CHUNK_ROWS`` × this many float32 values (4 MiB), whatever the number of queries."""


def nearest_each(
    readers: Sequence[OutputReader],
    vectors: Sequence[np.ndarray],
    k: int,
    per_document: bool = False,
) -> list[Ranked]:
    """For each unit vector of ``vectors``, in order: the ``k`` rows most similar (cosine),
    best first (ties to the row read first), and how many rows were scanned (with
    ``per_document``: the best row of each of the ``k`` documents whose best rows are the
    most similar, ties to the row read first). The output is read part after part, once
    for every :data:`QUERIES_A_READ` vectors, and read again,
    from the start, where a reader found it republished as it read
    (:func:`~seamline.contracts.readback.reread`). Each read takes the parts the manifest
    names then (:func:`~seamline.contracts.readback.current_readers`): an index held open
    on the output of a sharded run failed every search once a new run was published."""
    ranked: list[Ranked] = []
    for start in range(0, len(vectors), QUERIES_A_READ):
        group = np.stack(vectors[start : start + QUERIES_A_READ])
        kept_by = partial(BestDocuments if per_document else BestRows, k)
        ranked.extend(reread(partial(_scan, readers, group, kept_by)))
    return ranked


class Kept(Protocol):
    """One query's best so far (rows, or documents by their best rows) as chunks are read."""

    def offer_chunk(
        self, scores: np.ndarray[Any, Any], rows: Sequence[StoredRow], first: int
    ) -> None:
        """A chunk's rows and their scores; ``first``: the position of its first row."""

    def ranked(self) -> list[tuple[float, StoredRow]]:
        """What is kept, best first (ties to the row read first)."""


class BestRows:
    """One query's best ``k`` rows so far, as rows are offered in the order they are read."""

    def __init__(self, k: int) -> None:
        self.k = k
        self._heap: list[tuple[float, int, StoredRow]] = []  # (score, -position, row)

    def offer_chunk(
        self, scores: np.ndarray[Any, Any], rows: Sequence[StoredRow], first: int
    ) -> None:
        _keep(self._heap, scores, rows, first, self.k)

    def ranked(self) -> list[tuple[float, StoredRow]]:
        return [(score, row) for score, _, row in sorted(self._heap, key=_order)]


def _scan(
    readers: Sequence[OutputReader], queries: np.ndarray, kept_by: Callable[[], Kept]
) -> list[Ranked]:
    """One read of the output, each chunk scored against every query at once, each query's
    best kept by its own ``kept_by()`` (best rows, or best documents)."""
    best = [kept_by() for _ in queries]
    seen = 0
    for reader in current_readers(readers):
        for matrix, rows in reader.chunks(queries.shape[1]):
            scores = cosines(matrix, queries)
            for kept, column in zip(best, scores.T, strict=True):
                kept.offer_chunk(column, rows, seen)
            seen += len(rows)
    return [(kept.ranked(), seen) for kept in best]


def _keep(
    heap: list[tuple[float, int, StoredRow]],
    scores: np.ndarray[Any, Any],
    rows: Sequence[StoredRow],
    first: int,
    k: int,
) -> None:
    """Offer a chunk's rows to one query's ``heap`` of its best ``k``: only those scoring at
    least the chunk's ``k``-th best can enter, and they are offered in the order read."""
    if len(scores) > k:
        threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(len(scores))
    for index in candidates.tolist():
        score = float(scores[index])  # ties: the later goes (-position the lower)
        if len(heap) < k:
            heapq.heappush(heap, (score, -(first + index), rows[index]))
        elif score > heap[0][0]:  # the row made (CheckedRows) only as it enters
            heapq.heapreplace(heap, (score, -(first + index), rows[index]))


def _order(item: tuple[float, int, StoredRow]) -> tuple[float, int]:
    return -item[0], -item[1]
