"""``blockwise``: attention in pure JAX whose memory grows linearly with sequence length.

``native`` materialises the whole ``[B, N, Tq, Tk]`` score matrix; at 8k tokens and
12 heads that is 3 GiB of float32, at 32k it is 48 GiB. This implementation never
holds more than one ``[B, N, block_q, block_k]`` score tile: queries are cut into
blocks, and for each query block a ``lax.scan`` walks the key blocks with an
online softmax (a running row maximum, a running sum of weights and a float32
accumulator, rescaled whenever the maximum grows), so the result is exact
attention, only summed in a different order.

It is written with ``jax.lax`` alone, so it runs on every platform, is visible to
XLA's profilers like any other XLA code, and follows JAX upgrades without a port.
On accelerators a fused kernel is faster; on CPU, for long sequences, this is the
best choice available, and it is also the fallback that always fits in memory.

Layout: queries are held heads-first as ``[B, K, G, bq, H]`` (query head
``n = kv_head * G + g``), keys as ``[B, K, H, bk]`` and values as ``[B, K, bk, H]``,
so each product is one batched matmul over ``B * K`` and grouped queries never
repeat K/V.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from pydantic import Field

from seamline.contracts import (
    Attention,
    AttentionSpec,
    ComponentConfig,
    RelativeBias,
    SegmentIds,
    Support,
)
from seamline.contracts.kernel_kit import relative_bias_scores

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

    #: What the key loop scans over, per key block: its index, keys ``[B, K, H, bk]``,
    #: values ``[B, K, bk, H]``, segment ids ``[B, bk]``, positions ``[B, bk]`` and,
    #: when guarding against non-finite values, which keys had one ``[B, K, bk]``.
    _KeySteps = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array | None]

#: Input dtypes it computes in; every product and the softmax run in float32.
FLOAT_DTYPES = ("float32", "bfloat16", "float16")

#: On CPU, from this many keys on, the quadratic score matrix of ``native`` costs
#: more (in memory traffic, then in memory itself) than the blocked loop does.
LONG_KV = 2048

# dot_general dimension numbers: ((contracting), (batch)) for lhs and rhs.
_SCORES = (((4,), (2,)), ((0, 1), (0, 1)))  # [B,K,G,bq,H] x [B,K,H,bk] -> [B,K,G,bq,bk]
_MIX = (((4,), (2,)), ((0, 1), (0, 1)))  # [B,K,G,bq,bk] x [B,K,bk,H] -> [B,K,G,bq,H]


class BlockwiseConfig(ComponentConfig):
    """Tile sizes: the largest query and key blocks it may use.

    Lengths are split into equal blocks no larger than these (rounded up to a
    multiple of 8 where that stays within the limit), so little padding is added.
    Fewer, larger tiles mean fewer loop steps; smaller ones keep a score tile
    (``B * N * block_q * block_k`` floats) in cache, which matters more on CPU: at
    8k tokens with 12 heads of 64 on a 2-core CPU, 256 x 256 took about two thirds
    of the time of 512 x 512 and a third to a half of ``native``'s; 512 x 128 was
    as fast as 256 x 256, 128 x 128 no faster.
    """

    block_q: int = Field(256, gt=0, description="largest query block")
    block_k: int = Field(256, gt=0, description="largest key/value block")


class BlockwiseAttention(Attention[BlockwiseConfig]):
    """Online-softmax attention over key blocks, one query block at a time."""

    name: ClassVar[str] = "blockwise"
    contract_version: ClassVar[str] = "1.2"
    Config = BlockwiseConfig
    auto_priority: ClassVar[int] = -1
    #: The bias of each tile is looked up from the positions of its rows and columns.
    score_biases: ClassVar[tuple[str, ...]] = ("relative",)

    def supports(self, spec: AttentionSpec) -> Support:
        reasons = []
        if spec.num_kv_heads < 1 or spec.num_heads % spec.num_kv_heads:
            reasons.append(
                f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
            )
        if spec.dtype not in FLOAT_DTYPES:
            reasons.append(f"dtype {spec.dtype} is not one of {', '.join(FLOAT_DTYPES)}")
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """Ahead of ``native`` on CPU for long key sequences; behind kernels elsewhere.

        Below 2k keys the two ran equally fast on a 2-core CPU (512 and 1024
        tokens, 12 heads of 64), ``native``'s score matrix is still small and it
        compiles in about half the time, so the reference keeps the short shapes.
        From 2k on this is faster (2-3x at 8k) and its memory stays linear. On GPU
        and TPU fused kernels (and XLA's attention) are faster, and this remains
        the fallback that fits in memory.
        """
        if spec.platform == "cpu" and spec.kv_len >= LONG_KV:
            return 10
        return -1

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        import jax

        with jax.named_scope("blockwise"):
            return blockwise_attention(
                q,
                k,
                v,
                segment_ids=segment_ids,
                causal=causal,
                scale=scale,
                bias=bias,
                block_q=self.config.block_q,
                block_k=self.config.block_k,
            )


class _Blocks(NamedTuple):
    """How one sequence axis is tiled: ``number`` blocks of ``size``, padded to ``number*size``."""

    size: int
    number: int

    @classmethod
    def of(cls, length: int, limit: int) -> _Blocks:
        number = max(1, math.ceil(length / limit))
        size = max(1, math.ceil(length / number))
        rounded = -(-size // 8) * 8
        return cls(rounded if rounded <= limit else size, number)

    @property
    def padded(self) -> int:
        return self.size * self.number


class _State(NamedTuple):
    """Online-softmax carry for one query block, all float32."""

    row_max: jax.Array  # [B, K, G, bq]; -inf while no key has been allowed
    row_sum: jax.Array  # [B, K, G, bq]; sum of exp(score - row_max)
    acc: jax.Array  # [B, K, G, bq, H]; sum of exp(score - row_max) * value


def blockwise_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    segment_ids: SegmentIds | None = None,
    causal: bool = False,
    scale: float | None = None,
    bias: RelativeBias | None = None,
    block_q: int = 256,
    block_k: int = 256,
) -> jax.Array:
    """Attention with the contract's semantics in ``O(T)`` memory (see the module docstring).

    A relative-position ``bias`` is looked up per score tile from the positions of
    its query and key blocks (a ``[B, bq, bk, N]`` gather from the few-kilobyte
    table), so it adds no memory that grows with the square of the length.

    A zero weight times a NaN value is NaN, so NaN-filled padding in ``v`` would
    reach every row through the products. As in ``native``, the common all-finite
    case runs untouched; otherwise values are cleaned and the rows that do give
    weight to a non-finite value are poisoned, so a real NaN still shows.
    """
    import jax
    import jax.numpy as jnp

    batch, q_len, heads, head_dim = q.shape
    kv_len, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    scale = head_dim**-0.5 if scale is None else scale
    qb, kb = _Blocks.of(q_len, block_q), _Blocks.of(kv_len, block_k)

    f32 = jnp.float32
    # Scaling the queries once costs O(T); scaling each score tile would cost a pass per tile.
    queries = _pad(q.astype(f32) * f32(scale), qb.padded)
    queries = queries.reshape(batch, qb.number, qb.size, kv_heads, group, head_dim)
    queries = queries.transpose(1, 0, 3, 4, 2, 5)  # [nq, B, K, G, bq, H]
    # Keys are stored transposed, [nk, B, K, H, bk]: the layout the score product
    # wants, so no tile is transposed inside the loop.
    keys = _kv_blocks(k, kb).swapaxes(-1, -2)
    values = _kv_blocks(v, kb)
    if segment_ids is not None:
        seg_q = _pad(segment_ids.q, qb.padded).reshape(batch, qb.number, qb.size).swapaxes(0, 1)
        seg_kv = _pad(segment_ids.kv, kb.padded).reshape(batch, kb.number, kb.size).swapaxes(0, 1)
    else:
        seg_q = jnp.zeros((qb.number, 1, 1), jnp.int32)
        seg_kv = jnp.zeros((kb.number, 1, 1), jnp.int32)
    if bias is not None:
        pos_q = _pad(bias.q_positions, qb.padded).reshape(batch, qb.number, qb.size).swapaxes(0, 1)
        pos_kv = _pad(bias.kv_positions, kb.padded).reshape(batch, kb.number, kb.size)
        pos_kv = pos_kv.swapaxes(0, 1)
        # [2D + 1, N] -> [2D + 1, K, G]: query head n = kv_head * G + g, as the tiles hold them.
        table = bias.values.astype(f32).reshape(-1, kv_heads, group)
    else:
        pos_q = jnp.zeros((qb.number, 1, 1), jnp.int32)
        pos_kv = jnp.zeros((kb.number, 1, 1), jnp.int32)
        table = None

    tiling = _Tiling(q_len, kv_len, qb, kb, segment_ids is not None, causal, table)

    def run(guard: bool) -> jax.Array:
        return tiling.attend(queries, keys, values, (seg_q, pos_q), (seg_kv, pos_kv), guard)

    out: jax.Array = jax.lax.cond(jnp.isfinite(values).all(), lambda: run(False), lambda: run(True))
    # [nq, B, K, G, bq, H] -> [B, nq, bq, K, G, H] -> [B, Tq, N, H]
    out = out.transpose(1, 0, 4, 2, 3, 5).reshape(batch, qb.padded, heads, head_dim)
    return out[:, :q_len].astype(q.dtype)


class _Tiling(NamedTuple):
    """The static facts of one call that the loop bodies close over."""

    q_len: int
    kv_len: int
    qb: _Blocks
    kb: _Blocks
    segmented: bool
    causal: bool
    table: jax.Array | None
    """The relative bias's values as ``[2D + 1, K, G]`` float32, or None without a bias."""

    def attend(
        self,
        queries: jax.Array,
        keys: jax.Array,
        values: jax.Array,
        rows: tuple[jax.Array, jax.Array],
        columns: tuple[jax.Array, jax.Array],
        guard: bool,
    ) -> jax.Array:
        """All query blocks, one after another: ``[nq, B, K, G, bq, H]`` in float32.

        ``rows`` and ``columns`` are the segment ids and positions of the query and
        key blocks, ``[nq or nk, B or 1, bq or bk]`` each.
        """
        import jax
        import jax.numpy as jnp

        broken = None
        if guard:
            finite = jnp.isfinite(values)
            broken = (~finite).any(axis=-1).astype(jnp.float32)  # [nk, B, K, bk]
            values = jnp.where(finite, values, 0.0)
        seg_q, pos_q = rows
        seg_kv, pos_kv = columns
        key_steps: _KeySteps = (jnp.arange(self.kb.number), keys, values, seg_kv, pos_kv, broken)

        def query_block(
            step: tuple[jax.Array, jax.Array, jax.Array, jax.Array],
        ) -> jax.Array:
            qi, q_tile, seg_q_tile, pos_q_tile = step
            shape = q_tile.shape[:-1]
            init = _State(
                jnp.full(shape, -jnp.inf, jnp.float32),
                jnp.zeros(shape, jnp.float32),
                jnp.zeros(q_tile.shape, jnp.float32),
            )

            def key_block(state: _State, step: _KeySteps) -> tuple[_State, None]:
                ki, k_tile, v_tile, seg_kv_tile, pos_kv_tile, broken_tile = step

                def update(state: _State) -> _State:
                    mask = self.mask(qi, ki, seg_q_tile, seg_kv_tile)
                    added = self.bias(pos_q_tile, pos_kv_tile)
                    return _online_softmax_step(
                        state, q_tile, k_tile, v_tile, mask, broken_tile, added
                    )

                if not self.causal:
                    return update(state), None
                # A key block wholly after the last query of this block contributes nothing.
                last_query = (qi + 1) * self.qb.size - 1 + (self.kv_len - self.q_len)
                needed = ki * self.kb.size <= last_query
                return jax.lax.cond(needed, update, lambda s: s, state), None

            final, _ = jax.lax.scan(key_block, init, key_steps)
            # Rows that allowed no key have a zero sum and a zero accumulator: give 0, not NaN.
            row_sum = jnp.where(final.row_sum == 0.0, 1.0, final.row_sum)
            return final.acc / row_sum[..., None]

        steps = (jnp.arange(self.qb.number), queries, seg_q, pos_q)
        out: jax.Array = jax.lax.map(query_block, steps)
        return out

    def bias(self, pos_q: jax.Array, pos_kv: jax.Array) -> jax.Array | None:
        """The relative bias of one tile, ``[B, K, G, bq, bk]`` float32, or None without one."""
        if self.table is None:
            return None
        added = relative_bias_scores(self.table, pos_q, pos_kv)  # [B, bq, bk, K, G]
        return added.transpose(0, 3, 4, 1, 2)

    def mask(
        self, qi: jax.Array, ki: jax.Array, seg_q: jax.Array, seg_kv: jax.Array
    ) -> jax.Array | None:
        """Allowed (query, key) pairs of one tile, ``[B or 1, 1, 1, bq, bk]``, or None for all.

        Padded keys must be masked; padded queries need not be (they are dropped).
        Under ``causal`` every padded key is after every real query already.
        """
        import jax.numpy as jnp

        mask = None
        if self.segmented:
            mask = seg_q[:, :, None] == seg_kv[:, None, :]  # [B, bq, bk]
        k_pos = ki * self.kb.size + jnp.arange(self.kb.size)
        allowed = None
        if self.causal:
            q_pos = qi * self.qb.size + jnp.arange(self.qb.size) + (self.kv_len - self.q_len)
            allowed = (k_pos[None, :] <= q_pos[:, None])[None]
        elif self.kb.padded != self.kv_len:
            allowed = (k_pos < self.kv_len)[None, None, :]
        if allowed is not None:
            mask = allowed if mask is None else mask & allowed
        return None if mask is None else mask[:, None, None]


def _online_softmax_step(
    state: _State,
    q_tile: jax.Array,
    k_tile: jax.Array,
    v_tile: jax.Array,
    mask: jax.Array | None,
    broken: jax.Array | None,
    bias: jax.Array | None = None,
) -> _State:
    """Fold one key block into the running softmax of one query block."""
    import jax
    import jax.numpy as jnp

    scores = jax.lax.dot_general(q_tile, k_tile, _SCORES, precision=jax.lax.Precision.HIGHEST)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = jnp.where(mask, scores, -jnp.inf)
    row_max = jnp.maximum(state.row_max, scores.max(axis=-1))
    # While a row has allowed no key its maximum is -inf: shift by 0 so exp gives 0, not NaN.
    shift = jnp.where(row_max == -jnp.inf, 0.0, row_max)
    weights = jnp.exp(scores - shift[..., None])
    rescale = jnp.exp(state.row_max - shift)
    row_sum = state.row_sum * rescale + weights.sum(axis=-1)
    acc = state.acc * rescale[..., None] + jax.lax.dot_general(
        weights, v_tile, _MIX, precision=jax.lax.Precision.HIGHEST
    )
    if broken is not None:
        # [B,K,G,bq,bk] x [B,K,bk] -> [B,K,G,bq]: does a row weigh any broken key?
        hits = jax.lax.dot_general((weights > 0).astype(jnp.float32), broken, _MIX)
        acc = jnp.where((hits > 0)[..., None], jnp.nan, acc)
    return _State(row_max, row_sum, acc)


def _pad(x: jax.Array, length: int) -> jax.Array:
    """Zero-pad axis 1 of ``x`` up to ``length``."""
    import jax.numpy as jnp

    extra = length - x.shape[1]
    if not extra:
        return x
    widths = [(0, 0)] * x.ndim
    widths[1] = (0, extra)
    return jnp.pad(x, widths)


def _kv_blocks(x: jax.Array, blocks: _Blocks) -> jax.Array:
    """``[B, Tk, K, H]`` to float32 ``[nk, B, K, bk, H]``."""
    import jax.numpy as jnp

    batch, _, kv_heads, head_dim = x.shape
    x = _pad(x.astype(jnp.float32), blocks.padded)
    x = x.reshape(batch, blocks.number, blocks.size, kv_heads, head_dim)
    return x.transpose(1, 0, 3, 2, 4)
