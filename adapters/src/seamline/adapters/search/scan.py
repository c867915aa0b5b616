"""Exact search over an output whose sink's reader has no query engine: every vector, in chunks.

The sink's reader (:class:`~seamline.contracts.readback.OutputReader`) yields vectors a
chunk at a time, with the row of each (:class:`~seamline.contracts.stored.StoredRow`:
``id``, ``window``, ``span``, ``metadata``, and ``text`` where the sink stored it),
each checked as it is read; only the best ``k`` are kept, so memory stays bounded for
any index size. Which files are read, and how, is the reader's: nothing here knows a
sink's format.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from seamline.contracts.readback import OutputReader, reread
from seamline.contracts.stored import StoredRow


def nearest(
    readers: Sequence[OutputReader], vector: np.ndarray, k: int
) -> tuple[list[tuple[float, StoredRow]], int]:
    """The ``k`` rows most similar (cosine) to the unit ``vector``, best first, read part after
    part; and how many rows were scanned. Read again, from the start, where a reader found
    the output republished as it read (:func:`~seamline.contracts.readback.reread`)."""
    return reread(lambda: _scan(readers, vector, k))


def _scan(
    readers: Sequence[OutputReader], vector: np.ndarray, k: int
) -> tuple[list[tuple[float, StoredRow]], int]:
    best: list[tuple[float, int, StoredRow]] = []
    seen = 0
    for reader in readers:
        for matrix, rows in reader.chunks(len(vector)):
            norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
            scores = (matrix @ vector) / norms
            for score, row in zip(scores.tolist(), rows, strict=True):
                item = (score, seen, row)
                seen += 1
                if len(best) < k:
                    heapq.heappush(best, item)
                elif score > best[0][0]:
                    heapq.heapreplace(best, item)
    ranked = sorted(best, key=lambda item: (-item[0], item[1]))
    return [(score, row) for score, _, row in ranked], seen
