"""``tpu-splash``: JAX's Pallas splash-attention kernel for TPU, behind the attention contract.

Splash ("sparse flash") attention takes its mask as a static, per-head object and
skips whole key blocks the mask rules out, so causal attention does about half the
work of the dense kernel. It is used as JAX ships it
(``jax.experimental.pallas.ops.tpu.splash_attention``); what it cannot do is bridged
here, outside the kernel:

- **Batch.** The kernel attends one sequence (``q [N, T, H]``, ``k, v [K, T, H]``,
  one id per token); the batch is a ``vmap`` over it.
- **Grouped queries** are native (query head ``n`` reads key/value head
  ``n // (N // K)``, the contract's rule); K and V are not copied.
- **Causal alignment.** The kernel's ``CausalMask`` takes an offset, and
  ``Tk - Tq`` is exactly the contract's end alignment, so any ``Tq``/``Tk`` works
  without padding the front.
- **Lengths.** Sequences are padded to the kernel's blocks (keys to a multiple of
  128). Causal attention never reaches a padded key (it lies after every real
  query's limit); otherwise padded keys get a segment id no real query carries,
  made up when the caller gave none. Padded queries are computed and dropped.
- **Scale.** The kernel has no scale argument: ``q`` is multiplied by it first, in
  ``q``'s dtype (exact for power-of-two scales such as ``1/sqrt(64)``; in
  bfloat16 other scales add one rounding of ``q``).
- **Empty rows.** A query with no key to attend comes out as NaN (a skipped block
  leaves a zero denominator) or as an average of masked keys; such rows are found
  from the segment ids and zeroed.
- **Non-finite keys.** A NaN or inf in a key or value that no query may attend
  must not matter (the reference ignores it), but in a kernel ``0 * NaN`` is NaN
  and spreads through the tile; such entries are zeroed on the way in, and the
  rows that do attend one are set to NaN on the way out, as the reference gives.

``interpret: true`` runs the kernel through Pallas's TPU interpreter on the CPU:
slow, but it is how the kernel is tested without a TPU.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from seamline.components.attention._tpu_tiles import (
    DEFAULT_BLOCK,
    DTYPES,
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
    round_up,
    rows_with_keys,
    tpu_interpret_mode,
    zero_rows,
)

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax


class TpuSplashConfig(TpuTilesConfig):
    """The ``with:`` block of ``tpu-splash``: the same settings as ``tpu-flash``."""


LIMITS = KernelLimits(
    kernel="Pallas TPU kernel",
    short="TPU kernel",
    platform="tpu",
    dtypes=DTYPES,
    missing="has no Pallas splash attention",
)


class TpuSplashAttention(Attention[TpuSplashConfig]):
    """Pallas TPU splash attention over a batch, padded and masked to the contract's rules."""

    name: ClassVar[str] = "tpu-splash"
    contract_version: ClassVar[str] = "1.2"
    Config = TpuSplashConfig
    auto_priority: ClassVar[int] = 35

    def supports(self, spec: AttentionSpec) -> Support:
        """Refuse only what padding cannot bridge: no TPU (unless interpreted), the dtype.

        Lengths, grouped queries and causal with ``Tq != Tk`` (the mask's offset)
        are all served, so they are not reasons to refuse.
        """
        reasons = pallas_refusals(spec, LIMITS, _kernel, self.config.interpret)
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """First choice on TPU (it skips masked blocks); off TPU only a last resort."""
        return self.auto_priority if spec.platform == "tpu" else -10

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
        splash = _kernel()
        batch, q_len, heads, head_dim = q.shape
        kv_len = k.shape[1]
        block_q = min(self.config.block_q or DEFAULT_BLOCK, round_up(q_len, SUBLANES))
        block_k = self.config.block_k or DEFAULT_BLOCK
        padded_q, padded_k = round_up(q_len, block_q), round_up(kv_len, block_k)
        valid = rows_with_keys(segment_ids, q_len, kv_len, causal)
        k, v, broken = clean_keys(k, v)
        scale = head_dim**-0.5 if scale is None else scale

        # [B, T, heads, H] -> [B, heads, T', H], the kernel's per-sequence layout.
        qt = pad_axis((q * scale).astype(q.dtype).transpose(0, 2, 1, 3), 2, 0, padded_q - q_len)
        kt = pad_axis(k.transpose(0, 2, 1, 3), 2, 0, padded_k - kv_len)
        vt = pad_axis(v.transpose(0, 2, 1, 3), 2, 0, padded_k - kv_len)

        shape = (padded_q, padded_k)
        if causal:
            masks = [splash.CausalMask(shape, offset=kv_len - q_len) for _ in range(heads)]
        else:
            masks = [splash.FullMask(shape) for _ in range(heads)]
        sizes = splash.BlockSizes(block_q=block_q, block_kv=block_k, block_kv_compute=block_k)
        with tpu_interpret_mode(self.config.interpret):
            kernel = splash.make_splash_mha(
                splash.MultiHeadMask(masks), block_sizes=sizes, head_shards=1, q_seq_shards=1
            )
            # Causal attention never reaches a tail-padded key; otherwise ids must hide them.
            padded_keys_visible = padded_k > kv_len and not causal
            if segment_ids is None and not padded_keys_visible:
                out = self._over_batch(kernel, qt, kt, vt)
            else:
                q_ids, kv_ids = _kernel_segment_ids(segment_ids, batch, q_len, kv_len, shape)

                def one(
                    q: jax.Array, k: jax.Array, v: jax.Array, qi: jax.Array, ki: jax.Array
                ) -> jax.Array:
                    row: jax.Array = kernel(q, k, v, segment_ids=splash.SegmentIds(qi, ki))
                    return row

                out = self._over_batch(one, qt, kt, vt, q_ids, kv_ids)
        out = out[:, :, :q_len].transpose(0, 2, 1, 3)
        out = poison(
            zero_rows(out, valid), poisoned_rows(broken, segment_ids, q_len, heads, causal)
        )
        return out.astype(q.dtype)

    def _over_batch(self, fn: Callable[..., jax.Array], *args: jax.Array) -> jax.Array:
        """Apply the one-sequence kernel to every batch row.

        On TPU this is ``vmap``, which the kernel's batching rule turns into one
        more parallel grid axis: one launch for the batch. JAX's TPU interpreter
        (0.10.2) cannot run a vmapped kernel (it pairs the grid with the kernel's
        declared dimension semantics and finds one axis too many), so in interpret
        mode the rows go through ``lax.map``, one launch each, same kernel.
        """
        import jax

        if self.config.interpret:
            rows: jax.Array = jax.lax.map(lambda row: fn(*row), args)
            return rows
        return jax.vmap(fn)(*args)


def _kernel() -> ModuleType:
    """The kernel's package, imported on first use.

    The registry imports every installed component to list it, and importing
    Pallas costs a second or two; a JAX without this kernel then makes
    ``supports()`` refuse with the import error instead of breaking discovery.
    """
    from jax.experimental.pallas.ops.tpu import splash_attention

    return splash_attention


def _kernel_segment_ids(
    segment_ids: SegmentIds | None, batch: int, q_len: int, kv_len: int, shape: tuple[int, int]
) -> tuple[jax.Array, jax.Array]:
    """``[B, Tq']`` and ``[B, Tk']`` ids where padded keys carry an id no real query has."""
    import jax.numpy as jnp

    if segment_ids is None:
        q_ids = jnp.zeros((batch, q_len), jnp.int32)
        kv_ids = jnp.zeros((batch, kv_len), jnp.int32)
        pad: jax.Array | int = -1
    else:
        q_ids = segment_ids.q.astype(jnp.int32)
        kv_ids = segment_ids.kv.astype(jnp.int32)
        pad = padding_id(q_ids)
    return (
        pad_axis(q_ids, 1, 0, shape[0] - q_len, pad),
        pad_axis(kv_ids, 1, 0, shape[1] - kv_len, pad),
    )
