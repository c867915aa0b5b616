"""Masked rows and non-finite keys: where fast kernels depart from the contract, repaired.

The contract says a query with no key it may attend gives a row of zeros, and that
a key no query may attend does not matter whatever it holds. Tiled kernels miss
both: such a row comes back as an average of masked keys (or NaN), and since
``0 * NaN`` is NaN, one NaN in a masked key leaks into its whole tile. A wrapper
bridges them around the kernel call:

- on the way in, :func:`clean_keys` zeroes non-finite keys and values and flags them;
- on the way out, :func:`zero_rows` zeroes the rows :func:`rows_with_keys` found
  empty, and :func:`poison` sets NaN in the rows :func:`poisoned_rows` found to
  attend a flagged key, so a real NaN still shows, as the reference gives.

Both are found from the segment ids without building the ``[Tq, Tk]`` mask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from seamline.contracts.kernel_kit.padding import padding_id

# Only for annotations: of the rest the kit imports numpy alone at load, and JAX in the
# functions that use it, so that importing a kernel's module does not import JAX.
if TYPE_CHECKING:
    import jax

    from seamline.contracts.attention import SegmentIds


def rows_with_keys(
    segment_ids: SegmentIds | None, q_len: int, kv_len: int, causal: bool
) -> jax.Array | None:
    """Boolean ``[B or 1, Tq]``: which queries have at least one key they may attend.

    ``None`` means every query has one (the common case, known statically: no
    segments and no causal offset that starves the first rows, or self-attention
    with one id array for both sides, where each token sees itself).

    With distinct query and key ids this does not build the ``[Tq, Tk]`` mask: it
    finds, for each query, the first key position carrying its id (a stable sort of
    the key ids and a binary search, ``O((Tq + Tk) log Tk)`` per row) and checks it
    against the causal limit ``i + Tk - Tq``.
    """
    import jax
    import jax.numpy as jnp

    offset = kv_len - q_len
    if segment_ids is None:
        if causal and offset < 0:
            return jnp.asarray(np.arange(q_len)[None, :] + offset >= 0)
        return None
    if segment_ids.q is segment_ids.kv and (offset >= 0 or not causal):
        return None
    return jax.vmap(lambda q, kv: _first_key_allowed(q, kv, causal, offset))(
        segment_ids.q.astype(jnp.int32), segment_ids.kv.astype(jnp.int32)
    )


def _first_key_allowed(q_ids: jax.Array, kv_ids: jax.Array, causal: bool, offset: int) -> jax.Array:
    """For one batch row: does each query's id occur among the keys it may see?"""
    import jax.numpy as jnp

    order = jnp.argsort(kv_ids, stable=True)  # equal ids stay in position order
    ordered = kv_ids[order]
    slot = jnp.searchsorted(ordered, q_ids, side="left")
    slot = jnp.minimum(slot, kv_ids.shape[0] - 1)
    found = ordered[slot] == q_ids
    if not causal:
        return found
    first_position = order[slot]
    return found & (first_position <= jnp.arange(q_ids.shape[0]) + offset)


def clean_keys(k: jax.Array, v: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Keys and values with non-finite entries zeroed, and ``[B, Tk, K]`` flags of those keys.

    A kernel gives a masked key an exact zero weight, but ``0 * NaN`` is NaN (and
    an additive mask turns a NaN score into a NaN row maximum), so one NaN in a
    padded key would spread to every row that shares its tile. The reference
    ignores a masked key whatever it holds, so the kernels get clean inputs and the
    rows that *do* attend a non-finite key are poisoned again afterwards
    (:func:`poisoned_rows`), so that a real NaN still shows. The ``where`` fuses
    into the transposes and pads the wrappers make anyway.
    """
    import jax.numpy as jnp

    k_finite, v_finite = jnp.isfinite(k), jnp.isfinite(v)
    broken = ~(k_finite.all(axis=-1) & v_finite.all(axis=-1))
    zero = jnp.zeros((), k.dtype)
    return jnp.where(k_finite, k, zero), jnp.where(v_finite, v, zero), broken


def poisoned_rows(
    broken: jax.Array, segment_ids: SegmentIds | None, q_len: int, heads: int, causal: bool
) -> jax.Array:
    """``[B, Tq, N]``: which (query, head) may attend a key flagged by :func:`clean_keys`.

    Nothing is searched unless some key is flagged (``lax.cond``). Otherwise, per
    key/value head, the ids of unflagged keys are replaced by an id no query
    carries, and the first-key search of :func:`rows_with_keys` finds whether a
    flagged key is visible to each query.
    """
    import jax
    import jax.numpy as jnp

    batch, kv_len, kv_heads = broken.shape
    group = heads // kv_heads

    def search() -> jax.Array:
        if segment_ids is None:
            q_ids = jnp.zeros((batch, q_len), jnp.int32)
            kv_ids = jnp.zeros((batch, kv_len), jnp.int32)
        else:
            q_ids = segment_ids.q.astype(jnp.int32)
            kv_ids = segment_ids.kv.astype(jnp.int32)
        hidden = padding_id(q_ids)

        def one_head(flags: jax.Array) -> jax.Array:  # [B, Tk] -> [B, Tq]
            ids = jnp.where(flags, kv_ids, hidden)
            return jax.vmap(lambda q, kv: _first_key_allowed(q, kv, causal, kv_len - q_len))(
                q_ids, ids
            )

        per_kv_head = jax.vmap(one_head, in_axes=2, out_axes=2)(broken)  # [B, Tq, K]
        return jnp.repeat(per_kv_head, group, axis=2)

    def nothing() -> jax.Array:
        return jnp.zeros((batch, q_len, heads), jnp.bool_)

    result: jax.Array = jax.lax.cond(broken.any(), search, nothing)
    return result


def zero_rows(out: jax.Array, valid: jax.Array | None) -> jax.Array:
    """Zero the ``[B, T, N, H]`` rows whose query has no key (``valid`` from ``rows_with_keys``).

    ``where`` rather than a multiply, so a NaN a kernel leaves there is replaced too.
    """
    import jax.numpy as jnp

    if valid is None:
        return out
    return jnp.where(valid[:, :, None, None], out, jnp.zeros((), out.dtype))


def poison(out: jax.Array, poisoned: jax.Array) -> jax.Array:
    """NaN the ``[B, T, N, H]`` rows flagged by :func:`poisoned_rows`, as the reference gives."""
    import jax.numpy as jnp

    return jnp.where(poisoned[..., None], jnp.asarray(jnp.nan, out.dtype), out)
