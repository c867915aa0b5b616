"""``native`` against an independent reference: ``jax.nn.dot_product_attention``.

Hypothesis draws the shapes (batch, lengths, grouped heads, head size) and the
masks; the reference receives the same mask spelled out explicitly and K/V heads
repeated for grouped queries. A row with no allowed key must be zeros, not NaN.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.contracts import SegmentIds

ATTENTION = NativeAttention(NativeConfig())
TOLERANCE = {"float32": 2e-6, "bfloat16": 2e-2}


def reference(q, k, v, segments, causal):  # type: ignore[no-untyped-def]
    group = q.shape[2] // k.shape[2]
    k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
    q_len, kv_len = q.shape[1], k.shape[1]
    mask = jnp.ones((q.shape[0], 1, q_len, kv_len), bool)
    if segments is not None:
        mask &= (segments.q[:, :, None] == segments.kv[:, None, :])[:, None]
    if causal:
        mask &= (jnp.arange(kv_len)[None, :] <= jnp.arange(q_len)[:, None] + kv_len - q_len)[
            None, None
        ]
    f32 = [x.astype(jnp.float32) for x in (q, k, v)]
    out = jax.nn.dot_product_attention(*f32, mask=mask)
    # The reference gives a uniform average for rows with no allowed key; the contract says 0.
    empty = ~mask.any(-1)[:, 0, :, None, None]
    return jnp.where(empty, 0.0, out)


@functools.cache
def compare(causal: bool, segmented: bool) -> Callable[..., tuple[jax.Array, jax.Array]]:
    """One jitted function per mask kind: shapes recompile, but nothing else does."""

    def both(q, k, v, seg_q, seg_kv):  # type: ignore[no-untyped-def]
        segments = SegmentIds(seg_q, seg_kv) if segmented else None
        return ATTENTION(q, k, v, segment_ids=segments, causal=causal), reference(
            q, k, v, segments, causal
        )

    return jax.jit(both)


@settings(max_examples=12, deadline=None)
@given(
    batch=st.integers(1, 2),
    q_len=st.sampled_from([1, 5, 16]),
    kv_extra=st.sampled_from([0, 3]),
    kv_heads=st.sampled_from([1, 2]),
    group=st.sampled_from([1, 3]),
    head_dim=st.sampled_from([8, 32]),
    causal=st.booleans(),
    segmented=st.booleans(),
    dtype=st.sampled_from(["float32", "bfloat16"]),
    seed=st.integers(0, 2**16),
)
def test_matches_reference(
    batch: int,
    q_len: int,
    kv_extra: int,
    kv_heads: int,
    group: int,
    head_dim: int,
    causal: bool,
    segmented: bool,
    dtype: str,
    seed: int,
) -> None:
    kv_len = q_len + kv_extra
    rng = np.random.default_rng(seed)
    q = jnp.asarray(rng.normal(size=(batch, q_len, kv_heads * group, head_dim)), dtype)
    k = jnp.asarray(rng.normal(size=(batch, kv_len, kv_heads, head_dim)), dtype)
    v = jnp.asarray(rng.normal(size=(batch, kv_len, kv_heads, head_dim)), dtype)
    seg_q = jnp.asarray(rng.integers(0, 3, (batch, q_len)))
    seg_kv = jnp.asarray(rng.integers(0, 3, (batch, kv_len)))
    out, expected = compare(causal, segmented)(q, k, v, seg_q, seg_kv)
    assert out.shape == q.shape
    assert out.dtype == q.dtype
    assert not jnp.isnan(out).any()
    error = float(jnp.max(jnp.abs(out.astype(jnp.float32) - expected)))
    assert error <= TOLERANCE[dtype], error


def test_fully_masked_rows_are_zero() -> None:
    q = jnp.ones((1, 3, 2, 4))
    segments = SegmentIds(jnp.array([[1, 2, 9]]), jnp.array([[1, 2, 2]]))
    out = ATTENTION(q, q, q, segment_ids=segments)
    np.testing.assert_array_equal(np.asarray(out[0, 2]), np.zeros((2, 4)))
    assert np.abs(np.asarray(out[0, :2])).sum() > 0


def test_nan_in_masked_positions_does_not_leak() -> None:
    q = jax.random.normal(jax.random.key(1), (1, 4, 2, 8))
    poisoned = q.at[0, 3].set(jnp.nan)
    segments = SegmentIds(jnp.array([[1, 1, 1, 0]]), jnp.array([[1, 1, 1, 0]]))
    clean = ATTENTION(q, q, q, segment_ids=segments)[0, :3]
    dirty = ATTENTION(poisoned, poisoned, poisoned, segment_ids=segments)[0, :3]
    np.testing.assert_array_equal(np.asarray(clean), np.asarray(dirty))
