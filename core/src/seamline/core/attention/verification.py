"""Checking an attention against the reference: before trusting it with a shape, and after.

On first use of a shape signature, the chosen implementation and the reference
attend over the same random probe (the spec's exact shapes and dtype; with
segment ids when the model uses them: two packed segments and a padding tail)
and their outputs are compared (:func:`verify`). In shadow mode, the model's
outputs with the chosen implementation and with the reference are compared on
real batches (:func:`compare_outputs`). The tolerance is the contract's, per dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from seamline.contracts import TOLERANCES, Attention, AttentionSpec, SegmentIds
from seamline.core.attention.checked import CheckedAttention


@dataclass(frozen=True, slots=True)
class Verdict:
    max_error: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return bool(self.max_error <= self.tolerance)


def tolerance_for(dtype: str) -> float:
    return TOLERANCES.get(dtype, TOLERANCES["float32"])


def probe(spec: AttentionSpec, seed: int = 0) -> tuple[Any, Any, Any, SegmentIds | None]:
    """Random inputs of exactly ``spec``'s shapes and dtype."""
    rng = np.random.default_rng(seed)
    q = jnp.asarray(
        rng.normal(size=(spec.batch, spec.q_len, spec.num_heads, spec.head_dim)), spec.dtype
    )
    kv_shape = (spec.batch, spec.kv_len, spec.num_kv_heads, spec.head_dim)
    k = jnp.asarray(rng.normal(size=kv_shape), spec.dtype)
    v = jnp.asarray(rng.normal(size=kv_shape), spec.dtype)
    if not spec.segmented:
        return q, k, v, None

    def ids(length: int) -> jax.Array:
        row = np.zeros(length, np.int32)
        real = max(1, (length * 7) // 8)  # a padding tail, as a padded batch has
        row[: real // 2] = 1
        row[real // 2 : real] = 2  # two packed segments
        return jnp.asarray(np.tile(row, (spec.batch, 1)))

    return q, k, v, SegmentIds(ids(spec.q_len), ids(spec.kv_len))


def verify(
    candidate: Attention[Any], reference: Attention[Any], specs: Sequence[AttentionSpec]
) -> Verdict:
    """The largest difference from the reference over a probe of every spec."""
    worst, tolerance = 0.0, min(tolerance_for(spec.dtype) for spec in specs)
    for spec in specs:
        q, k, v, segments = probe(spec)
        difference = jnp.abs(
            _run(candidate, q, k, v, segments, spec.causal)
            - _run(reference, q, k, v, segments, spec.causal)
        )
        # NaN compares false against any tolerance: count it as an infinite error.
        error = float(jnp.max(jnp.where(jnp.isnan(difference), jnp.inf, difference)))
        worst = max(worst, error)
    return Verdict(worst, tolerance)


def compare_outputs(
    outputs: np.ndarray, expected: np.ndarray, rows: Sequence[int], specs: Sequence[AttentionSpec]
) -> Verdict:
    """The largest difference over the output ``rows`` of real examples (others are padding)."""
    chosen = list(rows)
    error = float(np.max(np.abs(outputs[chosen] - expected[chosen]), initial=0.0))
    if np.isnan(error):
        error = float("inf")
    return Verdict(error, min(tolerance_for(spec.dtype) for spec in specs))


def _run(
    attention: Attention[Any],
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    segments: SegmentIds | None,
    causal: bool,
) -> jax.Array:
    """``attention`` on the probe, jitted and checked as the model would call it, in float32."""
    checked = CheckedAttention(attention)

    def call(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return checked(q, k, v, segment_ids=segments, causal=causal)

    out: jax.Array = jax.jit(call)(q, k, v)
    return out.astype(jnp.float32)
