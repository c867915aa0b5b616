"""The relative-position bias (attention contract 1.2): its lookup, and the refusal of the rest.

A :class:`~seamline.contracts.attention.RelativeBias` is a small table of values per
relative distance and per head, and the positions of every token; the bias of a
(query, key) pair is a lookup, computed where the score is, never stored as a
``[B, N, Tq, Tk]`` tensor by the kernels that tile. :func:`relative_bias_scores`
is that lookup for any block of queries and keys; :func:`refuse_bias` is what a
kernel that does not add a bias calls, in case it is handed one anyway.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamline.contracts.errors import UnsupportedError

if TYPE_CHECKING:
    import jax

    from seamline.contracts.attention import RelativeBias


def relative_bias_scores(
    values: jax.Array, q_positions: jax.Array, kv_positions: jax.Array
) -> jax.Array:
    """``[B, Tq, Tk, N]`` float32: the bias of every pair of a block of queries and keys.

    ``values`` is :attr:`RelativeBias.values` ``[2D + 1, N]`` (or any ``[2D + 1, ...]``
    layout of its heads, which the result keeps as its trailing axes);
    ``q_positions [B, Tq]`` and ``kv_positions [B, Tk]`` are the block's positions.
    """
    import jax.numpy as jnp

    reach = (values.shape[0] - 1) // 2
    distance = kv_positions[:, None, :].astype(jnp.int32) - q_positions[:, :, None].astype(
        jnp.int32
    )
    index = jnp.clip(distance, -reach, reach) + reach
    return jnp.take(values.astype(jnp.float32), index, axis=0)


def refuse_bias(name: str, bias: RelativeBias | None) -> None:
    """Raise the contract's :class:`UnsupportedError` when a kernel without a bias gets one.

    ``supports()`` already refuses such a spec (the base class's gate), so this is
    reached only by a caller that skipped negotiation; the bias must not be dropped
    silently, which would give an answer that looks right and is not.
    """
    if bias is not None:
        raise UnsupportedError(
            f"attention {name!r} does not add a relative-position score bias; "
            "use an implementation whose score_biases lists 'relative' (native, blockwise)"
        )
