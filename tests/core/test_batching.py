"""Batches bound the compiled shapes and the examples held; packing keeps every example once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seamline.contracts import Example
from seamline.core.batching import BatchShapes, Bucketer, Packer, Planned, default_buckets


def example(i: int, length: int) -> Example:
    return Example(f"d{i}", 0, (0, 1), length, {"ids": np.zeros(length)})


def shapes(batch_size: int, batch_tokens: int | None = None) -> BatchShapes:
    return BatchShapes(tuple(default_buckets(256)), batch_size, batch_tokens)


def test_default_buckets() -> None:
    assert default_buckets(256) == [16, 32, 64, 128, 256]
    assert default_buckets(100) == [16, 32, 64, 100]
    assert default_buckets(8) == [8]


def test_a_token_budget_gives_short_batches_more_rows() -> None:
    budget = shapes(32, batch_tokens=512)
    assert [budget.rows(b) for b in budget.buckets] == [32, 16, 8, 4, 2]
    assert shapes(32).rows(256) == 32
    assert shapes(32, batch_tokens=100).rows(256) == 1  # never fewer than one row


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 256), max_size=400),
    batch_size=st.integers(1, 16),
)
def test_every_example_comes_out_once_and_memory_is_bounded(
    lengths: list[int], batch_size: int
) -> None:
    layout = shapes(batch_size)
    bucketer = Bucketer(layout)
    out: list[Planned] = []
    for i, length in enumerate(lengths):
        out.extend(bucketer.add(example(i, length)))
        held = sum(len(p) for p in bucketer._pending.values())
        assert held <= len(layout.buckets) * (batch_size - 1)
    out.extend(bucketer.flush())
    seen = [ex.doc_id for planned in out for ex in planned.examples]
    assert sorted(seen) == sorted(f"d{i}" for i in range(len(lengths)))
    for planned in out:
        assert planned.length in layout.buckets
        assert planned.placement is None
        assert 1 <= len(planned.examples) <= batch_size == planned.rows
        # The smallest bucket that fits: never padded further than needed.
        assert all(planned.length == layout.bucket_for(ex.length) for ex in planned.examples)


def _check_packed(planned: Planned, capacity: int) -> None:
    assert planned.placement is not None
    assert len(planned.placement) == len(planned.examples)
    for row in range(planned.rows):
        members = [e for e, r in zip(planned.examples, planned.placement, strict=True) if r == row]
        assert sum(e.length for e in members) <= planned.length
        assert len(members) <= capacity
    assert all(0 <= r < planned.rows for r in planned.placement)


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 256), max_size=400),
    budget=st.sampled_from([256, 512, 1024]),
    capacity=st.integers(1, 8),
    checkpoints=st.lists(st.integers(0, 399), max_size=3),
)
def test_packing_places_every_example_once_within_its_row(
    lengths: list[int], budget: int, capacity: int, checkpoints: list[int]
) -> None:
    layout = shapes(1, batch_tokens=budget)
    packer = Packer(layout, lambda length: capacity)
    out: list[Planned] = []
    for i, length in enumerate(lengths):
        out.extend(packer.add(example(i, length)))
        # Memory stays bounded: a window, plus the rows of unfinished batches.
        held = sum(e.length for e in packer._pending)
        assert held <= packer.window_tokens + 256 + len(layout.buckets) * budget
        if i in checkpoints:
            out.extend(packer.flush())
            assert packer._pending == []
    out.extend(packer.flush())
    seen = [ex.doc_id for planned in out for ex in planned.examples]
    assert sorted(seen) == sorted(f"d{i}" for i in range(len(lengths)))
    for planned in out:
        assert planned.length in layout.buckets
        assert planned.rows == layout.rows(planned.length)
        _check_packed(planned, capacity)


def test_packing_fills_rows_and_pads_little() -> None:
    layout = shapes(1, batch_tokens=512)
    lengths = [((i * 37) % 120) + 5 for i in range(600)]  # 5..124 tokens, mixed
    packer = Packer(layout, lambda length: length // 8)
    out = []
    for i, length in enumerate(lengths):
        out.extend(packer.add(example(i, length)))
    out.extend(packer.flush())
    computed = sum(p.rows * p.length for p in out)
    padded = sum(layout.bucket_for(n) for n in lengths)
    assert computed <= 1.1 * sum(lengths)  # packed: within 10 % of the real tokens
    assert padded >= 1.3 * sum(lengths)  # one per row would compute a third more
    assert len({p.length for p in out}) <= len(layout.buckets)


def test_too_long_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than the largest bucket 32"):
        list(Bucketer(BatchShapes((16, 32), 4)).add(example(0, 33)))
    with pytest.raises(ValueError, match="longer than the largest bucket 32"):
        list(Packer(BatchShapes((16, 32), 4), lambda n: 2).add(example(0, 33)))


def test_a_partial_batch_keeps_its_full_rows_unless_fitted() -> None:
    """A run's last batch of a length keeps the full shape (no compilation of its own); an
    embedder's lone text is computed in the fewest rows that hold it, a power of two."""
    full = shapes(32, batch_tokens=512)
    assert [p.rows for p in Bucketer(full).add(example(0, 20))] == []
    assert [p.rows for p in _flushed(Bucketer(full), [20])] == [16]
    fitted = BatchShapes(full.buckets, 32, 512, fit_partial=True)
    assert [p.rows for p in _flushed(Bucketer(fitted), [20])] == [1]
    assert [p.rows for p in _flushed(Bucketer(fitted), [20, 20, 20])] == [4]
    assert [p.rows for p in _flushed(Bucketer(fitted), [20] * 16)] == [16]  # full: as ever
    packed = Packer(fitted, lambda n: 8)
    assert [p.rows for p in _flushed(packed, [100])] == [1]
    assert [p.rows for p in _flushed(Packer(full, lambda n: 8), [100])] == [4]
    on_two = BatchShapes(full.buckets, 32, 512, multiple=2, fit_partial=True)
    assert [p.rows for p in _flushed(Bucketer(on_two), [20])] == [2]  # a row per device


