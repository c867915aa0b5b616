"""What a Pallas kernel's wrapper needs around the call: refusals, a static scale, interpreting.

The Pallas kernels JAX ships (TPU flash and splash attention, the GPU Triton
kernel) share most reasons to refuse a call (:func:`pallas_refusals`), all take
the softmax scale as a static Python float (:func:`static_scale`), and run
without their hardware only through Pallas's interpreter (:func:`tpu_interpret_mode`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

# Only for annotations: of the rest the kit imports numpy alone at load, and JAX in the
# functions that use it, so that importing a kernel's module does not import JAX.
if TYPE_CHECKING:
    import jax

    from seamline.contracts.attention import AttentionSpec


@dataclass(frozen=True, slots=True)
class KernelLimits:
    """What a Pallas kernel component refuses for reasons it shares with the others."""

    kernel: str
    """How the kernel is named in messages, e.g. "Pallas TPU kernel"."""
    short: str
    """The short name in the dtype message, e.g. "TPU kernel"."""
    platform: str
    """The platform it runs on natively, e.g. "tpu"."""
    dtypes: tuple[str, ...]
    missing: str
    """What this JAX lacks when the kernel's module does not import."""


def pallas_refusals(
    spec: AttentionSpec, limits: KernelLimits, load: Callable[[], object], interpret: bool
) -> list[str]:
    """The refusals every Pallas kernel component shares: kernel, platform, heads, dtype, length.

    ``load`` imports the kernel's module; an ``ImportError`` becomes a reason, so a
    JAX without the kernel makes ``supports()`` refuse instead of breaking discovery.
    """
    import jax

    reasons = []
    try:
        load()
    except ImportError as error:
        reasons.append(f"this JAX ({jax.__version__}) {limits.missing}: {error}")
    if spec.platform != limits.platform and not interpret:
        reasons.append(
            f"the {limits.kernel} runs only on {limits.platform.upper()}; set interpret: true "
            f"to run it (slowly) on {spec.platform}"
        )
    if spec.num_kv_heads < 1 or spec.num_heads % spec.num_kv_heads:
        reasons.append(
            f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
        )
    if spec.dtype not in limits.dtypes:
        reasons.append(
            f"dtype {spec.dtype} is not one the {limits.short} computes in "
            f"({', '.join(limits.dtypes)})"
        )
    if spec.q_len < 1 or spec.kv_len < 1:
        reasons.append(f"empty sequence (q_len {spec.q_len}, kv_len {spec.kv_len})")
    return reasons


def static_scale(q: jax.Array, scale: float | jax.Array | None) -> tuple[jax.Array, float]:
    """Queries and the scale a kernel can take as a static argument.

    ``None`` is the contract's default ``1 / sqrt(H)``. A Python number is passed
    through; a traced scale (inside ``jit``) cannot be a static kernel argument, so
    it is folded into ``q`` (in ``q``'s dtype) and the kernel gets ``1.0``.
    """
    if scale is None:
        return q, float(q.shape[-1] ** -0.5)
    if isinstance(scale, int | float):
        return q, float(scale)
    return (q * scale).astype(q.dtype), 1.0


def tpu_interpret_mode(enabled: bool) -> contextlib.AbstractContextManager[None]:
    """Pallas's TPU interpret mode while tracing, when ``enabled``; otherwise nothing.

    The mode is a JAX config value that is part of the ``jit`` cache key, so a
    kernel traced inside it is cached apart from the compiled TPU kernel.
    """
    if not enabled:
        return contextlib.nullcontext()
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.force_tpu_interpret_mode()
