"""``gpu-flash``: JAX's Pallas (Triton) flash-attention kernel for GPUs, behind the contract.

The kernel (``jax.experimental.pallas.ops.gpu.attention.mha``) keeps a block of
queries on chip and streams keys past it with an online softmax, so memory stays
linear in the sequence length. It already uses the contract's ``[B, T, N, H]``
layout. It is used as JAX ships it; what it cannot do is bridged here:

- **One segment-id array.** The kernel takes a single ``[B, T]`` array and reads
  the query's and the key's id from it by position, so queries and keys must have
  the same length and the same ids: self-attention. ``supports()`` refuses
  segments with ``q_len != kv_len``. Batch rows whose query and key ids differ
  (rare: queries of a segment no key has, say) are computed by the reference math
  instead, behind a ``lax.cond``, so the common case (one id array for both, as
  every padded batch has) pays nothing.
- **Grouped queries.** The kernel needs as many key/value heads as query heads, so
  K and V are repeated ``N // K`` times (a copy of K and V, ``N // K`` times their
  memory traffic; no extra arithmetic).
- **Lengths.** Tiles are powers of two (Triton's rule) of at least 16 (its
  smallest matrix product), and the kernel needs lengths that are multiples of
  them. Sequences are padded; padded keys are hidden behind a segment id no real
  query carries. With one id per position, a padded key must sit where no real
  query does, which holds for every case but one: without causal, more queries
  than keys, and a key length that is not a whole number of tiles (refused).
- **Causal alignment.** The kernel aligns its causal rule to the *start*
  (``j <= i``); the contract aligns queries to the *end* of the keys
  (``j <= i + Tk - Tq``). Without segments the shorter side is padded at the front
  by ``|Tk - Tq|`` so both rules agree (decoding thus computes one query row per
  key, and :meth:`GpuFlashAttention.priority` steps back); with segments
  ``Tq == Tk`` anyway.
- **Head size.** The kernel pads the head dimension to a power of two itself;
  sizes below 16 are zero-padded here to Triton's minimum.
- **Empty rows.** A query with no key it may attend comes out as an average of
  masked values, not zeros; such rows are found from the segment ids and zeroed.
- **Non-finite keys.** A NaN or inf in a key or value that no query may attend
  must not matter (the reference ignores it), but in a kernel ``0 * NaN`` is NaN
  and spreads through the tile; such entries are zeroed on the way in, and the
  rows that do attend one are set to NaN on the way out, as the reference gives.
- **float32 precision.** Triton multiplies float32 in TF32 by default (about three
  decimal digits). The kernel is traced with full float32 products unless
  ``allow_tf32`` is set, so float32 results hold the reference's tolerance.

``interpret: true`` runs the kernel through Pallas's interpreter on any backend:
slow, but it is how it is tested without a GPU.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from pydantic import Field, field_validator

from seamline.contracts import (
    Attention,
    AttentionSpec,
    ComponentConfig,
    RelativeBias,
    SegmentIds,
    Support,
)
from seamline.contracts.kernel_kit import (
    KernelLimits,
    clean_keys,
    next_power_of_two,
    pad_axis,
    padding_id,
    pallas_refusals,
    poison,
    poisoned_rows,
    reference_attention,
    refuse_bias,
    repeat_kv_heads,
    round_up,
    rows_with_keys,
    static_scale,
    zero_rows,
)

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

DEFAULT_BLOCK = 128
#: Triton's smallest matrix-product tile side.
MIN_TILE = 16
DTYPES = ("float32", "bfloat16", "float16")


class GpuFlashConfig(ComponentConfig):
    """The ``with:`` block of ``gpu-flash``."""

    interpret: bool = Field(
        default=False,
        description="Run the kernel in Pallas's interpret mode instead of compiling it with "
        "Triton, so it runs (slowly) without a GPU; for testing.",
    )
    block_q: int | None = Field(
        default=None,
        description="Query rows per tile, a power of two of at least 16. Default 128, or the "
        "padded length when that is shorter.",
    )
    block_k: int | None = Field(
        default=None,
        description="Keys per tile, a power of two of at least 16. Default 128, or the padded "
        "length when that is shorter.",
    )
    allow_tf32: bool = Field(
        default=False,
        description="Let float32 products run in TF32 on tensor cores: faster, but only about "
        "three significant digits. Off, float32 inputs are multiplied in full float32.",
    )

    @field_validator("block_q", "block_k")
    @classmethod
    def _power_of_two(cls, value: int | None) -> int | None:
        if value is not None and (value < MIN_TILE or value & (value - 1)):
            raise ValueError(f"must be a power of two of at least {MIN_TILE}, not {value}")
        return value


@dataclass(frozen=True, slots=True)
class _Layout:
    """How one call is laid out for the kernel.

    ``shared``: queries and keys are padded to one length and share one id per
    position (segments, causal, or keys that need hiding). Otherwise (no segments,
    no causal, keys a whole number of tiles) each side keeps its own length and the
    kernel gets no ids at all.
    """

    shared: bool
    lead_q: int
    lead_k: int
    padded_q: int
    padded_k: int
    block_q: int
    block_k: int

    @classmethod
    def plan(
        cls, config: GpuFlashConfig, q_len: int, kv_len: int, causal: bool, segmented: bool
    ) -> _Layout | None:
        """The layout, or None where the kernel cannot express the call (see ``supports``)."""
        if segmented and q_len != kv_len:
            return None
        if not causal and not segmented:
            block_q, block_k = _tile(config.block_q, q_len), _tile(config.block_k, kv_len)
            if kv_len % block_k == 0:  # no key to hide: each side keeps its own length
                return cls(False, 0, 0, round_up(q_len, block_q), kv_len, block_q, block_k)
            if q_len > kv_len:
                return None
        lead_q = max(kv_len - q_len, 0) if causal else 0
        lead_k = max(q_len - kv_len, 0) if causal else 0
        length = max(q_len, kv_len)
        block_q = _tile(config.block_q, length)
        block_k = _tile(config.block_k, length)
        padded = round_up(length, max(block_q, block_k))
        return cls(True, lead_q, lead_k, padded, padded, block_q, block_k)

    def wasteful(self, q_len: int) -> bool:
        """Whether aligning the two sides more than doubles the query rows computed."""
        return self.padded_q > 2 * max(q_len, self.block_q)


def _tile(configured: int | None, length: int) -> int:
    """The configured tile, or less for a short sequence (a power of two, at least 16)."""
    return min(configured or DEFAULT_BLOCK, max(MIN_TILE, next_power_of_two(length)))


LIMITS = KernelLimits(
    kernel="Pallas GPU (Triton) kernel",
    short="GPU kernel",
    platform="gpu",
    dtypes=DTYPES,
    missing="has no Pallas GPU attention",
)


class GpuFlashAttention(Attention[GpuFlashConfig]):
    """Pallas Triton flash attention, padded and masked to the contract's rules."""

    name: ClassVar[str] = "gpu-flash"
    contract_version: ClassVar[str] = "1.2"
    Config = GpuFlashConfig
    auto_priority: ClassVar[int] = 15
    short_keys: ClassVar[int] = 512
    """At most this many keys, ``auto`` ranks the kernel below the XLA attentions (see
    :meth:`priority`)."""

    def supports(self, spec: AttentionSpec) -> Support:
        """Refuse no GPU (unless interpreted), the dtype, and what one id array cannot say.

        The kernel reads query and key ids from one array by position, so segments
        need ``q_len == kv_len``, and a padded key cannot be hidden from a real
        query at its own position (non-causal, more queries than keys, keys not in
        whole tiles).
        """
        reasons = pallas_refusals(spec, LIMITS, _kernel, self.config.interpret)
        if spec.q_len < 1 or spec.kv_len < 1:
            pass  # already refused as an empty sequence; the layout checks need lengths
        elif spec.segmented and spec.q_len != spec.kv_len:
            reasons.append(
                "the GPU kernel takes one segment-id array for queries and keys, so segments "
                f"need q_len == kv_len (got {spec.q_len} and {spec.kv_len})"
            )
        elif self._plan(spec) is None:
            reasons.append(
                f"without causal, {spec.q_len} queries against {spec.kv_len} keys would need "
                "padded keys at positions that real queries hold, and the kernel's one "
                "segment-id array cannot hide a key from the query at its own position "
                "(a key length that is a multiple of the key tile works)"
            )
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """A good choice on GPU for long sequences; off GPU only a last resort (interpret
        mode is very slow).

        It steps back below the reference where it was measured to lose, or computes
        more than it must:

        * at most :attr:`short_keys` keys: on an NVIDIA H200 (2026-12-04, float32, 12
          heads of 64, 512 tokens; benchmarks/results/h200/README.md) one call took
          3.1 ms against 0.2 ms for ``native`` and 0.3 ms for ``xla-sdpa``, and its
          compilation 17 s against 8 s: at sentence-embedding lengths the padding, the
          launch and Triton's compilation cost more than the kernel saves;
        * where lining queries up with keys (causal decoding against a cache, say)
          computes more than twice the query rows.
        """
        if spec.platform != "gpu":
            return -10
        if spec.kv_len <= self.short_keys:
            return -5
        layout = self._plan(spec)
        if layout is not None and layout.wasteful(spec.q_len):
            return -5
        return self.auto_priority

    def _plan(self, spec: AttentionSpec) -> _Layout | None:
        return _Layout.plan(self.config, spec.q_len, spec.kv_len, spec.causal, spec.segmented)

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
        refuse_bias(self.name, bias)
        import jax
        import jax.numpy as jnp

        kernel = _kernel()
        batch, q_len, heads, head_dim = q.shape
        kv_len, kv_heads = k.shape[1], k.shape[2]
        layout = _Layout.plan(self.config, q_len, kv_len, causal, segment_ids is not None)
        if layout is None:
            raise ValueError(
                f"gpu-flash cannot serve q_len {q_len}, kv_len {kv_len}, causal {causal}, "
                f"segments {segment_ids is not None}; supports() says why"
            )
        mismatch = None if segment_ids is None else _differing_rows(segment_ids)
        original = (q, k, v, scale)
        valid = rows_with_keys(segment_ids, q_len, kv_len, causal)
        k, v, broken = clean_keys(k, v)
        q, sm_scale = static_scale(q, scale)

        group = heads // kv_heads
        width = max(head_dim, MIN_TILE)
        qp = _pad(q, layout.lead_q, layout.padded_q, width)
        kp = _pad(repeat_kv_heads(k, group, 2), layout.lead_k, layout.padded_k, width)
        vp = _pad(repeat_kv_heads(v, group, 2), layout.lead_k, layout.padded_k, width)
        ids = _position_ids(segment_ids, batch, kv_len, layout)

        precision = (
            contextlib.nullcontext()
            if self.config.allow_tf32 or q.dtype != jnp.float32
            else jax.default_matmul_precision("highest")
        )
        with precision:
            out = kernel.mha(
                qp,
                kp,
                vp,
                ids,
                sm_scale=sm_scale,
                causal=causal,
                block_sizes=kernel.BlockSizes(block_q=layout.block_q, block_k=layout.block_k),
                interpret=self.config.interpret,
            )
        out = zero_rows(out[:, layout.lead_q : layout.lead_q + q_len, :, :head_dim], valid)
        out = poison(out, poisoned_rows(broken, segment_ids, q_len, heads, causal))
        if mismatch is not None:
            out = _reference_rows(out, mismatch, original, segment_ids, causal)
        return out.astype(q.dtype)


