"""Padding and segment-id helpers shared by the Pallas kernel wrappers.

The Pallas kernels tile the sequence axes in fixed blocks and refuse lengths that
are not a multiple of the block; the contract promises callers any length. The
wrappers therefore pad inside and hide the padded keys behind a segment id that no
real query carries. They also share two weaknesses, bridged here once: a query
row with no key to attend comes back as an average of masked keys (or NaN), never
as the zeros the contract requires (:func:`rows_with_keys`, :func:`zero_rows`); and
a NaN in a masked key leaks into its whole tile (:func:`clean_keys`,
:func:`poisoned_rows`). Both are found from the segment ids without building the
``[Tq, Tk]`` mask.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from seamline.contracts import AttentionSpec, SegmentIds


def round_up(length: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` at or above ``length``, and at least one block."""
    return max(multiple, -(-length // multiple) * multiple)


def next_power_of_two(n: int) -> int:
    """Smallest power of two at or above ``n`` (GPU Triton tiles must be powers of two)."""
    return 1 << max(0, (n - 1).bit_length())


def pad_axis(
    x: jax.Array, axis: int, before: int, after: int, value: jax.Array | int | float = 0
) -> jax.Array:
    """Pad one axis with a constant; a no-op (no copy) when there is nothing to add."""
    if before == 0 and after == 0:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (before, after)
    return jnp.pad(x, widths, constant_values=value)


def padding_id(q_ids: jax.Array) -> jax.Array:
    """A segment id that no real query carries: one below the smallest query id.

    Padded keys get this id, so no real query can attend to them whatever ids the
    caller uses (0 for padding, negative ids, anything). It is computed on device,
    so it costs one reduction and works under ``jit``. The only id it cannot dodge
    is when the smallest query id is the lowest int32, where it wraps around to the
    highest; no caller numbers segments from -2**31.
    """
    return (jnp.min(q_ids) - 1).astype(jnp.int32)


def repeat_kv_heads(x: jax.Array, group: int, axis: int) -> jax.Array:
    """Give every query head its own copy of its key/value head (grouped queries).

    For kernels that require as many key/value heads as query heads. Query head
    ``n`` reads key/value head ``n // group``, which is what ``jnp.repeat`` lays
    out. The cost is ``group`` times the key/value memory traffic and a copy of K
    and V in HBM; the arithmetic is unchanged.
    """
    return x if group == 1 else jnp.repeat(x, group, axis=axis)


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
    if valid is None:
        return out
    return jnp.where(valid[:, :, None, None], out, jnp.zeros((), out.dtype))


def poison(out: jax.Array, poisoned: jax.Array) -> jax.Array:
    """NaN the ``[B, T, N, H]`` rows flagged by :func:`poisoned_rows`, as the reference gives."""
    return jnp.where(poisoned[..., None], jnp.asarray(jnp.nan, out.dtype), out)


def is_concrete(x: jax.Array) -> bool:
    """Whether ``x`` holds values now (not a tracer inside ``jit``/``vmap``)."""
    return not isinstance(x, jax.core.Tracer)


def tpu_interpret_mode(enabled: bool) -> contextlib.AbstractContextManager[None]:
    """Pallas's TPU interpret mode while tracing, when ``enabled``; otherwise nothing.

    The mode is a JAX config value that is part of the ``jit`` cache key, so a
    kernel traced inside it is cached apart from the compiled TPU kernel.
    """
    if not enabled:
        return contextlib.nullcontext()
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.force_tpu_interpret_mode()


@dataclass(frozen=True, slots=True)
class KernelLimits:
    """What a Pallas kernel component refuses for reasons it shares with the others."""

    kernel: str
    """How the kernel is named in messages, e.g. "Pallas TPU kernel"."""
    short: str
    """The short name in the dtype message, e.g. "TPU kernel"."""
    platform: str
    """The platform it runs on natively, e.g. "tpu"."""
    dtypes: tuple[str, ...]
    missing: str
    """What this JAX lacks when the kernel's module does not import."""


def common_refusals(
    spec: AttentionSpec, limits: KernelLimits, load: Callable[[], object], interpret: bool
) -> list[str]:
    """The refusals every Pallas kernel component shares: kernel, platform, heads, dtype, length."""
    reasons = []
    try:
        load()
    except ImportError as error:
        reasons.append(f"this JAX ({jax.__version__}) {limits.missing}: {error}")
    if spec.platform != limits.platform and not interpret:
        reasons.append(
            f"the {limits.kernel} runs only on {limits.platform.upper()}; set interpret: true "
            f"to run it (slowly) on {spec.platform}"
        )
    if spec.num_kv_heads < 1 or spec.num_heads % spec.num_kv_heads:
        reasons.append(
            f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
        )
    if spec.dtype not in limits.dtypes:
        reasons.append(
            f"dtype {spec.dtype} is not one the {limits.short} computes in "
            f"({', '.join(limits.dtypes)})"
        )
    if spec.q_len < 1 or spec.kv_len < 1:
        reasons.append(f"empty sequence (q_len {spec.q_len}, kv_len {spec.kv_len})")
    return reasons
