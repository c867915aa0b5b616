"""The bfloat16 kernel (``cpu_flash_bf16.inc``): chosen where the CPU has it, and right.

It has its own copy of every step (pair layouts, a vectorised copy for head dimensions
of whole 16-value vectors and a scalar one elsewhere, rounded weights, a rounded output),
so each shortcut the float32 tests cover is covered here again in bfloat16, against
the suite's float64 yardstick, with the float32 kernel's error on the same inputs
(widened, ``isa: avx512``) as the measure of what bfloat16 inputs allow. The choice of
kernel is checked on the compiled program: a test that only compared numbers would
pass with either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import seamline_cpu_flash._library as library
from seamline_cpu_flash import CpuFlashAttention

from seamline.contracts import SegmentIds
from seamline.contracts.testing import (
    AttentionCase,
    attention_bias,
    attention_inputs,
    dense_attention,
    exact_attention,
)

NATIVE = CpuFlashAttention(CpuFlashAttention.Config())
ONE_THREAD = CpuFlashAttention(CpuFlashAttention.Config(threads=1))
WIDENED = CpuFlashAttention(CpuFlashAttention.Config(isa="avx512"))

needs_bf16 = pytest.mark.skipif(
    library.best_isa() < library.ISA_LEVELS["avx512-bf16"],
    reason="this CPU has no bfloat16 dot products (avx512_bf16): the kernel never runs here",
)


def _targets(attention: CpuFlashAttention, *arrays: jax.Array, **kwargs: Any) -> set[str]:
    """The cpu-flash FFI targets the compiled call invokes."""
    text = jax.jit(lambda q, k, v: attention(q, k, v, **kwargs)).lower(*arrays).as_text()
    return {name for name in (library.TARGET, library.BF16_TARGET) if f"@{name}(" in text}


def _error(out: jax.Array, expected: np.ndarray) -> float:
    finite = np.isfinite(expected)
    return float(np.max(np.abs(np.asarray(out, np.float64)[finite] - expected[finite])))


def _bf16(shape: tuple[int, ...], seed: int) -> jax.Array:
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape), jnp.bfloat16)


def _compare(call: Callable[[CpuFlashAttention], jax.Array], expected: np.ndarray) -> None:
    """The bfloat16 kernel's answer is bfloat16 and as close as the widened kernel's.

    Both round the output to bfloat16 (half an ulp: up to 2**-9 relative); the bfloat16
    kernel also rounds the softmax weights, which the contract's dense reference does
    too. Measured: its error is 0.9-1.2x the widened kernel's on these cases.
    """
    native, widened = call(NATIVE), call(WIDENED)
    assert native.dtype == jnp.bfloat16
    assert _error(native, expected) <= 1.5 * _error(widened, expected) + 2e-3


def test_bfloat16_inputs_choose_the_kernel_by_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """bfloat16 goes to the bfloat16 kernel only where the CPU has it; float32 never does."""
    q, k, v, _ = attention_inputs(AttentionCase(dtype="bfloat16"))
    monkeypatch.setattr("seamline_cpu_flash.attention.best_isa", lambda: 3)
    assert _targets(NATIVE, q, k, v) == {library.TARGET}
    monkeypatch.setattr("seamline_cpu_flash.attention.best_isa", lambda: 4)
    assert _targets(NATIVE, q, k, v) == {library.BF16_TARGET}
    assert _targets(WIDENED, q, k, v) == {library.TARGET}
    wide = [x.astype(jnp.float32) for x in (q, k, v)]
    assert _targets(NATIVE, *wide) == {library.TARGET}


@needs_bf16
@pytest.mark.parametrize(
    "case",
    [
        AttentionCase(dtype="bfloat16"),
        AttentionCase(batch=2, heads=4, kv_heads=2, dtype="bfloat16", causal=True, segmented=True),
        AttentionCase(batch=2, q_len=45, kv_len=45, dtype="bfloat16", segmented=True, biased=True),
        AttentionCase(
            batch=1,
            q_len=7,
            kv_len=33,
            heads=3,
            kv_heads=1,
            dtype="bfloat16",
            causal=True,
            biased=True,
        ),
        # head dimensions off the 16-value vectors take the scalar copy; 520 the heap
        AttentionCase(
            batch=2,
            q_len=19,
            kv_len=19,
            heads=2,
            kv_heads=1,
            head_dim=20,
            dtype="bfloat16",
            segmented=True,
        ),
        AttentionCase(
            batch=1, q_len=21, kv_len=37, heads=2, kv_heads=2, head_dim=40, dtype="bfloat16"
        ),
        AttentionCase(
            batch=1, q_len=9, kv_len=9, heads=1, kv_heads=1, head_dim=520, dtype="bfloat16"
        ),
    ],
    ids=lambda case: case.describe(),
)
def test_matches_the_exact_answer_as_closely_as_the_widened_kernel(case: AttentionCase) -> None:
    q, k, v, ids = attention_inputs(case)
    bias = attention_bias(case)
    kwargs = {"segment_ids": ids, "causal": case.causal, "bias": bias}
    expected = exact_attention(q, k, v, **kwargs)
    _compare(lambda attention: jax.jit(lambda q, k, v: attention(q, k, v, **kwargs))(q, k, v),
             expected)  # fmt: skip
    dense = np.asarray(dense_attention(q, k, v, **kwargs), np.float64)
    assert _error(NATIVE(q, k, v, **kwargs), expected) < _error(jnp.asarray(dense), expected)


@needs_bf16
def test_long_keys_and_scratch_given_back() -> None:
    """20k keys: the pair layouts grow past the kept 4 MiB and are given back, twice."""
    q, k, v = _bf16((1, 8, 2, 64), 4), _bf16((1, 20_000, 2, 64), 5), _bf16((1, 20_000, 2, 64), 6)
    expected = exact_attention(q, k, v, causal=True)
    for _ in range(2):
        _compare(lambda attention: attention(q, k, v, causal=True), expected)


@needs_bf16
def test_a_visible_non_finite_value_shows_and_a_hidden_one_does_not() -> None:
    """Head 0: a NaN value segment 1 sees. Head 1: a NaN value and an infinite key of
    segment 2 inside the vector block (keys 8-15) that segment 1's rows also compute:
    segment 1 must not see them."""
    segments = jnp.asarray(np.array([[1] * 10 + [2] * 10], np.int32))
    q, k, v = (_bf16((1, 20, 2, 32), seed) for seed in (7, 8, 9))
    v = v.at[0, 3, 0, 5].set(jnp.nan)
    v = v.at[0, 12, 1, 7].set(jnp.nan)
    k = k.at[0, 13, 1, 2].set(jnp.inf)
    ids = SegmentIds(segments, segments)
    out = np.asarray(NATIVE(q, k, v, segment_ids=ids), np.float32)
    assert np.isnan(out[0, :10, 0]).all()
    assert np.isfinite(out[0, 10:, 0]).all()
    assert np.isnan(out[0, 10:, 1]).all()
    assert np.isfinite(out[0, :10, 1]).all()


@needs_bf16
def test_a_nan_query_makes_its_own_row_nan() -> None:
    q, k, v = (_bf16((1, 16, 1, 32), seed) for seed in (14, 15, 16))
    q = q.at[0, 2, 0, 0].set(jnp.nan)
    out = np.asarray(NATIVE(q, k, v), np.float32)
    assert np.isnan(out[0, 2]).all()
    assert np.isfinite(np.delete(out[0], 2, axis=0)).all()


@needs_bf16
def test_the_thread_split_does_not_change_a_bit() -> None:
    case = AttentionCase(batch=3, q_len=100, kv_len=100, heads=6, kv_heads=3, segmented=True,
                         dtype="bfloat16")  # fmt: skip
    q, k, v, ids = attention_inputs(case)
    a = np.asarray(NATIVE(q, k, v, segment_ids=ids), np.float32)
    b = np.asarray(ONE_THREAD(q, k, v, segment_ids=ids), np.float32)
    assert np.array_equal(a, b)


@needs_bf16
def test_packed_rows_match_documents_attended_alone() -> None:
    lengths = (5, 17, 42)
    docs = [(_bf16((1, n, 2, 32), 10 + n), _bf16((1, n, 2, 32), 20 + n)) for n in lengths]
    packed_q = jnp.concatenate([q for q, _ in docs], axis=1)
    packed_kv = jnp.concatenate([kv for _, kv in docs], axis=1)
    segments = jnp.asarray(np.concatenate([np.full(n, i, np.int32) for i, n in enumerate(lengths)]))
    ids = SegmentIds(segments[None], segments[None])
    packed = np.asarray(NATIVE(packed_q, packed_kv, packed_kv, segment_ids=ids), np.float32)
    start = 0
    for (q, kv), n in zip(docs, lengths, strict=True):
        alone = np.asarray(NATIVE(q, kv, kv), np.float32)
        np.testing.assert_array_equal(packed[:, start : start + n], alone)
        start += n


@needs_bf16
def test_no_keys_give_zeros_and_no_queries_an_empty_answer() -> None:
    q, kv = _bf16((2, 5, 2, 32), 17), _bf16((2, 0, 2, 32), 18)
    out = NATIVE(q, kv, kv)
    assert out.dtype == jnp.bfloat16
    assert not np.asarray(out, np.float32).any()
    assert NATIVE(_bf16((2, 0, 2, 32), 19), q, q).shape == (2, 0, 2, 32)
