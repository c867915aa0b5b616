"""``xla-sdpa``: ``jax.nn.dot_product_attention`` with its XLA implementation, held to the contract.

JAX's own attention is maintained upstream and lowers well on every backend, so it
is a good default on TPU. Three of its behaviours differ from the seamline
contract, and the kernel kit's :func:`~seamline.contracts.kernel_kit.masked_sdpa`
(shared with ``cudnn``) closes exactly those gaps:

* its ``is_causal`` mask is aligned to the *start* of the keys (``tril``), while the
  contract aligns queries to the *end* of the keys; when ``Tq != Tk`` the causal
  condition is folded into the boolean mask instead;
* a row with no allowed key gets a uniform average of the values, where the
  contract wants zeros; such rows are replaced with ``where``;
* a masked key's weight is an exact zero, but ``0 * NaN`` is NaN, so NaN-filled
  padding in ``v`` would leak into every row; values are cleaned when (and only
  when) some value is not finite, and rows that may attend to a non-finite value
  are poisoned afterwards so that a real NaN still shows.

Grouped queries (``K < N``) are handled natively by ``jax.nn``: it views the query
heads as ``[K, G]`` and never repeats K/V.
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

#: The dtypes ``jax.nn.dot_product_attention``'s XLA path computes in (scores in float32).
FLOAT_DTYPES = ("float32", "bfloat16", "float16")


class XlaSdpaConfig(ComponentConfig):
    """``xla-sdpa`` has nothing to configure."""


class XlaSdpaAttention(Attention[XlaSdpaConfig]):
    """``jax.nn.dot_product_attention(implementation="xla")`` with contract semantics."""

    name: ClassVar[str] = "xla-sdpa"
    contract_version: ClassVar[str] = "1.2"
    Config = XlaSdpaConfig
    auto_priority: ClassVar[int] = 0

    def supports(self, spec: AttentionSpec) -> Support:
        reasons = sdpa_refusals(spec)
        if spec.dtype not in FLOAT_DTYPES:
            reasons.append(f"dtype {spec.dtype} is not one of {', '.join(FLOAT_DTYPES)}")
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """First choice on TPU, where XLA's fused attention is strong; behind kernels on GPU.

        On CPU it materialises the same score matrix as ``native`` with more
        overhead, so ``native`` (short) and ``blockwise`` (long) come first.
        """
        return {"tpu": 5, "gpu": 1}.get(spec.platform, -5)

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

        with jax.named_scope("xla-sdpa"):
            return masked_sdpa(
                q,
                k,
                v,
                segment_ids=segment_ids,
                causal=causal,
                scale=scale,
                implementation="xla",
            )