def _kernel() -> ModuleType:
    """The kernel's module, imported on first use.

    The registry imports every installed component to list it, and importing
    Pallas costs a second or two; a JAX without this kernel then makes
    ``supports()`` refuse with the import error instead of breaking discovery.
    """
    from jax.experimental.pallas.ops.gpu import attention

    return attention


def _pad(x: jax.Array, lead: int, padded: int, width: int) -> jax.Array:
    """Pad ``[B, T, N, H]``: ``lead`` rows in front, tail rows to ``padded``, heads to ``width``."""
    x = pad_axis(x, 1, lead, padded - lead - x.shape[1])
    return pad_axis(x, 3, 0, width - x.shape[3])


def _position_ids(
    segment_ids: SegmentIds | None, batch: int, kv_len: int, layout: _Layout
) -> jax.Array | None:
    """The kernel's one ``[B, T']`` id array, or None when no key needs hiding.

    A position holding a real key keeps its id (0 when the caller gave none);
    every other position gets an id no real query carries. The positions that
    hold a real query but no real key are the front rows of causal attention with
    more queries than keys, which have no key to attend anyway and are zeroed.
    """
    import jax.numpy as jnp

    if not layout.shared:
        return None
    tail = layout.padded_k - layout.lead_k - kv_len
    if segment_ids is not None:
        ids = segment_ids.q.astype(jnp.int32)
        return pad_axis(ids, 1, 0, tail, padding_id(ids))
    if layout.lead_k == 0 and tail == 0:
        return None
    real = np.zeros(layout.padded_k, np.int32) - 1
    real[layout.lead_k : layout.lead_k + kv_len] = 0
    return jnp.broadcast_to(jnp.asarray(real), (batch, layout.padded_k))


