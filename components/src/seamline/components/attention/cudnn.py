"""``cudnn``: cuDNN's fused flash attention through ``jax.nn.dot_product_attention``.

On NVIDIA GPUs this is the fastest attention JAX ships without a custom kernel,
but it serves a narrower set of inputs than XLA does, and it fails at compile time
(deep in a custom call) when asked for something else. ``supports()`` therefore
repeats, before any call, the checks JAX's cuDNN path makes
(``jax/_src/cudnn/fused_attention_stablehlo.py``: ``check_layout`` and
``check_is_flash_attention``) so the planner can fall back with a reason instead.

The contract gaps are closed by the same wrapper as ``xla-sdpa``, the kernel kit's
:func:`~seamline.contracts.kernel_kit.masked_sdpa`: end-aligned causal masks when
``Tq != Tk`` (cuDNN's causal mask type is start-aligned, like XLA's), zeros for
rows with no allowed key, and no NaN leaking from masked values.
A segment mask is handed to cuDNN as a ``[B, 1, Tq, Tk]`` additive bias, so its
memory is quadratic in the sequence length even though the kernel's is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from seamline.contracts import (
    Attention,
    AttentionSpec,
    ComponentConfig,
    RelativeBias,
    SegmentIds,
    Support,
)
from seamline.contracts.kernel_kit import masked_sdpa, refuse_bias, sdpa_refusals

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

#: cuDNN's flash attention takes half-precision inputs only (fp8 aside).
CUDNN_DTYPES = ("float16", "bfloat16")

#: Largest head size JAX lets through on every GPU generation it supports. Hopper
#: and later allow 256, but the spec's ``device_kind`` names a product, not a
#: compute capability, so that is not claimed here.
MAX_HEAD_DIM = 128

#: ``device_kind`` fragments of GPUs that JAX also reports as platform "gpu" but
#: that have no cuDNN (ROCm builds).
NON_NVIDIA_KINDS = ("amd", "instinct", "radeon")


class CudnnConfig(ComponentConfig):
    """``cudnn`` has nothing to configure."""


class CudnnAttention(Attention[CudnnConfig]):
    """``jax.nn.dot_product_attention(implementation="cudnn")`` with contract semantics."""

    name: ClassVar[str] = "cudnn"
    contract_version: ClassVar[str] = "1.2"
    Config = CudnnConfig
    auto_priority: ClassVar[int] = 0

    def supports(self, spec: AttentionSpec) -> Support:
        """Every reason cuDNN would refuse ``spec``, all of them at once."""
        reasons = sdpa_refusals(spec)
        if spec.platform != "gpu":
            reasons.append(f"cuDNN attention runs only on NVIDIA GPUs; this is {spec.platform}")
        elif any(fragment in spec.device_kind.lower() for fragment in NON_NVIDIA_KINDS):
            reasons.append(f"cuDNN attention runs only on NVIDIA GPUs; this is {spec.device_kind}")
        if spec.dtype not in CUDNN_DTYPES:
            reasons.append(f"cuDNN flash attention takes float16 or bfloat16, not {spec.dtype}")
        if spec.head_dim > MAX_HEAD_DIM or spec.head_dim % 8:
            reasons.append(
                f"head_dim must be a multiple of 8 and at most {MAX_HEAD_DIM}, not {spec.head_dim}"
            )
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """First choice on NVIDIA GPUs; elsewhere it never serves anyway."""
        return 20 if spec.platform == "gpu" else -20

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

        with jax.named_scope("cudnn"):
            return masked_sdpa(
                q,
                k,
                v,
                segment_ids=segment_ids,
                causal=causal,
                scale=scale,
                implementation="cudnn",
            )
