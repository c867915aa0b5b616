"""``native``: attention written plainly in XLA, the reference every other kernel is held to.

It materialises the full ``[B, N, Tq, Tk]`` score matrix, so its memory grows with
the square of the sequence length; what it buys is obviousness. Scores and softmax
are computed in float32 whatever the input dtype, so the reference is at least as
accurate as anything compared with it.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from seamline.contracts import Attention, AttentionSpec, ComponentConfig, SegmentIds, Support


class NativeConfig(ComponentConfig):
    """``native`` has nothing to configure."""


class NativeAttention(Attention[NativeConfig]):
    """Reference attention: einsum, masked softmax in float32, einsum."""

    name: ClassVar[str] = "native"
    contract_version: ClassVar[str] = "1.0"
    Config: ClassVar[type[ComponentConfig]] = NativeConfig
    auto_priority: ClassVar[int] = 0

    def supports(self, spec: AttentionSpec) -> Support:
        if spec.num_heads % spec.num_kv_heads:
            return Support.no(
                f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
            )
        if spec.dtype not in ("float32", "bfloat16", "float16"):
            return Support.no(f"dtype {spec.dtype} is not a floating type it computes in")
        return Support.yes()

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        return reference_attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)


def attention_mask(
    q_len: int, kv_len: int, segment_ids: SegmentIds | None, causal: bool
) -> jax.Array | None:
    """Boolean ``[B or 1, 1, Tq, Tk]`` mask of allowed (query, key) pairs, or None for all."""
    mask: jax.Array | None = None
    if segment_ids is not None:
        mask = (segment_ids.q[:, :, None] == segment_ids.kv[:, None, :])[:, None]
    if causal:
        # Queries are aligned to the end of the keys, so cached-prefix decoding works too.
        offset = kv_len - q_len
        rows = jnp.arange(q_len)[:, None] + offset
        cols = jnp.arange(kv_len)[None, :]
        causal_mask = (cols <= rows)[None, None]
        mask = causal_mask if mask is None else mask & causal_mask
    return mask


def reference_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    segment_ids: SegmentIds | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> jax.Array:
    """Plain attention with the contract's semantics (see ``seamline.contracts.attention``)."""
    batch, q_len, heads, head_dim = q.shape
    kv_len, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    scale = head_dim**-0.5 if scale is None else scale
    # Grouped queries: view the query heads as [K, group] so each group reads its own K/V head.
    qg = q.reshape(batch, q_len, kv_heads, group, head_dim)
    scores = jnp.einsum(
        "bqkgh,bskh->bkgqs", qg, k, preferred_element_type=jnp.float32
    ) * jnp.float32(scale)
    scores = scores.reshape(batch, heads, q_len, kv_len)
    mask = attention_mask(q_len, kv_len, segment_ids, causal)
    if mask is not None:
        scores = jnp.where(mask, scores, -jnp.inf)
    row_max = jnp.max(scores, axis=-1, keepdims=True)
    # A row with no allowed key has max -inf: shift by 0 instead, so exp gives 0, not NaN.
    row_max = jnp.where(jnp.isfinite(row_max), row_max, 0.0)
    weights = jnp.exp(scores - row_max)
    denom = jnp.sum(weights, axis=-1, keepdims=True)
    probs = weights / jnp.where(denom == 0.0, 1.0, denom)
    probs = probs.reshape(batch, kv_heads, group, q_len, kv_len)
    values = v.astype(jnp.float32)
    # A zero weight times a NaN value is NaN, so a masked key's garbage (NaN-filled
    # padding, say) would leak into every row through the matmul. Values are
    # cleaned before it; rows that do give weight to a non-finite value are
    # poisoned afterwards, so a real NaN still shows. The extra einsum costs 1/H
    # of the main one.
    finite = jnp.isfinite(values)
    out = jnp.einsum("bkgqs,bskh->bqkgh", probs, jnp.where(finite, values, 0.0))
    broken = (~finite).any(axis=-1).astype(jnp.float32)  # [B, Tk, K]
    poisoned = jnp.einsum("bkgqs,bsk->bqkg", (probs > 0).astype(jnp.float32), broken) > 0
    out = jnp.where(poisoned[..., None], jnp.nan, out)
    return out.reshape(batch, q_len, heads, head_dim).astype(q.dtype)
