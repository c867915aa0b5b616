"""``cpu-flash``: exact attention for CPUs as one fused, compiled kernel behind the seam.

XLA's CPU backend runs attention as a chain of whole-tensor operations (two batched
matmuls, a mask, a max, an exponential, a sum), each a pass over the
``[B, N, Tq, Tk]`` score tensor in main memory. This kernel (``cpu_flash.cc``,
called through ``jax.ffi``) keeps the scores of eight query rows in a cache-sized
buffer while they are masked, exponentiated, summed and multiplied by the values, so
its memory is linear in the sequence length. It also reads the segment ids before
computing anything and visits, for each query, only the keys of its own segment: a
row that packs several short documents costs what those documents cost, not the
square of the row.

It adds a relative-position bias (attention contract 1.2) where each score is
computed: the head's column of the bias values is copied once per (batch, head)
item, and each score's bias is a lookup by its clipped distance, so no
``[B, N, Tq, Tk]`` bias is ever built.

Where the CPU has bfloat16 dot products (AVX512_BF16: Zen 4, Sapphire Rapids and later)
bfloat16 inputs go to a bfloat16 kernel that computes both products on them, with
float32 sums and softmax (``cpu_flash_bf16.inc`` says what that changes numerically);
elsewhere, and for float16, inputs are widened to float32 and the result narrowed
back. It runs on XLA's own intra-op threads. It is pure and jittable; it has no
gradient (inference only), and under ``vmap`` it runs once per mapped element.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

import numpy as np
from pydantic import Field

from seamline.contracts import (
    Attention,
    AttentionSpec,
    ComponentConfig,
    RelativeBias,
    SegmentIds,
    Support,
)
from seamline_cpu_flash._library import (
    BF16_TARGET,
    ISA_LEVELS,
    KernelUnavailable,
    best_isa,
    ensure_registered,
    missing,
)

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

FLOAT_DTYPES = ("float32", "bfloat16", "float16")

Isa = Literal["auto", "avx512-bf16", "avx512", "avx2", "baseline"]


class CpuFlashConfig(ComponentConfig):
    """Threads the kernel may use, and which compiled copy of it runs."""

    threads: int = Field(
        0,
        ge=0,
        le=4096,
        description="Threads per call (the calling one included), taken from XLA's intra-op "
        "pool; 0 uses as many as that pool has.",
    )
    isa: Isa = Field(
        "auto",
        description="The instruction set of the copy that runs: the library carries one for "
        "AVX-512 with bfloat16 dot products (avx512-bf16: the only one that computes bfloat16 "
        "inputs without widening them to float32), one for AVX-512 (x86-64-v4), one for AVX2 "
        "with FMA (x86-64-v3) and a baseline one; auto takes the best this CPU runs. Naming "
        "one pins it (to compare them, or to test the copy another machine would run); one "
        "the CPU lacks is refused.",
    )


class CpuFlashAttention(Attention[CpuFlashConfig]):
    """The fused CPU kernel; refuses every other platform."""

    name: ClassVar[str] = "cpu-flash"
    contract_version: ClassVar[str] = "1.2"
    Config = CpuFlashConfig
    auto_priority: ClassVar[int] = 20
    score_biases: ClassVar[tuple[str, ...]] = ("relative",)

    @classmethod
    def unavailable(cls) -> str | None:
        """Without its compiled library (a source tree never built), or with a jaxlib older
        than the one its FFI needs: for the listing."""
        return missing()

    def supports(self, spec: AttentionSpec) -> Support:
        reasons = []
        if spec.platform != "cpu":
            reasons.append(f"it is a CPU kernel and the platform is {spec.platform}")
        if spec.num_kv_heads < 1 or spec.num_heads % spec.num_kv_heads:
            reasons.append(
                f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
            )
        if spec.dtype not in FLOAT_DTYPES:
            reasons.append(f"dtype {spec.dtype} is not one of {', '.join(FLOAT_DTYPES)}")
        if not reasons:
            try:
                ensure_registered()
                if self.config.isa != "auto" and ISA_LEVELS[self.config.isa] > best_isa():
                    reasons.append(
                        f"this CPU does not run the {self.config.isa} copy of the kernel "
                        "(set isa: auto, or a lower one)"
                    )
            except KernelUnavailable as error:
                reasons.append(str(error))
        return Support.no(*reasons) if reasons else Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        """First on CPU at every length; nowhere else (it refuses other platforms).

        Measured by ``seamline bench attention`` and benchmarks/throughput/embed_throughput.py
        (docs/performance.md): faster than ``native`` and ``blockwise`` from the
        model's packed rows of 64-256 tokens to 32k tokens, with linear memory.
        """
        return self.auto_priority if spec.platform == "cpu" else -100

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
        import jax.numpy as jnp

        target = ensure_registered()
        level = best_isa() if self.config.isa == "auto" else ISA_LEVELS[self.config.isa]
        natively = (
            level >= ISA_LEVELS["avx512-bf16"] and q.dtype == k.dtype == v.dtype == jnp.bfloat16
        )
        batch, q_len, _, head_dim = q.shape
        kv_len = k.shape[1]
        if segment_ids is None:
            q_segments = jnp.zeros((batch, q_len), jnp.int32)
            kv_segments = jnp.zeros((batch, kv_len), jnp.int32)
        else:
            q_segments = segment_ids.q.astype(jnp.int32)
            kv_segments = segment_ids.kv.astype(jnp.int32)
        if bias is None:  # placeholders the kernel does not read
            values = jnp.zeros((1, q.shape[2]), jnp.float32)
            q_positions, kv_positions = q_segments, kv_segments
        else:
            values = bias.values.astype(jnp.float32)
            q_positions = bias.q_positions.astype(jnp.int32)
            kv_positions = bias.kv_positions.astype(jnp.int32)
        dtype = jnp.bfloat16 if natively else jnp.float32
        attributes = {
            "scale": np.float32(head_dim**-0.5 if scale is None else scale),
            "causal": bool(causal),
            "segmented": segment_ids is not None,
            "biased": bias is not None,
            "threads": np.int64(self.config.threads),
        }
        if not natively:  # the bfloat16 kernel exists in one copy only
            attributes["isa"] = np.int64(0 if self.config.isa == "auto" else level)
        kernel = jax.ffi.ffi_call(
            BF16_TARGET if natively else target,
            jax.ShapeDtypeStruct(q.shape, dtype),
            vmap_method="sequential",
        )
        with jax.named_scope(self.name):
            out = kernel(
                q.astype(dtype),
                k.astype(dtype),
                v.astype(dtype),
                q_segments,
                kv_segments,
                values,
                q_positions,
                kv_positions,
                **attributes,
            )
        return out.astype(q.dtype)
