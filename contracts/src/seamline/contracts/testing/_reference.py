"""The suite's own attention implementations, independent of every component under test.

``exact_attention`` is the yardstick: numpy in float64, written from the contract's
definition and nothing else. ``dense_attention`` and ``chunked_attention`` are two
plain JAX implementations that compute the same function in different orders
(all keys at once; keys in chunks with an online softmax); the suite serves models
with both, and measures how far a straightforward computation in a given dtype
lands from the exact answer, which scales the tolerance for that dtype.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from seamline.contracts.attention import RelativeBias, SegmentIds

Float64 = npt.NDArray[np.float64]


def _allowed(
    q_len: int, kv_len: int, segment_ids: tuple[Any, Any] | None, causal: bool, batch: int
) -> npt.NDArray[np.bool_]:
    """``[B, Tq, Tk]``: whether query i may attend to key j, from the contract's definition."""
    allowed = np.ones((batch, q_len, kv_len), dtype=bool)
    if segment_ids is not None:
        q_ids, kv_ids = (np.asarray(ids) for ids in segment_ids)
        allowed &= q_ids[:, :, None] == kv_ids[:, None, :]
    if causal:  # queries are aligned to the end of the keys: key j <= query i + Tk - Tq
        allowed &= np.arange(q_len)[:, None] + (kv_len - q_len) >= np.arange(kv_len)[None, :]
    return allowed


def _exact_bias(bias: RelativeBias | None) -> Float64 | float:
    """``[B, N, Tq, Tk]`` float64: the contract's relative bias of every pair (0 without one)."""
    if bias is None:
        return 0.0
    values = np.asarray(bias.values, dtype=np.float64)
    reach = (values.shape[0] - 1) // 2
    q_pos = np.asarray(bias.q_positions, dtype=np.int64)
    kv_pos = np.asarray(bias.kv_positions, dtype=np.int64)
    distance = np.clip(kv_pos[:, None, :] - q_pos[:, :, None], -reach, reach)  # [B, Tq, Tk]
    added: Float64 = values[distance + reach].transpose(0, 3, 1, 2)
    return added


def exact_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    segment_ids: SegmentIds | None = None,
    causal: bool = False,
    scale: float | None = None,
    bias: RelativeBias | None = None,
) -> Float64:
    """The contract's attention in float64 numpy, written from its definition and nothing else.

    The yardstick of the conformance suite, public so that a kernel's own tests
    compare with the same answer. Rows with no allowed key are zeros. A key no query
    may attend does not matter whatever it holds (NaN-filled padding, say); an
    allowed non-finite key or value makes its rows NaN, as the contract gives.
    """
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    batch, q_len, heads, head_dim = q64.shape
    kv_len, kv_heads = k64.shape[1], k64.shape[2]
    group = heads // kv_heads
    k64 = np.repeat(k64, group, axis=2)
    v64 = np.repeat(v64, group, axis=2)
    factor = 1.0 / np.sqrt(head_dim) if scale is None else scale
    allowed = _allowed(q_len, kv_len, segment_ids, causal, batch)[:, None, :, :]
    with np.errstate(invalid="ignore"):  # an allowed infinite key makes its row NaN, rightly
        logits = np.einsum("bqnh,bknh->bnqk", q64, k64) * factor + _exact_bias(bias)
        logits = np.where(allowed, logits, -np.inf)
        peak = np.max(logits, axis=-1, keepdims=True)
        peak = np.where(np.isfinite(peak), peak, 0.0)
        weights = np.where(allowed, np.exp(logits - peak), 0.0)
        total = weights.sum(axis=-1, keepdims=True)
        weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    # A zero weight times NaN is NaN: masked values are zeroed for the product, and the
    # rows that do weigh a non-finite value are set to NaN after it.
    finite = np.isfinite(v64)
    out: Float64 = np.einsum("bnqk,bknh->bqnh", weights, np.where(finite, v64, 0.0))
    broken = ~finite.all(axis=-1)  # [B, Tk, N]
    poisoned = np.einsum("bnqk,bkn->bqn", (weights != 0).astype(np.float64), broken) > 0
    return np.where(poisoned[..., None], np.nan, out)


def _mask(
    q_len: int, kv_len: int, segment_ids: SegmentIds | None, causal: bool
) -> jax.Array | None:
    """``[B or 1, 1, Tq, Tk]`` boolean mask in JAX, or None when every pair is allowed."""
    mask: jax.Array | None = None
    if segment_ids is not None:
        mask = (segment_ids.q[:, :, None] == segment_ids.kv[:, None, :])[:, None]
    if causal:
        offset = kv_len - q_len  # queries aligned to the end of the keys, as the contract says
        lower = (jnp.arange(q_len)[:, None] + offset >= jnp.arange(kv_len)[None, :])[None, None]
        mask = lower if mask is None else mask & lower
    return mask


