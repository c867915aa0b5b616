"""The exact scan of an output without a query engine (:mod:`seamline.adapters.search.scan`).

Many queries share one read of the output; each must get what a scan for it alone
gets: the ``k`` most similar rows, best first, ties to the row read first, across the
chunks and the parts of the output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import pytest

from seamline.adapters.search import scan
from seamline.contracts.readback import OutputReader
from seamline.contracts.stored import StoredRow


class Part:
    """A part of an output, read in chunks of ``size`` rows; counts its reads."""

    def __init__(self, vectors: np.ndarray, first: int, size: int) -> None:
        self.vectors = vectors
        self.rows = [StoredRow(id=f"r{first + i}", span=(0, 1)) for i in range(len(vectors))]
        self.size = size
        self.reads = 0
        self.siblings = [self]

    def republished(self) -> list[Part]:
        """The output's parts as its manifest names them now: the same."""
        return self.siblings

    def chunks(
        self, dimension: int | None
    ) -> Iterator[tuple[np.ndarray[Any, Any], list[StoredRow]]]:
        assert dimension == self.vectors.shape[1]
        self.reads += 1
        for start in range(0, len(self.vectors), self.size):
            yield self.vectors[start : start + self.size], self.rows[start : start + self.size]


def expected(vectors: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    """The ids a brute force ranks first: cosine, best first, ties by position."""
    scores = (vectors @ query) / np.maximum(np.linalg.norm(vectors, axis=1), 1e-12)
    order = sorted(range(len(vectors)), key=lambda i: (-float(scores[i]), i))
    return [f"r{i}" for i in order[:k]]


def parts_of(vectors: np.ndarray, size: int) -> list[Part]:
    half = len(vectors) // 2
    parts = [Part(vectors[:half], 0, size), Part(vectors[half:], half, size)]
    for part in parts:
        part.siblings = parts
    return parts


@pytest.mark.parametrize("k", [1, 3, 7, 40])  # 40: more than the rows
def test_each_query_gets_what_a_scan_for_it_alone_gets(k: int) -> None:
    rng = np.random.default_rng(k)
    vectors = rng.standard_normal((37, 8)).astype(np.float32)
    vectors[20] = vectors[3]  # ties, in different parts and chunks
    vectors[30] = vectors[3] * 2  # the same direction: the same cosine
    queries = [v / np.linalg.norm(v) for v in rng.standard_normal((9, 8)).astype(np.float32)]
    queries.append(vectors[3] / np.linalg.norm(vectors[3]))
    parts = parts_of(vectors, size=5)
    answers = scan.nearest_each(cast("list[OutputReader]", parts), queries, k)
    for query, (ranked, scanned) in zip(queries, answers, strict=True):
        assert scanned == len(vectors)
        assert [row.id for _, row in ranked] == expected(vectors, query, k)
        ((alone, _),) = scan.nearest_each(
            cast("list[OutputReader]", parts_of(vectors, 5)), [query], k
        )
        assert [row.id for _, row in alone] == [row.id for _, row in ranked]
        scores = [score for score, _ in ranked]
        assert scores == sorted(scores, reverse=True)


def test_ties_go_to_the_row_read_first() -> None:
    vectors = np.ones((12, 4), dtype=np.float32)  # every row the same cosine
    query = np.full(4, 0.5, dtype=np.float32)
    ((ranked, _),) = scan.nearest_each(cast("list[OutputReader]", parts_of(vectors, 5)), [query], 3)
    assert [row.id for _, row in ranked] == ["r0", "r1", "r2"]


def test_the_output_is_read_once_for_a_group_of_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "QUERIES_A_READ", 4)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((10, 4)).astype(np.float32)
    parts = parts_of(vectors, size=3)
    queries = list(rng.standard_normal((9, 4)).astype(np.float32))
    answers = scan.nearest_each(cast("list[OutputReader]", parts), queries, 2)
    assert len(answers) == 9
    assert [part.reads for part in parts] == [3, 3]  # 9 queries, 4 a read
