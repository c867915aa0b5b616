"""Buckets bound both the number of compiled shapes and the examples held in memory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seamline.contracts import Example
from seamline.core.batching import Bucketer, default_buckets


def example(i: int, length: int) -> Example:
    return Example(f"d{i}", 0, (0, 1), length, {"ids": np.zeros(length)})


def test_default_buckets() -> None:
    assert default_buckets(256) == [16, 32, 64, 128, 256]
    assert default_buckets(100) == [16, 32, 64, 100]
    assert default_buckets(8) == [8]


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 256), max_size=400),
    batch_size=st.integers(1, 16),
)
def test_every_example_comes_out_once_and_memory_is_bounded(
    lengths: list[int], batch_size: int
) -> None:
    buckets = default_buckets(256)
    bucketer = Bucketer(buckets, batch_size)
    out: list[tuple[int, list[Example]]] = []
    for i, length in enumerate(lengths):
        out.extend(bucketer.add(example(i, length)))
        held = sum(len(p) for p in bucketer._pending.values())
        assert held <= len(buckets) * (batch_size - 1)
    out.extend(bucketer.flush())
    seen = [ex.doc_id for _, batch in out for ex in batch]
    assert sorted(seen) == sorted(f"d{i}" for i in range(len(lengths)))
    for bucket, batch in out:
        assert bucket in buckets
        assert 1 <= len(batch) <= batch_size
        assert all(ex.length <= bucket for ex in batch)
        # The smallest bucket that fits: never padded further than needed.
        assert all(bucket == min(b for b in buckets if b >= ex.length) for ex in batch)


def test_too_long_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than the largest bucket 32"):
        list(Bucketer([16, 32], 4).add(example(0, 33)))
