"""Attention cases: shapes, dtypes, head layouts and masks, and their random inputs."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

from seamline.contracts.attention import AttentionSpec, SegmentIds

ABSENT_SEGMENT = 7
"""A query segment id that no key has: those queries have nothing to attend to."""


@dataclass(frozen=True)
class AttentionCase:
    """One call of the suite: shapes, dtype and mask kind, and the seed of its inputs."""

    batch: int = 1
    q_len: int = 64
    kv_len: int = 64
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 64
    dtype: str = "float32"
    causal: bool = False
    segmented: bool = False
    seed: int = 0

    def spec(self) -> AttentionSpec:
        device = jax.devices()[0]
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
            jax.default_backend(),
            str(device.device_kind),
        )

    def describe(self) -> str:
        """The case in words, naming the features it exercises (what a failure is about)."""
        features = []
        if self.kv_heads != self.heads:
            features.append(f"grouped queries {self.heads}/{self.kv_heads}")
        if self.causal:
            features.append("causal")
        if self.segmented:
            features.append("segment ids")
        if self.q_len != self.kv_len:
            features.append("Tq != Tk")
        layout = (
            f"B={self.batch} Tq={self.q_len} Tk={self.kv_len} N={self.heads} "
            f"K={self.kv_heads} H={self.head_dim} {self.dtype}"
        )
        return f"{layout} [{', '.join(features) or 'no mask'}]"


#: Every feature of the contract on its own and in the combinations kernels get wrong.
FEATURE_CASES: dict[str, AttentionCase] = {
    "plain-f32": AttentionCase(),
    "plain-bf16": AttentionCase(dtype="bfloat16"),
    "batch-2-odd-length": AttentionCase(batch=2, q_len=33, kv_len=33),
    "grouped-queries": AttentionCase(heads=4, kv_heads=2),
    "multi-query": AttentionCase(heads=4, kv_heads=1),
    "causal": AttentionCase(causal=True),
    "segment-ids": AttentionCase(batch=2, segmented=True),
    "causal-segment-ids": AttentionCase(batch=2, causal=True, segmented=True),
    "cross-lengths": AttentionCase(q_len=32, kv_len=96),
    "cross-segment-ids": AttentionCase(batch=2, q_len=32, kv_len=96, segmented=True),
    "head-dim-128": AttentionCase(head_dim=128, heads=2, kv_heads=2),
    "bf16-grouped-causal-segments": AttentionCase(
        batch=2, heads=4, kv_heads=2, dtype="bfloat16", causal=True, segmented=True
    ),
}


@st.composite
def attention_cases(draw: st.DrawFn) -> AttentionCase:
    """Random cases (bounded sizes: interpreted kernels are slow)."""
    kv_heads = draw(st.sampled_from([1, 2, 4]))
    causal = draw(st.booleans())
    q_len = draw(st.sampled_from([8, 16, 24, 40, 64, 128]))
    kv_len = draw(st.sampled_from([q_len, q_len, 16, 48, 128]))
    return AttentionCase(
        batch=draw(st.integers(1, 2)),
        q_len=q_len,
        kv_len=kv_len,
        heads=kv_heads * draw(st.sampled_from([1, 2])),
        kv_heads=kv_heads,
        head_dim=draw(st.sampled_from([32, 64, 128])),
        dtype=draw(st.sampled_from(["float32", "bfloat16"])),
        causal=causal,
        segmented=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


def _segment_rows(rng: np.random.Generator, batch: int, length: int) -> np.ndarray:
    """Per row: two packed segments (1, 2) and trailing padding (0), cut at random places."""
    rows = []
    for _ in range(batch):
        end = int(rng.integers(max(1, length // 2), length + 1))
        split = int(rng.integers(1, end + 1))
        row = np.zeros(length, np.int32)
        row[:split] = 1
        row[split:end] = 2
        rows.append(row)
    return np.stack(rows)


def segment_ids(case: AttentionCase) -> SegmentIds | None:
    if not case.segmented:
        return None
    rng = np.random.default_rng(case.seed + 1)
    if case.q_len == case.kv_len:
        same = _segment_rows(rng, case.batch, case.q_len)
        return SegmentIds(jnp.asarray(same), jnp.asarray(same))
    q_ids = _segment_rows(rng, case.batch, case.q_len)
    kv_ids = _segment_rows(rng, case.batch, case.kv_len)
    return SegmentIds(jnp.asarray(q_ids), jnp.asarray(kv_ids))


def inputs(case: AttentionCase) -> tuple[jax.Array, jax.Array, jax.Array, SegmentIds | None]:
    """Standard-normal q, k, v in the case's dtype (logits of unit scale), and segment ids."""
    rng = np.random.default_rng(case.seed)
    q = rng.standard_normal((case.batch, case.q_len, case.heads, case.head_dim))
    k = rng.standard_normal((case.batch, case.kv_len, case.kv_heads, case.head_dim))
    v = rng.standard_normal((case.batch, case.kv_len, case.kv_heads, case.head_dim))
    dtype = jnp.dtype(case.dtype)
    return (
        jnp.asarray(q, dtype),
        jnp.asarray(k, dtype),
        jnp.asarray(v, dtype),
        segment_ids(case),
    )
