"""``native``: attention written plainly in XLA, the reference every other kernel is held to.

It materialises the full ``[B, N, Tq, Tk]`` score matrix, so its memory grows with
the square of the sequence length; what it buys is obviousness. Scores and softmax
are computed in float32 whatever the input dtype, so the reference is at least as
accurate as anything compared with it. The math is the kernel kit's
:func:`~seamline.contracts.kernel_kit.reference_attention`, which other kernels
may use as their fallback without importing this module.
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
from seamline.contracts.kernel_kit import reference_attention

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax


class NativeConfig(ComponentConfig):
    """``native`` has nothing to configure."""


class NativeAttention(Attention[NativeConfig]):
    """Reference attention: einsum, masked softmax in float32, einsum."""

    name: ClassVar[str] = "native"
    contract_version: ClassVar[str] = "1.2"
    Config = NativeConfig
    auto_priority: ClassVar[int] = 0
    is_reference: ClassVar[bool] = True
    #: The reference serves every bias the contract defines, so every other is checked.
    score_biases: ClassVar[tuple[str, ...]] = ("relative",)

    def supports(self, spec: AttentionSpec) -> Support:
        if spec.num_heads % spec.num_kv_heads:
            return Support.no(
                f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
            )
        if spec.dtype not in ("float32", "bfloat16", "float16"):
            return Support.no(f"dtype {spec.dtype} is not a floating type it computes in")
        return Support.yes()

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
        return reference_attention(
            q, k, v, segment_ids=segment_ids, causal=causal, scale=scale, bias=bias
        )
