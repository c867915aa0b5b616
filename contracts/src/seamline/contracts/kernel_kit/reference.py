"""The contract's attention written plainly in JAX: the mask, and the math every kernel is held to.

:func:`reference_attention` is what the ``native`` component runs and what a kernel
may fall back to for inputs it cannot express (``gpu-flash`` does, for rows whose
query and key ids differ). It is jittable and runs on every backend, computing in
float32 at full precision whatever the input dtype. It is not the conformance
suite's yardstick: that is ``seamline.contracts.testing.exact_attention``, float64
numpy, independent of anything a kernel may use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamline.contracts.kernel_kit.bias import relative_bias_scores

# Only for annotations: of the rest the kit imports numpy alone at load, and JAX in the
# functions that use it, so that importing a kernel's module does not import JAX.
if TYPE_CHECKING:
    import jax

    from seamline.contracts.attention import RelativeBias, SegmentIds


def attention_mask(
    q_len: int, kv_len: int, segment_ids: SegmentIds | None, causal: bool
) -> jax.Array | None:
    """Boolean ``[B or 1, 1, Tq, Tk]`` mask of allowed (query, key) pairs, or None for all."""
    import jax.numpy as jnp

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
    bias: RelativeBias | None = None,
) -> jax.Array:
    """Plain attention with the contract's semantics (see ``seamline.contracts.attention``).

    A relative-position ``bias`` is looked up for the whole ``[B, N, Tq, Tk]`` score
    matrix, which this implementation materialises anyway.

    Heads are moved in front of the sequence axes so both products are plain
    batched matmuls (XLA's CPU backend runs those far faster than the equivalent
    multi-axis einsum), and the softmax is normalised after the second product,
    which saves a pass over the score matrix.
    """
    import jax
    import jax.numpy as jnp

    batch, q_len, heads, head_dim = q.shape
    kv_len, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    scale = head_dim**-0.5 if scale is None else scale
    full = jax.lax.Precision.HIGHEST  # the reference must not take reduced-precision passes
    # [B, N, Tq, H] viewed as [B, K, G*Tq, H]: query head n = kv_head * G + g reads kv_head.
    qg = _heads_first(q).reshape(batch, kv_heads, group * q_len, head_dim)
    keys, values = _heads_first(k), _heads_first(v)
    scores = jnp.matmul(qg, keys.swapaxes(-1, -2), precision=full) * jnp.float32(scale)
    scores = scores.reshape(batch, heads, q_len, kv_len)
    if bias is not None:
        added = relative_bias_scores(bias.values, bias.q_positions, bias.kv_positions)
        scores = scores + added.transpose(0, 3, 1, 2)
    mask = attention_mask(q_len, kv_len, segment_ids, causal)
    if mask is not None:
        scores = jnp.where(mask, scores, -jnp.inf)
    row_max = jnp.max(scores, axis=-1, keepdims=True)
    # A row with no allowed key has max -inf: shift by 0 instead, so exp gives 0, not NaN.
    row_max = jnp.where(jnp.isfinite(row_max), row_max, 0.0)
    weights = jnp.exp(scores - row_max)
    denom = jnp.sum(weights, axis=-1, keepdims=True)
    weights = weights.reshape(batch, kv_heads, group * q_len, kv_len)
    # A zero weight times a NaN value is NaN, so a masked key's garbage (NaN-filled
    # padding, say) would leak into every row through the matmul. Only when some
    # value is not finite, values are cleaned first and rows that do give weight to
    # a non-finite value are poisoned after, so a real NaN still shows.
    out: jax.Array = jax.lax.cond(
        jnp.isfinite(values).all(),
        lambda: jnp.matmul(weights, values, precision=full),
        lambda: _guarded_product(weights, values),
    )
    out = out.reshape(batch, heads, q_len, head_dim) / jnp.where(denom == 0.0, 1.0, denom)
    return out.transpose(0, 2, 1, 3).astype(q.dtype)


def _heads_first(x: jax.Array) -> jax.Array:
    """``[B, T, heads, H]`` in float32 to ``[B, heads, T, H]``."""
    import jax.numpy as jnp

    return x.astype(jnp.float32).transpose(0, 2, 1, 3)


def _guarded_product(weights: jax.Array, values: jax.Array) -> jax.Array:
    """``weights @ values`` where non-finite values reach only rows that weigh them."""
    import jax
    import jax.numpy as jnp

    finite = jnp.isfinite(values)
    out = jnp.matmul(weights, jnp.where(finite, values, 0.0), precision=jax.lax.Precision.HIGHEST)
    broken = (~finite).any(axis=-1).astype(jnp.float32)  # [B, K, Tk]
    poisoned = jnp.einsum("bkqs,bks->bkq", (weights > 0).astype(jnp.float32), broken) > 0
    return jnp.where(poisoned[..., None], jnp.nan, out)
