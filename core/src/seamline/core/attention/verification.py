"""Checking an attention against the reference: before trusting it with a shape, and after.

On first use of a shape signature, the chosen implementation and the reference
attend over the same random probe (the spec's exact shapes and dtype; with
segment ids when the model uses them: two packed segments and a padding tail)
and their outputs are compared (:func:`verify`). In shadow mode, the model's
outputs with the chosen implementation and with the reference are compared on
real batches (:func:`compare_outputs`). The tolerance is the contract's, per dtype.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from seamline.contracts import (
    TOLERANCES,
    Attention,
    AttentionSpec,
    RelativeBias,
    SegmentIds,
    relative_position_buckets,
)
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


def _on_device(array: np.ndarray) -> jax.Array:
    """``array`` on the default device as it is: a transfer, not a computation.

    ``jnp.asarray`` of a host array compiles a small program per shape (and one more
    per dtype conversion); on a GPU a compilation costs 0.2 s even for an add (H200,
    benchmarks/results/h200/), once per shape a run meets, so the probe is made on the
    host in its final dtype and only put on the device.
    """
    placed: jax.Array = jax.device_put(array)
    return placed


def probe(spec: AttentionSpec, seed: int = 0) -> tuple[Any, Any, Any, SegmentIds | None]:
    """Random inputs of exactly ``spec``'s shapes and dtype (segments: :func:`probe_segments`)."""
    rng = np.random.default_rng(seed)
    dtype = jnp.dtype(spec.dtype)  # numpy's own, or ml_dtypes' for bfloat16

    def normal(*shape: int) -> jax.Array:
        return _on_device(rng.normal(size=shape).astype(dtype))

    q = normal(spec.batch, spec.q_len, spec.num_heads, spec.head_dim)
    k = normal(spec.batch, spec.kv_len, spec.num_kv_heads, spec.head_dim)
    v = normal(spec.batch, spec.kv_len, spec.num_kv_heads, spec.head_dim)
    if not spec.segmented:
        return q, k, v, None
    cuts = probe_cuts(spec.batch, seed)
    q_ids, kv_ids = probe_segments(cuts, spec.q_len), probe_segments(cuts, spec.kv_len)
    return q, k, v, SegmentIds(_on_device(q_ids), _on_device(kv_ids))


MOST_PROBE_SEGMENTS = 40
"""The most packed documents a probe row holds: more than a real row (``bert-encoder``
packs up to 32 into 256 positions), so that a kernel keeping only the first 8 apart, or
2, is caught."""


def probe_cuts(batch: int, seed: int = 0) -> list[np.ndarray]:
    """Where each probe row's packed documents end, as fractions of its real length: rows
    of 1 to :data:`MOST_PROBE_SEGMENTS` documents of uneven lengths, each row its own.

    A probe of two segments laid out alike in every row passed kernels that kept only
    row 0's segment ids for every row, or only the first 8 documents of a row apart, and
    the run wrote their wrong vectors (cosine 0.45 against the reference), exit 0.
    """
    rng = np.random.default_rng(seed + 1)
    counts = [1 + (3 + 7 * row) % MOST_PROBE_SEGMENTS for row in range(batch)]
    counts[0] = max(counts[0], min(MOST_PROBE_SEGMENTS, 12))  # the first row packs many too
    return [np.sort(rng.random(count - 1)) for count in counts]


