"""Shared checks for attention implementations: the same inputs, compared with ``native``.

Tolerances are per dtype and written down here once: float32 kernels that reorder
the sum (online softmax, blocked matmuls) agree with the reference to a few 1e-6;
bfloat16 carries about 3 significant digits, and one bfloat16 step is already
1.6e-2 for outputs between 2 and 4 (jax.nn rounds the softmax weights to bfloat16
before the second product), so 5e-2 absolute, the contract's own bfloat16 bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from seamline.components.attention.native import reference_attention
from seamline.contracts import AttentionFn, AttentionSpec, SegmentIds

TOLERANCE = {"float32": 2e-5, "bfloat16": 5e-2, "float16": 1e-2}


@dataclass(frozen=True)
class Case:
    """One attention call to compare: shapes, dtype and mask kind."""

    batch: int = 1
    q_len: int = 128
    kv_len: int = 128
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 64
    dtype: str = "float32"
    causal: bool = False
    segmented: bool = False

    def spec(self, platform: str = "cpu", device_kind: str = "cpu") -> AttentionSpec:
        return AttentionSpec(
            self.batch,
            self.q_len,
            self.kv_len,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.dtype,
            self.causal,
            self.segmented,
            platform,
            device_kind,
        )


def inputs(case: Case, seed: int = 0) -> tuple[jax.Array, jax.Array, jax.Array, SegmentIds | None]:
    """Random q, k, v and (for segmented cases) padding-like segment ids with a packed tail."""
    rng = np.random.default_rng(seed)
    shape_q = (case.batch, case.q_len, case.heads, case.head_dim)
    shape_kv = (case.batch, case.kv_len, case.kv_heads, case.head_dim)
    q = jnp.asarray(rng.normal(size=shape_q), case.dtype)
    k = jnp.asarray(rng.normal(size=shape_kv), case.dtype)
    v = jnp.asarray(rng.normal(size=shape_kv), case.dtype)
    if not case.segmented:
        return q, k, v, None

    def ids(length: int) -> np.ndarray:
        # Two packed documents and trailing padding (segment 0) of random extent per row.
        rows = []
        for _ in range(case.batch):
            cut = rng.integers(1, length + 1)
            split = rng.integers(0, cut + 1)
            row = np.zeros(length, np.int32)
            row[:split] = 1
            row[split:cut] = 2
            rows.append(row)
        return np.stack(rows)

    if case.q_len == case.kv_len:
        same = jnp.asarray(ids(case.q_len))
        return q, k, v, SegmentIds(same, same)
    return q, k, v, SegmentIds(jnp.asarray(ids(case.q_len)), jnp.asarray(ids(case.kv_len)))


def max_error(
    attention: AttentionFn | Callable[..., jax.Array], case: Case, seed: int = 0
) -> float:
    """Largest absolute difference from the reference, both jitted, on one random input."""
    q, k, v, segments = inputs(case, seed)

    def candidate(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return attention(q, k, v, segment_ids=segments, causal=case.causal)

    def reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return reference_attention(q, k, v, segment_ids=segments, causal=case.causal)

    out = jax.jit(candidate)(q, k, v)
    assert out.shape == q.shape, (out.shape, q.shape)
    assert out.dtype == q.dtype, (out.dtype, q.dtype)
    expected = jax.jit(reference)(q, k, v)
    return float(jnp.max(jnp.abs(out.astype(jnp.float32) - expected.astype(jnp.float32))))
