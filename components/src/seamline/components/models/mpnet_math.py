"""MPNet's forward pass: BERT's layers, no token types, and a relative-position bias.

What differs from :mod:`.bert_math`, and nothing else (the layers, layer norms,
feed-forward, pooling and normalisation are BERT's, reused from there):

* embeddings are word + position, layer-normed; there is no token-type table, and
  position ids are numbered from the token ids, as transformers'
  ``create_position_ids_from_input_ids`` numbers them (``MPNetEmbeddings`` hard-codes
  ``padding_idx = 1``): a token with the pad id reads row 1, any other the count of
  non-pad tokens of its example up to and including it, plus 1. Without a pad id in
  a text that is row ``p + 2`` for the token at position ``p``; a literal ``<pad>``
  written in a text is tokenised to the pad id with an attention mask of 1 (it is
  attended and pooled), and the tokens after it read one row lower each;
* every layer's attention adds the same relative-position bias: a learned table
  ``[32 buckets, heads]`` over T5's bidirectional buckets of the distance between key
  and query (``max_distance`` 128), passed to the attention at the seam as a
  :class:`~seamline.contracts.RelativeBias` so that the kernel computes it where
  each score is, per packed example (positions restart per example).

transformers computes the bias from plain row indices; within one example those
and the per-example positions give the same distances, so packing changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from seamline.components.models import bert_math
from seamline.components.models.bert_math import (
    Architecture,
    LayerParams,
    Leaf,
    NormParams,
    Readout,
)
from seamline.contracts import AttentionFn
from seamline.contracts.attention import RelativeBias, SegmentIds

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

#: transformers' MPNetEmbeddings: padding_idx is 1 and positions count from padding_idx + 1.
POSITION_OFFSET = 2
#: The token id transformers gives the padding position (row 1), whatever config.json says.
PADDING_IDX = POSITION_OFFSET - 1
#: transformers' MPNetEncoder.compute_position_bias: 32 buckets over distances up to 128.
BIAS_BUCKETS = 32
BIAS_MAX_DISTANCE = 128


class MpnetEmbeddingParams(TypedDict):
    """Token and position tables ``[rows, hidden]`` and the norm after their sum."""

    word: Leaf
    position: Leaf
    norm: NormParams


class MpnetParams(TypedDict):
    """The whole encoder: BERT's layers, and the bias table every layer shares."""

    embeddings: MpnetEmbeddingParams
    layers: list[LayerParams]
    relative_bias: Leaf
    """``[BIAS_BUCKETS, heads]``: the score bias of each relative-position bucket."""


@dataclass(frozen=True, slots=True)
class MpnetArchitecture:
    """BERT's static shape (``max_positions``: usable positions) and MPNet's bias buckets."""

    base: Architecture
    bias_buckets: int = BIAS_BUCKETS

    @property
    def position_rows(self) -> int:
        """Rows of the position table: the usable positions and the two before them."""
        return self.base.max_positions + POSITION_OFFSET


def encode(
    params: MpnetParams,
    input_ids: jax.Array,
    segment: jax.Array,
    positions: jax.Array,
    attention: AttentionFn,
    arch: MpnetArchitecture,
    readout: Readout,
    slots: int,
) -> jax.Array:
    """Token ids ``[B, T]`` to one float32 vector per slot ``[B * slots, hidden]``.

    Packing as in :func:`.bert_math.encode`: ``segment`` numbers the examples of a
    row 1, 2, ... (0 is padding), ``positions`` restart at 0 for each.
    """
    import jax
    import jax.numpy as jnp

    base = arch.base
    if input_ids.shape[1] > base.max_positions:
        raise ValueError(
            f"sequence length {input_ids.shape[1]} exceeds the {base.max_positions} positions "
            "this checkpoint has embeddings for"
        )
    with jax.named_scope("embeddings"):
        hidden = embed(params["embeddings"], input_ids, positions, base.layer_norm_eps)
    segment_ids = SegmentIds(q=segment, kv=segment)
    table = jnp.asarray(params["relative_bias"], jnp.float32)
    bias = RelativeBias.bucketed(table, positions, positions, max_distance=BIAS_MAX_DISTANCE)
    for index, layer in enumerate(params["layers"]):
        with jax.named_scope(f"layer_{index}"):
            hidden = bert_math.encoder_layer(
                layer, hidden, segment_ids, attention, base, readout, bias
            )
    with jax.named_scope("pooling"):
        pooled = bert_math.pool(hidden, segment, positions, readout.pooling, slots)
        pooled = pooled.reshape(-1, pooled.shape[-1])
        return bert_math.l2_normalize(pooled) if readout.normalize else pooled


def embed(
    params: MpnetEmbeddingParams, input_ids: jax.Array, positions: jax.Array, eps: float
) -> jax.Array:
    """Sum of token and position embeddings (rows of :func:`position_rows`), layer-normed."""
    import jax.numpy as jnp

    word = jnp.take(jnp.asarray(params["word"], jnp.float32), input_ids, axis=0)
    rows = position_rows(input_ids, positions)
    position = jnp.take(jnp.asarray(params["position"], jnp.float32), rows, axis=0)
    return bert_math.layer_norm(word + position, params["norm"], eps)


def position_rows(input_ids: jax.Array, positions: jax.Array) -> jax.Array:
    """Each token's row of the position table, as transformers numbers it from the ids.

    ``create_position_ids_from_input_ids``: a pad-id token gets ``PADDING_IDX``, any
    other the running count of non-pad tokens plus ``PADDING_IDX``. The count restarts
    per packed example: ``index - positions`` is where a token's example begins, and the
    count before it is subtracted. Two ``[B, T]`` integer passes, beside the layers.
    """
    import jax.numpy as jnp

    counted = (input_ids != PADDING_IDX).astype(jnp.int32)
    running = jnp.cumsum(counted, axis=1)
    starts = jnp.arange(input_ids.shape[1], dtype=positions.dtype)[None, :] - positions
    before = jnp.take_along_axis(running - counted, starts, axis=1)
    return jnp.where(counted == 1, running - before + PADDING_IDX, PADDING_IDX)
