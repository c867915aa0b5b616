"""``jax.nn.dot_product_attention`` held to the contract, for any of its implementations.

JAX's own attention (``implementation="xla"`` or ``"cudnn"``) departs from the
contract in three ways, and :func:`masked_sdpa` closes exactly those gaps:

* its ``is_causal`` mask is aligned to the *start* of the keys (``tril``), while the
  contract aligns queries to the *end* of the keys; when ``Tq != Tk`` the causal
  condition is folded into the boolean mask instead;
* a row with no allowed key gets a uniform average of the values, where the
  contract wants zeros; such rows are replaced with ``where``;
* a masked key's weight is an exact zero, but ``0 * NaN`` is NaN, so NaN-filled
  padding in ``v`` would leak into every row; values are cleaned when (and only
  when) some value is not finite, and rows that may attend to a non-finite value
  are poisoned afterwards so that a real NaN still shows.

Grouped queries (``K < N``) are native to ``jax.nn``: it views the query heads as
``[K, G]`` and never repeats K/V.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from seamline.contracts.kernel_kit.reference import attention_mask

# Only for annotations: of the rest the kit imports numpy alone at load, and JAX in the
# functions that use it, so that importing a kernel's module does not import JAX.
if TYPE_CHECKING:
    import jax

    from seamline.contracts.attention import AttentionSpec, SegmentIds


def sdpa_refusals(spec: AttentionSpec) -> list[str]:
    """Reasons every ``jax.nn`` based implementation shares for refusing ``spec``."""
    reasons = []
    if spec.num_kv_heads < 1 or spec.num_heads % spec.num_kv_heads:
        reasons.append(
            f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
        )
    return reasons


def masked_sdpa(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    segment_ids: SegmentIds | None,
    causal: bool,
    scale: float | None,
    implementation: Literal["xla", "cudnn"],
) -> jax.Array:
    """Call ``jax.nn.dot_product_attention`` and repair where it departs from the contract.

    Shared by ``xla-sdpa`` and ``cudnn``: only ``implementation`` differs. When
    ``Tq == Tk`` the upstream causal flag is exact (start and end alignment
    coincide) and lets a fused kernel skip the masked half, so it is used; a
    segment mask is still materialised as ``[B, 1, Tq, Tk]`` booleans.
    """
    import jax
    import jax.numpy as jnp

    q_len, kv_len = q.shape[1], k.shape[1]
    native_causal = causal and q_len == kv_len
    mask = attention_mask(q_len, kv_len, segment_ids, causal and not native_causal)
    # The contract's rows with no allowed key: under native causal the diagonal is
    # always allowed, so only the explicit mask can leave a row empty.
    empty = None
    if mask is not None:
        if native_causal:
            empty = ~(mask & _causal(q_len, kv_len)).any(axis=-1)  # [B, 1, Tq]
        else:
            empty = ~mask.any(axis=-1)

    def call(q: jax.Array, k: jax.Array, values: jax.Array) -> jax.Array:
        precision = "highest" if q.dtype == jnp.float32 else None
        # jax.nn accepts no precision argument; float32 callers must not silently get
        # reduced-precision matmul passes (the default on TPU), so raise it here.
        with jax.default_matmul_precision(precision):
            out: jax.Array = jax.nn.dot_product_attention(
                q,
                k,
                values,
                mask=mask,
                scale=scale,
                is_causal=native_causal,
                implementation=implementation,
            )
        return out

    def in_float32(q: jax.Array, k: jax.Array, values: jax.Array) -> jax.Array:
        f32 = jnp.float32
        return call(q.astype(f32), k.astype(f32), values.astype(f32)).astype(q.dtype)

    def attend(values: jax.Array) -> jax.Array:
        if q.dtype != jnp.float16 or implementation != "xla":
            return call(q, k, values)
        # For float16, jax.nn asks for an F16_F16_F32 dot, which XLA:CPU and TPU do
        # not implement (and the failure comes at compile time, past jax.nn's own
        # fallback). Those platforms compute in float32 instead; GPUs keep float16.
        out: jax.Array = jax.lax.platform_dependent(
            q, k, values, cpu=in_float32, tpu=in_float32, default=call
        )
        return out

    # Both repairs for non-finite values are O(T) no-ops in the common case; keeping
    # them out of the attention call compiles the attention once, not once per branch.
    finite = jnp.isfinite(v).all()
    out = attend(jax.lax.cond(finite, lambda values: values, _clean, v))
    out = jax.lax.cond(
        finite, lambda out: out, lambda out: _poison(out, v, mask, native_causal), out
    )
    if empty is not None:
        out = jnp.where(empty.transpose(0, 2, 1)[..., None], jnp.zeros((), out.dtype), out)
    return out.astype(q.dtype)


def _causal(q_len: int, kv_len: int) -> jax.Array:
    """The end-aligned causal mask ``[1, 1, Tq, Tk]``."""
    mask = attention_mask(q_len, kv_len, None, True)
    assert mask is not None
    return mask


def _clean(values: jax.Array) -> jax.Array:
    """Values with every non-finite entry replaced by zero."""
    import jax.numpy as jnp

    return jnp.where(jnp.isfinite(values), values, jnp.zeros((), values.dtype))


def _poison(out: jax.Array, values: jax.Array, mask: jax.Array | None, causal: bool) -> jax.Array:
    """Set NaN in the rows of ``out`` ``[B, Tq, N, H]`` allowed to see a non-finite value.

    A row "sees" a key when the mask allows it (the upstream weights are not
    available here); this is the rare path, taken only when some value is not finite.
    """
    import jax.numpy as jnp

    batch, q_len, heads, _ = out.shape
    kv_len, kv_heads = values.shape[1], values.shape[2]
    if causal:
        diagonal = _causal(q_len, kv_len)
        mask = diagonal if mask is None else mask & diagonal
    allowed = (
        jnp.ones((batch, q_len, kv_len), jnp.float32)
        if mask is None
        else jnp.broadcast_to(mask[:, 0], (batch, q_len, kv_len)).astype(jnp.float32)
    )
    broken = (~jnp.isfinite(values)).any(axis=-1).astype(jnp.float32)  # [B, Tk, K]
    seen = jnp.einsum("bqs,bsk->bqk", allowed, broken) > 0  # [B, Tq, K]
    seen = jnp.repeat(seen, heads // kv_heads, axis=2)  # query head n reads n // G
    return jnp.where(seen[..., None], jnp.asarray(jnp.nan, out.dtype), out)
