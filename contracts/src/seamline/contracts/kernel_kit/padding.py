"""Padding to block multiples: lengths a tiled kernel accepts, and ids that hide the padding.

Pallas and Triton kernels tile the sequence axes in fixed blocks and refuse lengths
that are not a multiple of the block, while the contract promises callers any
length. A wrapper therefore pads inside and hides the padded keys behind a segment
id that no real query carries (:func:`padding_id`); padded queries are computed and
dropped. Kernels that need one key/value head per query head get them from
:func:`repeat_kv_heads`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax


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
    import jax.numpy as jnp

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
    import jax.numpy as jnp

    return (jnp.min(q_ids) - 1).astype(jnp.int32)


def repeat_kv_heads(x: jax.Array, group: int, axis: int) -> jax.Array:
    """Give every query head its own copy of its key/value head (grouped queries).

    For kernels that require as many key/value heads as query heads. Query head
    ``n`` reads key/value head ``n // group``, which is what ``jnp.repeat`` lays
    out. The cost is ``group`` times the key/value memory traffic and a copy of K
    and V in HBM; the arithmetic is unchanged.
    """
    import jax.numpy as jnp

    return x if group == 1 else jnp.repeat(x, group, axis=axis)