def test_a_flush_marks_its_partly_filled_batches() -> None:
    """An embedder's pass holds back the partly filled batches of a part of a large request
    (HostWork.batches' ``hold``): they, and only they, are marked, packed or not."""
    fitted = BatchShapes((16, 32), 4, fit_partial=True)
    bucketed = _flushed(Bucketer(fitted), [10] * 5 + [20] * 3)
    assert [(p.length, len(p.examples), p.partial) for p in bucketed] == [
        (16, 4, False),
        (16, 1, True),
        (32, 3, True),
    ]
    # Two examples a row: 9 examples of 16 make 5 rows, a batch of 4 and one of a row.
    packed = _flushed(Packer(fitted, lambda n: 2), [8] * 9)
    assert [(p.rows, len(p.examples), p.partial) for p in packed] == [(4, 8, False), (1, 1, True)]
    whole = _flushed(Packer(fitted, lambda n: 2), [8] * 8)
    assert [p.partial for p in whole] == [False], "a flush's full batch is not held back"


def _flushed(batcher: Bucketer | Packer, lengths: list[int]) -> list[Planned]:
    planned = [p for i, n in enumerate(lengths) for p in batcher.add(example(i, n))]
    return planned + list(batcher.flush())


def test_longest_only_is_the_runs_longest_shape_with_full_rows() -> None:
    """What the precision gate calibrates in: one shape, the one a run uses most."""
    shapes = BatchShapes((16, 64, 256), 4, 1024, multiple=3, fit_partial=True)
    longest = shapes.longest_only()
    assert longest.buckets == (256,)
    assert longest.bucket_for(3) == 256
    assert longest.rows(256) == shapes.rows(256) == 6  # 1024 // 256, rounded up to 3 devices
    assert longest.partial_rows(256, 1) == 6  # a partly filled batch keeps the full rows
    assert shapes.partial_rows(256, 1) == 3
