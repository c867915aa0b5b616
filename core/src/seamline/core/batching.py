"""Batches: few compiled shapes, little padding, bounded memory.

Every batch has one of a few shapes ``[rows, length]``: ``length`` is a bucket
(powers of two up to the model's ``max_length`` by default) and ``rows`` is
``run.batch_size``, or ``run.batch_tokens // length`` with a token budget, so a
batch of short rows holds as many positions as a batch of long ones
(:class:`BatchShapes`). Each shape is compiled once.

Two ways to fill them:

* :class:`Bucketer` — one example per row, padded. An example waits in the bucket
  of the smallest length that fits it; a bucket is released when its rows are all
  taken. At most one batch per bucket is held.
* :class:`Packer` — several examples per row, for a model whose ``packing()``
  allows it. Examples are collected until a window of tokens is full, sorted
  longest first, and packed first-fit into rows (a new row takes the smallest
  bucket that fits its first example, so short examples fill the gaps long ones
  leave before they open rows of their own); full batches go out, the rest waits
  for the next window. Padding falls from about half the positions to a few per
  cent, for the same outputs.

Both flush everything they hold on demand (at the end, and at every checkpoint),
so memory stays bounded however large the corpus.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from seamline.contracts import Example
from seamline.core.config import RunSettings


def batch_shapes(run: RunSettings, max_length: int, multiple: int = 1) -> BatchShapes:
    """The batch shapes of a pipeline's ``run`` settings for a model's longest window.

    ``multiple``: row counts are rounded up to a multiple of it (the devices a batch
    is split over, see :mod:`seamline.core.devices`).
    """
    buckets = resolve_buckets(run.buckets, max_length)
    return BatchShapes(tuple(buckets), run.batch_size, run.batch_tokens, multiple)


def default_buckets(max_length: int, smallest: int = 16) -> list[int]:
    """Powers of two from ``smallest`` up to ``max_length``, and ``max_length`` itself."""
    buckets = []
    length = smallest
    while length < max_length:
        buckets.append(length)
        length *= 2
    buckets.append(max_length)
    return buckets


def resolve_buckets(configured: Sequence[int] | None, max_length: int) -> list[int]:
    """The pipeline's buckets (or the default), capped at and always including ``max_length``."""
    buckets = configured or default_buckets(max_length)
    return sorted({b for b in buckets if b < max_length} | {max_length})


