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

from seamline.contracts import TOLERANCES, Attention, AttentionSpec, RelativeBias, SegmentIds
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


PROBE_BUCKETS = 32
"""Buckets of the probe's relative bias table (T5's and MPNet's count; 128 the reach)."""


def probe_bias(
    spec: AttentionSpec, segments: SegmentIds | None, seed: int = 1
) -> RelativeBias | None:
    """A random relative bias for ``spec``'s probe (None when the spec has no bias).

    Standard-normal bucket values, so a kernel that drops or misplaces the bias is
    caught; positions restart with every run of equal segment ids, as a packed
    row's do, and queries shorter than the keys are aligned to their end.
    """
    if spec.bias is None:
        return None
    rng = np.random.default_rng(seed)
    table = jnp.asarray(rng.normal(size=(PROBE_BUCKETS, spec.num_heads)), jnp.float32)

    def positions(ids: jax.Array | None, length: int, start: int) -> jax.Array:
        if ids is None:
            return jnp.tile(jnp.arange(start, start + length, dtype=jnp.int32), (spec.batch, 1))
        row = np.asarray(ids)[0]
        starts = np.concatenate([[True], row[1:] != row[:-1]])
        first = np.maximum.accumulate(np.where(starts, np.arange(length), 0))
        return jnp.asarray(np.tile(np.arange(length) - first, (spec.batch, 1)), jnp.int32)

    q_start = spec.kv_len - spec.q_len if segments is None else 0
    q_positions = positions(None if segments is None else segments.q, spec.q_len, q_start)
    kv_positions = positions(None if segments is None else segments.kv, spec.kv_len, 0)
    return RelativeBias.bucketed(table, q_positions, kv_positions)


def verify(
    candidate: Attention[Any], reference: Attention[Any], specs: Sequence[AttentionSpec]
) -> Verdict:
    """The largest difference from the reference over a probe of every spec."""
    worst, tolerance = 0.0, min(tolerance_for(spec.dtype) for spec in specs)
    for spec in specs:
        q, k, v, segments = probe(spec)
        bias = probe_bias(spec, segments)
        difference = jnp.abs(
            _run(candidate, q, k, v, segments, spec.causal, bias)
            - _run(reference, q, k, v, segments, spec.causal, bias)
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
    bias: RelativeBias | None = None,
) -> jax.Array:
    """``attention`` on the probe, jitted and checked as the model would call it, in float32."""
    checked = CheckedAttention(attention)

    def call(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return checked(q, k, v, segment_ids=segments, causal=causal, bias=bias)

    out: jax.Array = jax.jit(call)(q, k, v)
    return out.astype(jnp.float32)
