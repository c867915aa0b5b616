"""``tpu-flash``: JAX's Pallas flash-attention kernel for TPU, behind the attention contract.

The kernel (``jax.experimental.pallas.ops.tpu.flash_attention``) streams keys
through VMEM in blocks with an online softmax, so memory stays linear in the
sequence length. It is used as JAX ships it, never forked: what it cannot do is
bridged here, outside the kernel, so that a JAX upgrade replaces the kernel
without touching this wrapper's semantics. The bridges, and what each costs:

- **Layout.** The kernel wants ``[B, N, T, H]``; the contract gives ``[B, T, N, H]``.
  Q, K and V are transposed on the way in (fused with the padding), the output on
  the way out.
- **Grouped queries.** The kernel needs as many key/value heads as query heads, so
  K and V are repeated ``N // K`` times (a copy of K and V, and ``N // K`` times
  their memory traffic; no extra arithmetic).
- **Lengths.** The kernel needs the key length to be a multiple of its key block
  (128 or more, a multiple of 128) and the query length of its query block. Both
  are padded; padded keys get a segment id no real query carries (one below the
  smallest query id), and when the caller gave no segment ids, ids are made up for
  the padding alone. Padded queries are computed and dropped.
- **Causal alignment.** The kernel's causal mask is aligned to the *start*
  (key ``j`` visible to query ``i`` iff ``j <= i``); the contract aligns queries to
  the *end* of the keys (``j <= i + Tk - Tq``). The two agree when ``Tq == Tk``.
  Otherwise the shorter side is padded at the front by ``|Tk - Tq|`` rows (queries
  that are dropped, or keys hidden by the padding id), which makes the lengths
  equal and the two rules the same. Decoding a few queries against a long cache
  therefore computes as many query rows as there are keys; :meth:`priority` steps
  back in that case.
- **Head size.** Above 128 the kernel needs a multiple of 128; other sizes are
  zero-padded (zeros add nothing to ``q·k`` and the extra output columns are cut).
- **Empty rows.** A query with no key it may attend comes out of the kernel as
  the average of the masked values, not zeros; such rows are found from the
  segment ids (:func:`~seamline.contracts.kernel_kit.rows_with_keys`) and
  zeroed.
- **Non-finite keys.** A NaN or inf in a key or value that no query may attend
  must not matter (the reference ignores it), but in a kernel ``0 * NaN`` is NaN
  and spreads through the tile; such entries are zeroed on the way in, and the
  rows that do attend one are set to NaN on the way out, as the reference gives.

``interpret: true`` runs the same kernel through Pallas's TPU interpreter, which
simulates the TPU's memories on the CPU: slow (seconds per call), but it is how the
kernel is tested without a TPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from seamline.components.attention._tpu_tiles import (
    DEFAULT_BLOCK,
    DTYPES,
    LANES,
    SUBLANES,
    TpuTilesConfig,
)
from seamline.contracts import Attention, AttentionSpec, RelativeBias, SegmentIds, Support
from seamline.contracts.kernel_kit import (
    KernelLimits,
    clean_keys,
    pad_axis,
    padding_id,
    pallas_refusals,
    poison,
    poisoned_rows,
    refuse_bias,
    repeat_kv_heads,
    round_up,
    rows_with_keys,
    static_scale,
    tpu_interpret_mode,
    zero_rows,
)

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax


class TpuFlashConfig(TpuTilesConfig):
    """The ``with:`` block of ``tpu-flash``."""


@dataclass(frozen=True, slots=True)
class _Layout:
    """How one call is padded: front rows for causal alignment, then tail rows to blocks."""

    lead_q: int
    lead_k: int
    padded_q: int
    padded_k: int
    block_q: int
    block_k: int
    head_dim: int

    @classmethod
    def plan(
        cls, config: TpuFlashConfig, q_len: int, kv_len: int, head_dim: int, causal: bool
    ) -> _Layout:
        """Pad the shorter side in front when causal, then each side to whole blocks."""
        lead_q = max(kv_len - q_len, 0) if causal else 0
        lead_k = max(q_len - kv_len, 0) if causal else 0
        rows_q, rows_k = q_len + lead_q, kv_len + lead_k
        block_q = min(config.block_q or DEFAULT_BLOCK, round_up(rows_q, SUBLANES))
        block_k = config.block_k or DEFAULT_BLOCK
        padded_head = head_dim if head_dim <= LANES else round_up(head_dim, LANES)
        return cls(
            lead_q,
            lead_k,
            round_up(rows_q, block_q),
            round_up(rows_k, block_k),
            block_q,
            block_k,
            padded_head,
        )


LIMITS = KernelLimits(
    kernel="Pallas TPU kernel",
    short="TPU kernel",
    platform="tpu",
    dtypes=DTYPES,
    missing="lacks Pallas TPU flash attention",
)


class TpuFlashAttention(Attention[TpuFlashConfig]):
    """Pallas TPU flash attention, padded and masked so that any shape the contract allows works."""

    name: ClassVar[str] = "tpu-flash"
    contract_version: ClassVar[str] = "1.2"
    Config = TpuFlashConfig
    auto_priority: ClassVar[int] = 30

    def supports(self, spec: AttentionSpec) -> Support:
        """Refuse only what padding cannot bridge: no TPU (unless interpreted), the dtype.

        Lengths, head sizes, grouped queries and causal with ``Tq != Tk`` are all
        served by padding inside, so they are not reasons to refuse.
        """
        reasons = pallas_refusals(spec, LIMITS, _kernel, self.config.interpret)
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """First choice on TPU; off TPU only a last resort (interpret mode is very slow).

        With causal and many more keys than queries (decoding against a cache), the
        front padding that aligns the kernel's causal rule to the contract's computes
        a query row per key; where that more than doubles the query rows, it steps
        back below the reference.
        """
        if spec.platform != "tpu":
            return -10
        layout = _Layout.plan(self.config, spec.q_len, spec.kv_len, spec.head_dim, spec.causal)
        if layout.padded_q > 2 * max(spec.q_len, layout.block_q):
            return -5
        return self.auto_priority

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
        kernel = _kernel()
        batch, q_len, heads, head_dim = q.shape
        kv_len, kv_heads = k.shape[1], k.shape[2]
        layout = _Layout.plan(self.config, q_len, kv_len, head_dim, causal)
        valid = rows_with_keys(segment_ids, q_len, kv_len, causal)
        k, v, broken = clean_keys(k, v)
        q, sm_scale = static_scale(q, scale)

        group = heads // kv_heads
        qt = _to_kernel(q, layout, keys=False)
        kt = _to_kernel(repeat_kv_heads(k, group, 2), layout, keys=True)
        vt = _to_kernel(repeat_kv_heads(v, group, 2), layout, keys=True)
        ids = _kernel_segment_ids(segment_ids, batch, q_len, kv_len, layout)

        sizes = kernel.BlockSizes(
            block_q=layout.block_q,
            block_k_major=layout.block_k,
            block_k=layout.block_k,
            block_b=1,
        )
        with tpu_interpret_mode(self.config.interpret):
            out = kernel.flash_attention(
                qt,
                kt,
                vt,
                segment_ids=None if ids is None else kernel.SegmentIds(*ids),
                causal=causal,
                sm_scale=sm_scale,
                block_sizes=sizes,
            )
        out = out[:, :, layout.lead_q : layout.lead_q + q_len, :head_dim].transpose(0, 2, 1, 3)
        out = poison(
            zero_rows(out, valid), poisoned_rows(broken, segment_ids, q_len, heads, causal)
        )
        return out.astype(q.dtype)


def _kernel() -> ModuleType:
    """The kernel's module, imported on first use.

    The registry imports every installed component to list it, and importing
    Pallas costs a second or two; a JAX without this kernel then makes
    ``supports()`` refuse with the import error instead of breaking discovery.
    """
    from jax.experimental.pallas.ops.tpu import flash_attention

    return flash_attention


def _to_kernel(x: jax.Array, layout: _Layout, *, keys: bool) -> jax.Array:
    """``[B, T, N, H]`` to the kernel's ``[B, N, T', H']``: front rows, tail rows, head padding."""
    lead, padded = (layout.lead_k, layout.padded_k) if keys else (layout.lead_q, layout.padded_q)
    x = x.transpose(0, 2, 1, 3)
    x = pad_axis(x, 2, lead, padded - lead - x.shape[2])
    return pad_axis(x, 3, 0, layout.head_dim - x.shape[3])


def _kernel_segment_ids(
    segment_ids: SegmentIds | None, batch: int, q_len: int, kv_len: int, layout: _Layout
) -> tuple[jax.Array, jax.Array] | None:
    """Query and key ids for the padded sequences, or None when no key is padded or masked.

    Padded keys (front and tail) get an id below every real query id, so nothing
    real attends to them; padded queries get the same id and are dropped anyway.
    """
    import jax.numpy as jnp

    padded_keys = layout.lead_k > 0 or layout.padded_k > kv_len
    if segment_ids is None and not padded_keys:
        return None
    if segment_ids is None:
        q_ids = jnp.zeros((batch, q_len), jnp.int32)
        kv_ids = jnp.zeros((batch, kv_len), jnp.int32)
        pad: jax.Array | int = -1
    else:
        q_ids = segment_ids.q.astype(jnp.int32)
        kv_ids = segment_ids.kv.astype(jnp.int32)
        pad = padding_id(q_ids)
    q_ids = pad_axis(q_ids, 1, layout.lead_q, layout.padded_q - layout.lead_q - q_len, pad)
    kv_ids = pad_axis(kv_ids, 1, layout.lead_k, layout.padded_k - layout.lead_k - kv_len, pad)
    return q_ids, kv_ids