@dataclass(frozen=True, slots=True)
class BatchShapes:
    """The ``[rows, length]`` of each bucket's batches."""

    buckets: tuple[int, ...]
    batch_size: int
    batch_tokens: int | None = None
    multiple: int = 1
    """Row counts are rounded up to a multiple of this (the devices a batch is split over)."""
    fit_partial: bool = False
    """A partly filled batch gets the fewest rows that hold it (a power of two), not the full
    count. A run leaves it off: its last batch of each length is one among many, and a
    shape of its own would cost a compilation; an in-process embedder turns it on, since
    its requests are mostly partial batches (one text, a few) and a lone short text would
    otherwise be computed in a batch of the whole token budget."""

    def rows(self, length: int) -> int:
        """Rows of a batch of ``length``: the token budget's share, else ``batch_size``."""
        rows = self.batch_size if self.batch_tokens is None else max(1, self.batch_tokens // length)
        return self._to_multiple(rows)

    def partial_rows(self, length: int, used: int) -> int:
        """Rows of a partly filled batch of ``length`` whose examples take ``used`` rows."""
        full = self.rows(length)
        if not self.fit_partial:
            return full
        return min(full, self._to_multiple(1 << max(0, used - 1).bit_length()))

    def longest_only(self) -> BatchShapes:
        """Every batch in the longest bucket's shape, full rows, partly filled ones too.

        What the precision gate calibrates in: a sample of a few dozen documents
        bucketed like a run would meet most buckets once, each a compilation in two
        precisions that the run itself may never use. The longest shape is the one a run
        of ordinary documents uses most (packing fills its rows), so the gate's
        compilations become the run's, and the sample's few extra padded positions cost
        less than the compilations they save.
        """
        return replace(self, buckets=self.buckets[-1:], fit_partial=False)

    def _to_multiple(self, rows: int) -> int:
        return -(-rows // self.multiple) * self.multiple

    def bucket_for(self, length: int) -> int:
        """The smallest bucket that fits an example of ``length``."""
        index = bisect.bisect_left(self.buckets, length)
        if index == len(self.buckets):
            raise ValueError(
                f"an example of length {length} is longer than the largest bucket "
                f"{self.buckets[-1]}"
            )
        return self.buckets[index]


@dataclass(frozen=True, slots=True)
class Planned:
    """A batch to collate: its shape, its examples and (packed) each one's row."""

    length: int
    rows: int
    examples: list[Example]
    placement: list[int] | None = None
    """Row of each example when packed; None: example ``i`` in row ``i``."""
    partial: bool = False
    """A flush's partly filled batch of its length (rows left empty); a full one, False."""


class Bucketer:
    """Groups examples by padded length into batches of one example per row."""

    def __init__(self, shapes: BatchShapes) -> None:
        self.shapes = shapes
        self._pending: dict[int, list[Example]] = {b: [] for b in shapes.buckets}

    def add(self, example: Example) -> Iterator[Planned]:
        """Add one example; yield its bucket's batch if that became full."""
        bucket = self.shapes.bucket_for(example.length)
        pending = self._pending[bucket]
        pending.append(example)
        if len(pending) == self.shapes.rows(bucket):
            self._pending[bucket] = []
            yield Planned(bucket, len(pending), pending)

    def flush(self) -> Iterator[Planned]:
        """Yield every partly filled bucket, shortest first."""
        for bucket in self.shapes.buckets:
            pending = self._pending[bucket]
            if pending:
                self._pending[bucket] = []
                rows = self.shapes.partial_rows(bucket, len(pending))
                yield Planned(bucket, rows, pending, partial=True)


@dataclass
class _Row:
    length: int
    used: int
    members: list[int]
    """Indexes into the examples being packed, in the order they were placed."""


class Packer:
    """Packs several examples into each row (see the module docstring)."""

    def __init__(
        self,
        shapes: BatchShapes,
        capacity: Callable[[int], int],
        window_tokens: int | None = None,
    ) -> None:
        self.shapes = shapes
        self.capacity = capacity
        """Most examples one row of a length may hold (the model's ``packing``)."""
        largest = max(shapes.rows(b) * b for b in shapes.buckets)
        self.window_tokens = window_tokens if window_tokens is not None else 8 * largest
        """Tokens collected before packing: more sorts better, and holds more."""
        self._pending: list[Example] = []
        self._tokens = 0

    def add(self, example: Example) -> Iterator[Planned]:
        """Add one example; yield the batches a full window packs into."""
        self.shapes.bucket_for(example.length)  # refuse what no bucket fits, now
        self._pending.append(example)
        self._tokens += example.length
        if self._tokens >= self.window_tokens:
            yield from self._pack(final=False)

    def flush(self) -> Iterator[Planned]:
        """Pack and yield everything held, the last batch of each length partly filled."""
        yield from self._pack(final=True)

    def _pack(self, final: bool) -> Iterator[Planned]:
        examples = self._pending
        order = sorted(range(len(examples)), key=lambda i: (-examples[i].length, i))
        rows: list[_Row] = []
        for index in order:
            size = examples[index].length
            row = next(
                (
                    r
                    for r in rows
                    if r.length - r.used >= size and len(r.members) < self.capacity(r.length)
                ),
                None,
            )
            if row is None:
                row = _Row(self.shapes.bucket_for(size), 0, [])
                rows.append(row)
            row.used += size
            row.members.append(index)
        kept: list[Example] = []
        for length in self.shapes.buckets:
            same = [r for r in rows if r.length == length]
            per_batch = self.shapes.rows(length)
            whole = len(same) - len(same) % per_batch
            for start in range(0, whole, per_batch):
                yield _planned(length, per_batch, same[start : start + per_batch], examples)
            rest = same[whole:]
            if rest and final:
                rows_used = self.shapes.partial_rows(length, len(rest))
                yield replace(_planned(length, rows_used, rest, examples), partial=True)
            elif rest:
                kept.extend(examples[i] for r in rest for i in r.members)
        self._pending = kept
        self._tokens = sum(example.length for example in kept)


def _planned(length: int, rows: int, packed: list[_Row], examples: list[Example]) -> Planned:
    members = [(row_index, i) for row_index, row in enumerate(packed) for i in row.members]
    return Planned(length, rows, [examples[i] for _, i in members], [row for row, _ in members])
