"""Shape buckets: few compilations, little padding, bounded memory.

Examples wait in the bucket of the smallest length that fits them; a bucket is
released as a batch when it holds ``batch_size`` examples, and every bucket is
flushed at the end. At most ``len(buckets) * batch_size`` examples are held, so
memory does not grow with the corpus, and each bucket is one compiled shape.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from seamline.contracts import Example


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


class Bucketer:
    """Groups examples by padded length into fixed-size batches."""

    def __init__(self, buckets: Sequence[int], batch_size: int) -> None:
        self.buckets = sorted(set(buckets))
        self.batch_size = batch_size
        self._pending: dict[int, list[Example]] = {b: [] for b in self.buckets}

    def bucket_for(self, length: int) -> int:
        index = bisect.bisect_left(self.buckets, length)
        if index == len(self.buckets):
            raise ValueError(
                f"an example of length {length} is longer than the largest bucket "
                f"{self.buckets[-1]}"
            )
        return self.buckets[index]

    def add(self, example: Example) -> Iterator[tuple[int, list[Example]]]:
        """Add one example; yield ``(length, examples)`` if its bucket became full."""
        bucket = self.bucket_for(example.length)
        pending = self._pending[bucket]
        pending.append(example)
        if len(pending) == self.batch_size:
            self._pending[bucket] = []
            yield bucket, pending

    def flush(self) -> Iterator[tuple[int, list[Example]]]:
        """Yield every partly filled bucket, shortest first."""
        for bucket in self.buckets:
            pending = self._pending[bucket]
            if pending:
                self._pending[bucket] = []
                yield bucket, pending