def probe_segments(cuts: Sequence[np.ndarray], length: int) -> np.ndarray:
    """Segment ids of ``length`` positions for each row of ``cuts``: ids distinct across
    rows (row ``r``'s documents are ``r * MOST_PROBE_SEGMENTS + 1``, ``+ 2``, ...), and a
    padding tail (id 0) in every other row, as a padded batch has."""
    ids = np.zeros((len(cuts), length), np.int32)
    for row, fractions in enumerate(cuts):
        real = length if row % 2 else max(1, (length * 7) // 8)
        bounds = np.unique(np.concatenate([[0], (fractions * real).astype(np.int64), [real]]))
        first = row * MOST_PROBE_SEGMENTS + 1
        for number, (start, end) in enumerate(itertools.pairwise(bounds)):
            ids[row, start:end] = first + number
    return ids


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
    table = rng.normal(size=(PROBE_BUCKETS, spec.num_heads)).astype(np.float32)
    # RelativeBias.bucketed's lookup, done on the host (on the device it would compile).
    values = _on_device(np.take(table, relative_position_buckets(PROBE_BUCKETS, 128), axis=0))

    def positions(ids: jax.Array | None, length: int, start: int) -> jax.Array:
        if ids is None:
            row = np.arange(start, start + length, dtype=np.int32)
            return _on_device(np.tile(row, (spec.batch, 1)))
        rows = np.asarray(ids)
        starts = np.concatenate([np.ones((len(rows), 1), bool), rows[:, 1:] != rows[:, :-1]], 1)
        first = np.maximum.accumulate(np.where(starts, np.arange(length), 0), axis=1)
        return _on_device((np.arange(length) - first).astype(np.int32))

    q_start = spec.kv_len - spec.q_len if segments is None else 0
    q_positions = positions(None if segments is None else segments.q, spec.q_len, q_start)
    kv_positions = positions(None if segments is None else segments.kv, spec.kv_len, 0)
    return RelativeBias(values, q_positions, kv_positions)


def verify(
    candidate: Attention[Any], reference: Attention[Any], specs: Sequence[AttentionSpec]
) -> Verdict:
    """The largest difference from the reference over a probe of every spec.

    One program per spec computes both outputs (one compilation, or one compile-cache
    load on a warm run, instead of two), and they are compared on the host: on the
    device the comparison's five elementwise steps would each compile per shape (on a
    GPU, 0.2 s or more each) for a single use.
    """
    worst, tolerance = 0.0, min(tolerance_for(spec.dtype) for spec in specs)
    for spec in specs:
        q, k, v, segments = probe(spec)
        bias = probe_bias(spec, segments)
        candidate_out, reference_out = _run(
            (candidate, reference), q, k, v, segments, spec.causal, bias
        )
        worst = max(worst, _largest_difference(candidate_out, reference_out))
    return Verdict(worst, tolerance)


def compare_outputs(
    outputs: np.ndarray, expected: np.ndarray, rows: Sequence[int], specs: Sequence[AttentionSpec]
) -> Verdict:
    """The largest difference over the output ``rows`` of real examples (others are padding)."""
    chosen = list(rows)
    error = _largest_difference(outputs[chosen], expected[chosen])
    return Verdict(error, min(tolerance_for(spec.dtype) for spec in specs))


def _largest_difference(outputs: np.ndarray, expected: np.ndarray) -> float:
    """The largest absolute difference; a NaN anywhere counts as infinite (a NaN compares
    false against any tolerance, so it must not pass as a small error)."""
    error = float(np.max(np.abs(outputs - expected), initial=0.0))
    return float("inf") if np.isnan(error) else error


def _run(
    attentions: tuple[Attention[Any], Attention[Any]],
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    segments: SegmentIds | None,
    causal: bool,
    bias: RelativeBias | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Both ``attentions`` on the probe in one jitted program, each checked as the model
    would call it; their outputs on the host, in float32.

    A kernel that fails to trace or compile fails the program, as it would alone.
    """
    first, second = CheckedAttention(attentions[0]), CheckedAttention(attentions[1])

    def verification(q: jax.Array, k: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array]:
        options: dict[str, Any] = {"segment_ids": segments, "causal": causal, "bias": bias}
        return first(q, k, v, **options), second(q, k, v, **options)

    outputs = jax.device_get(jax.jit(verification)(q, k, v))
    return np.asarray(outputs[0]).astype(np.float32), np.asarray(outputs[1]).astype(np.float32)