def dense_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    segment_ids: SegmentIds | None = None,
    causal: bool = False,
    scale: float | None = None,
    bias: RelativeBias | None = None,
) -> jax.Array:
    """The plain computation: matmuls in the input dtype, softmax in float32.

    Not a yardstick: the suite measures how far this obvious implementation lands
    from :func:`exact_attention` in a dtype, and scales that dtype's tolerance by it.
    """
    heads, kv_heads = q.shape[2], k.shape[2]
    k = jnp.repeat(k, heads // kv_heads, axis=2)
    v = jnp.repeat(v, heads // kv_heads, axis=2)
    factor = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = jnp.einsum("bqnh,bknh->bnqk", q, k).astype(jnp.float32) * factor
    if bias is not None:
        logits = logits + _bias_block(bias, 0, k.shape[1])
    mask = _mask(q.shape[1], k.shape[1], segment_ids, causal)
    if mask is not None:
        logits = jnp.where(mask, logits, -jnp.inf)
    peak = jnp.max(logits, axis=-1, keepdims=True)
    peak = jnp.where(jnp.isfinite(peak), peak, 0.0)
    weights = jnp.exp(logits - peak)
    if mask is not None:
        weights = jnp.where(mask, weights, 0.0)
    total = jnp.sum(weights, axis=-1, keepdims=True)
    weights = weights / jnp.where(total > 0, total, 1.0)
    out = jnp.einsum("bnqk,bknh->bqnh", weights.astype(v.dtype), v)
    return out.astype(q.dtype)


def chunked_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    segment_ids: SegmentIds | None = None,
    causal: bool = False,
    scale: float | None = None,
    bias: RelativeBias | None = None,
    chunk: int = 64,
) -> jax.Array:
    """The same function over key chunks with an online softmax (a different summation order)."""
    batch, q_len, heads, _ = q.shape
    kv_len = k.shape[1]
    pad = (-kv_len) % chunk
    factor = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    k = jnp.repeat(k, heads // k.shape[2], axis=2)
    v = jnp.repeat(v, heads // v.shape[2], axis=2)
    full_mask = _mask(q_len, kv_len, segment_ids, causal)
    if full_mask is None:
        full_mask = jnp.ones((1, 1, q_len, kv_len), dtype=bool)
    full_mask = jnp.broadcast_to(full_mask, (batch, 1, q_len, kv_len))
    if pad:
        k = jnp.pad(k, ((0, 0), (0, pad), (0, 0), (0, 0)))
        v = jnp.pad(v, ((0, 0), (0, pad), (0, 0), (0, 0)))
        full_mask = jnp.pad(full_mask, ((0, 0), (0, 0), (0, 0), (0, pad)))
    q32 = q.astype(jnp.float32)
    peak = jnp.full((batch, heads, q_len, 1), -jnp.inf, jnp.float32)
    total = jnp.zeros((batch, heads, q_len, 1), jnp.float32)
    acc = jnp.zeros((batch, heads, q_len, q.shape[-1]), jnp.float32)
    for start in range(0, kv_len + pad, chunk):
        k_c = k[:, start : start + chunk].astype(jnp.float32)
        mask = full_mask[..., start : start + chunk]
        v_c = v[:, start : start + chunk].astype(jnp.float32)
        logits = jnp.einsum("bqnh,bknh->bnqk", q32, k_c) * factor
        if bias is not None:
            logits = logits + _bias_block(bias, start, min(start + chunk, kv_len), chunk)
        logits = jnp.where(mask, logits, -jnp.inf)
        new_peak = jnp.maximum(peak, jnp.max(logits, axis=-1, keepdims=True))
        safe = jnp.where(jnp.isfinite(new_peak), new_peak, 0.0)
        rescale = jnp.where(jnp.isfinite(peak), jnp.exp(peak - safe), 0.0)
        weights = jnp.where(mask, jnp.exp(logits - safe), 0.0)
        total = total * rescale + jnp.sum(weights, axis=-1, keepdims=True)
        acc = acc * rescale + jnp.einsum("bnqk,bknh->bnqh", weights, v_c)
        peak = new_peak
    out = acc / jnp.where(total > 0, total, 1.0)
    return jnp.transpose(out, (0, 2, 1, 3)).astype(q.dtype)


def _bias_block(bias: RelativeBias, start: int, stop: int, width: int | None = None) -> jax.Array:
    """``[B, N, Tq, width]`` float32: the bias of keys ``start:stop`` (zero-padded to ``width``).

    Written here, not taken from the kernel kit, so the suite's plain attentions stay
    independent of what the kernels under test use.
    """
    values = jnp.asarray(bias.values, jnp.float32)
    reach = (values.shape[0] - 1) // 2
    kv_pos = jnp.asarray(bias.kv_positions)[:, start:stop]
    distance = kv_pos[:, None, :] - jnp.asarray(bias.q_positions)[:, :, None]
    block = values[jnp.clip(distance, -reach, reach) + reach].transpose(0, 3, 1, 2)
    pad = (width or stop - start) - (stop - start)
    return jnp.pad(block, ((0, 0), (0, 0), (0, 0), (0, pad))) if pad else block