def _reference_rows(
    out: jax.Array,
    mismatch: jax.Array,
    original: tuple[jax.Array, jax.Array, jax.Array, float | None],
    segment_ids: SegmentIds | None,
    causal: bool,
) -> jax.Array:
    """Replace the rows the kernel could not express by the reference's, only if there are any."""
    import jax
    import jax.numpy as jnp

    q, k, v, scale = original

    def exact() -> jax.Array:
        expected = reference_attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)
        return jnp.where(mismatch[:, None, None, None], expected.astype(out.dtype), out)

    replaced: jax.Array = jax.lax.cond(jnp.any(mismatch), exact, lambda: out)
    return replaced


def _differing_rows(segment_ids: SegmentIds) -> jax.Array | None:
    """``[B]`` flags of rows whose query and key ids differ, which the kernel cannot express.

    None when they are the same array, or known and equal. Rows flagged here take
    the reference's answer (see :func:`_reference_rows`).
    """
    import jax.numpy as jnp

    if segment_ids.q is segment_ids.kv:
        return None
    if _is_concrete(segment_ids.q) and _is_concrete(segment_ids.kv):
        differ = np.any(np.asarray(segment_ids.q) != np.asarray(segment_ids.kv), axis=1)
        return jnp.asarray(differ) if differ.any() else None
    return jnp.any(segment_ids.q != segment_ids.kv, axis=1)


def _is_concrete(x: jax.Array) -> bool:
    """Whether ``x`` holds values now (not a tracer inside ``jit``/``vmap``)."""
    import jax

    return not isinstance(x, jax.core.Tracer)
