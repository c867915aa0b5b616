"""``tokamax``: tokamax's ``dot_product_attention``, held to seamline's attention contract.

tokamax (Google's library of Pallas kernels) has one attention API in front of
several implementations: plain XLA, chunked XLA, cuDNN, a Pallas Triton kernel and
Pallas Mosaic kernels for TPU and for Hopper/Blackwell GPUs. Its layout is the
contract's (``q [B, T, N, H]``, ``k, v [B, S, K, H]``) and it accepts grouped
queries directly: ``K < N`` is served by repeating each key/value head ``N // K``
times, so query head ``n`` reads key/value head ``n // (N // K)``, as the contract
says. Where it departs from the contract, this adapter closes the gap:

* **Rows with no key.** tokamax masks with the dtype's most negative finite
  number rather than ``-inf`` (so that a softmax never sees ``-inf - -inf``), so a
  query that may attend to no key gets equal weights on every key: the *mean of
  the values*, not zeros. Such rows are found from the mask and set to zero.
  (One case stays out of reach: a row whose every allowed key scores ``-inf``,
  which takes an infinite key; telling it apart would need tokamax's scores.)
* **Causal alignment.** tokamax's ``is_causal`` is aligned to the *start* of the
  keys (query ``i`` sees keys ``0..i``); the contract aligns the last query with the
  last key. When ``Tq == Tk`` the two agree and ``is_causal`` is passed through
  (kernels use it to skip masked blocks); otherwise the end-aligned causal mask is
  folded into the boolean mask.
* **Garbage in masked values.** A masked key's weight is exactly zero, but
  ``0 * NaN`` is NaN, so NaN-filled padding in ``v`` would reach every row. Only
  when some value is not finite, values are cleaned before the call and the rows
  allowed to see a non-finite value are set to NaN after it, so a real NaN shows.
* **float32 precision.** tokamax's default dot precision for float32 is TF32 on
  GPUs and one bfloat16 pass on TPUs; the contract's tolerance assumes float32
  arithmetic, so float32 calls ask for ``highest`` unless the configuration says
  otherwise.
* **float16 on CPU and TPU.** XLA there has no float16 dot with float32
  accumulation, which tokamax asks for; those platforms compute in float32.
* **The command line.** tokamax reads its options from absl flags and parses
  ``sys.argv`` for them on first use, which fails in any program that is not an
  absl application (``seamline run p.yaml --set ...``); see :func:`import_tokamax`.

tokamax takes seconds to import (it pulls in flax, optax and orbax), and seamline
imports every registered component's module to list components, so tokamax is
imported only when an attention call is traced, never at module import or in
``supports()``.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from seamline.contracts import Attention, AttentionSpec, ComponentConfig, SegmentIds, Support

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

__all__ = ["Implementation", "TokamaxAttention", "TokamaxConfig"]

#: The values of ``implementation``: tokamax's own names, and ``auto`` for tokamax's choice.
Implementation = Literal["xla", "xla_chunked", "cudnn", "triton", "mosaic", "auto"]

#: Every dtype the contract's callers use; each implementation narrows it below.
FLOAT_DTYPES = ("float32", "bfloat16", "float16")

#: What each implementation computes in (from tokamax's source: mosaic's TPU kernel
#: takes bfloat16 and float32, its GPU kernel and cuDNN only 16-bit floats).
DTYPES: dict[str, tuple[str, ...]] = {
    "xla": FLOAT_DTYPES,
    "xla_chunked": FLOAT_DTYPES,
    "auto": FLOAT_DTYPES,
    "triton": FLOAT_DTYPES,
    "cudnn": ("float16", "bfloat16"),
    "mosaic-tpu": ("float32", "bfloat16"),
    "mosaic-gpu": ("float16", "bfloat16"),
}

#: cuDNN's fused attention (through ``jax.nn``) takes head dimensions up to this, in 8s.
CUDNN_MAX_HEAD_DIM = 128

#: tokamax's TPU kernel (splash attention) runs in blocks of this many queries and keys.
TPU_BLOCK = 128

#: Device kinds that name no NVIDIA GPU (ROCm devices report these).
NON_NVIDIA = ("amd", "instinct", "radeon")

#: NVIDIA GPUs older than Ampere (compute capability below 8.0), where tokamax's
#: Triton kernel declares itself unsupported: Volta, Turing, Pascal, Maxwell, Kepler.
PRE_AMPERE = re.compile(r"\b(v100|t4|p100|p40|p4|k80|m60|gtx|titan|quadro)\b|\brtx 20\d\d\b")

#: Hopper and Blackwell data-centre GPUs (sm90, sm100): the only ones tokamax's Mosaic
#: GPU kernel runs on (H100, H200, H800, H20, GH200, B100, B200, GB200, ...).
MOSAIC_GPU = re.compile(r"\b(g?h\d{2,3}|g?b\d{3})\b")


class TokamaxConfig(ComponentConfig):
    """The ``with:`` block of ``tokamax``."""

    implementation: Implementation = Field(
        default="xla",
        description=(
            "Which tokamax implementation to run: 'xla' (any platform; memory grows with "
            "Tq*Tk), 'xla_chunked' (any platform; chunked, less memory, slower), 'cudnn' "
            "(NVIDIA GPUs, 16-bit floats), 'triton' (NVIDIA GPUs from Ampere on), 'mosaic' "
            "(TPU v5 and newer; Hopper/Blackwell GPUs) or 'auto' (tokamax tries its kernels "
            "and falls back to 'xla')."
        ),
    )
    precision: Literal["default", "high", "highest"] | None = Field(
        default=None,
        description=(
            "Precision of both dot products. Unset: 'highest' for float32 inputs (the "
            "contract's float32 tolerance assumes float32 arithmetic, not TF32 or one "
            "bfloat16 pass) and tokamax's default for 16-bit inputs."
        ),
    )


class TokamaxAttention(Attention[TokamaxConfig]):
    """``tokamax.dot_product_attention`` with the contract's masking, alignment and zero rows."""

    name: ClassVar[str] = "tokamax"
    contract_version: ClassVar[str] = "1.1"
    Config: ClassVar[type[ComponentConfig]] = TokamaxConfig
    #: Below every first-party kernel (``native`` is 0): installing this package never
    #: changes what ``use: auto`` picks. Name it explicitly to use it.
    auto_priority: ClassVar[int] = -10

    def supports(self, spec: AttentionSpec) -> Support:
        """Every reason the configured implementation cannot serve ``spec``, all at once.

        Decided from the spec alone (tokamax is not imported here): the planner asks
        every candidate, and importing tokamax takes seconds.
        """
        reasons = refusals(spec, self.config.implementation)
        return Support.no(*reasons) if reasons else Support.yes()

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        import jax

        with jax.named_scope("tokamax"):
            return self._attend(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)

    def _attend(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None,
        causal: bool,
        scale: float | None,
    ) -> jax.Array:
        """The contract's attention by way of tokamax (the module docstring says why each step)."""
        import jax
        import jax.numpy as jnp

        # tokamax type-checks its arguments at run time and takes jax arrays only; an eager
        # caller may hand over numpy arrays (a no-op for jax arrays and under jit).
        q, k, v = jnp.asarray(q), jnp.asarray(k), jnp.asarray(v)
        q_len, kv_len = q.shape[1], k.shape[1]
        if q_len == 0 or kv_len == 0:
            # No query, or no key for any query: the contract's answer is known statically.
            return jnp.zeros(q.shape, q.dtype)
        if isinstance(scale, jax.Array):
            # A traced scale cannot be a static kernel parameter; fold it into q instead.
            q = (q * scale).astype(q.dtype)
            scale = 1.0
        native_causal = causal and q_len == kv_len
        mask = allowed_mask(q_len, kv_len, segment_ids, causal and not native_causal)
        # Every allowed pair, native causality included: for the empty rows and the NaN repair.
        allowed = _and(mask, allowed_mask(q_len, kv_len, None, True)) if native_causal else mask
        configured = self.config.implementation
        implementation = None if configured == "auto" else configured
        precision = self.config.precision

        def call(q: jax.Array, k: jax.Array, values: jax.Array) -> jax.Array:
            tokamax = import_tokamax()
            wanted = precision or ("highest" if q.dtype == jnp.float32 else None)
            out: jax.Array = tokamax.dot_product_attention(
                q,
                k,
                values,
                mask=mask,
                scale=None if scale is None else float(scale),
                is_causal=native_causal,
                precision=wanted,
                implementation=implementation,
            )
            return out

        def in_float32(q: jax.Array, k: jax.Array, values: jax.Array) -> jax.Array:
            f32 = jnp.float32
            return call(q.astype(f32), k.astype(f32), values.astype(f32)).astype(q.dtype)

        def attend(values: jax.Array) -> jax.Array:
            if q.dtype != jnp.float16 or configured not in XLA_BASED:
                return call(q, k, values)
            # XLA:CPU and TPU have no F16_F16_F32 dot (the failure comes at compile time),
            # so those platforms compute in float32; GPUs keep float16.
            out: jax.Array = jax.lax.platform_dependent(
                q, k, values, cpu=in_float32, tpu=in_float32, default=call
            )
            return out

        # Both repairs for non-finite values are O(T) no-ops in the common case; keeping
        # them out of the attention call compiles the attention once, not once per branch.
        finite = jnp.isfinite(v).all()
        out = attend(jax.lax.cond(finite, lambda values: values, _clean, v))
        out = jax.lax.cond(finite, lambda out: out, lambda out: _poison(out, v, allowed), out)
        # Only segments, or more queries than keys under causality, can leave a query keyless.
        if allowed is not None and (segment_ids is not None or q_len > kv_len):
            empty = ~allowed.any(axis=-1)  # [B or 1, 1, Tq]: queries with no key at all
            out = jnp.where(empty.transpose(0, 2, 1)[..., None], jnp.zeros((), out.dtype), out)
        return out.astype(q.dtype)


def import_tokamax() -> ModuleType:
    """Import tokamax (deferred: it takes seconds, and listing components must stay fast).

    tokamax keeps its options in absl flags and, the first time it reads one, parses
    ``sys.argv`` as absl flags unless some absl application already did. In any other
    program (``seamline run pipeline.yaml --set ...``, ``pytest -q``) that raises
    ``UnrecognizedFlagError`` at the first attention call. Marking the flags parsed
    keeps every tokamax option at its default (they can still be set with tokamax's
    ``tokamax.config`` context managers) and leaves the command line to its owner;
    an absl application that parses its flags later still does so as usual.
    """
    import tokamax
    from absl import flags  # a dependency of tokamax's

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    return tokamax


#: Implementations that end in XLA's own dot (and so share its float16 gap on CPU/TPU).
XLA_BASED = ("xla", "xla_chunked", "auto")


def refusals(spec: AttentionSpec, implementation: str) -> list[str]:
    """Why ``implementation`` cannot serve ``spec`` (empty when it can)."""
    reasons = []
    if importlib.util.find_spec("tokamax") is None:
        reasons.append("tokamax is not installed (pip install tokamax)")
    if spec.num_kv_heads < 1 or spec.num_heads % spec.num_kv_heads:
        reasons.append(
            f"{spec.num_heads} query heads are not a multiple of {spec.num_kv_heads} key heads"
        )
    kind = spec.device_kind.lower()
    dtypes = DTYPES.get(implementation, FLOAT_DTYPES)
    if implementation == "cudnn":
        reasons.extend(_nvidia_gpu(spec, "cuDNN attention"))
        if spec.head_dim > CUDNN_MAX_HEAD_DIM or spec.head_dim % 8:
            reasons.append(
                f"cuDNN needs head_dim a multiple of 8 and at most {CUDNN_MAX_HEAD_DIM}, "
                f"not {spec.head_dim}"
            )
    elif implementation == "triton":
        reasons.extend(_nvidia_gpu(spec, "tokamax's Triton kernel"))
        if spec.platform == "gpu" and PRE_AMPERE.search(kind):
            reasons.append(f"tokamax's Triton kernel needs an Ampere or newer GPU, not {kind}")
    elif implementation == "mosaic":
        if spec.platform == "tpu":
            dtypes = DTYPES["mosaic-tpu"]
            reasons.extend(_mosaic_tpu(spec))
        elif spec.platform == "gpu" and MOSAIC_GPU.search(kind):
            dtypes = DTYPES["mosaic-gpu"]
        else:
            reasons.append(
                "tokamax's Mosaic kernels run on TPU v5 or newer and on NVIDIA Hopper or "
                f"Blackwell GPUs; this is {spec.platform} ({spec.device_kind})"
            )
    if spec.dtype not in dtypes:
        reasons.append(
            f"dtype {spec.dtype} is not one tokamax's {implementation} implementation "
            f"computes in ({', '.join(dtypes)})"
        )
    return reasons


def _nvidia_gpu(spec: AttentionSpec, what: str) -> list[str]:
    """The refusal of a GPU-only implementation off an NVIDIA GPU (empty on one)."""
    if spec.platform != "gpu":
        return [f"{what} runs only on NVIDIA GPUs; this is {spec.platform}"]
    if any(fragment in spec.device_kind.lower() for fragment in NON_NVIDIA):
        return [f"{what} runs only on NVIDIA GPUs; this is {spec.device_kind}"]
    return []


def _mosaic_tpu(spec: AttentionSpec) -> list[str]:
    """What tokamax's TPU kernel (splash attention in 128-blocks) cannot express."""
    reasons = []
    found = re.search(r"tpu\s*v?(\d+)", spec.device_kind.lower())
    if found is None or int(found.group(1)) < 5:
        reasons.append(f"tokamax's Mosaic TPU kernel needs TPU v5 or newer, not {spec.device_kind}")
    if spec.q_len % TPU_BLOCK or spec.kv_len % TPU_BLOCK or not (spec.q_len and spec.kv_len):
        reasons.append(
            f"tokamax's Mosaic TPU kernel needs q_len and kv_len multiples of {TPU_BLOCK}, "
            f"not {spec.q_len} and {spec.kv_len}"
        )
    if spec.segmented and spec.batch > 1:
        reasons.append(
            "tokamax's Mosaic TPU kernel takes one boolean mask for the whole batch; "
            f"segment ids differ per row (batch {spec.batch})"
        )
    return reasons


def allowed_mask(
    q_len: int, kv_len: int, segment_ids: SegmentIds | None, causal: bool
) -> jax.Array | None:
    """Boolean ``[B or 1, 1, Tq, Tk]`` of the (query, key) pairs the contract allows; None: all.

    The head axis is 1: tokamax broadcasts a mask over ``[*B, N, T, S]``.
    """
    import jax.numpy as jnp

    mask: jax.Array | None = None
    if segment_ids is not None:
        mask = segment_ids.q[:, None, :, None] == segment_ids.kv[:, None, None, :]
    if causal:
        # The last query is aligned with the last key, so decoding over a cache works.
        rows = jnp.arange(q_len)[:, None] + (kv_len - q_len)
        mask = _and(mask, (jnp.arange(kv_len)[None, :] <= rows)[None, None])
    return mask


def _and(a: jax.Array | None, b: jax.Array | None) -> jax.Array | None:
    """``a & b``, where None stands for "everything allowed"."""
    if a is None:
        return b
    return a if b is None else a & b


def _clean(values: jax.Array) -> jax.Array:
    """Values with every non-finite entry replaced by zero."""
    import jax.numpy as jnp

    return jnp.where(jnp.isfinite(values), values, jnp.zeros((), values.dtype))


def _poison(out: jax.Array, values: jax.Array, allowed: jax.Array | None) -> jax.Array:
    """NaN in the rows of ``out`` ``[B, Tq, N, H]`` that may attend to a non-finite value.

    The rare path, taken only when some value is not finite: whether a row "sees" a
    key is read from the mask, since tokamax does not return its weights.
    """
    import jax.numpy as jnp

    batch, q_len, heads, _ = out.shape
    kv_len, kv_heads = values.shape[1], values.shape[2]
    sees = (
        jnp.ones((batch, q_len, kv_len), jnp.float32)
        if allowed is None
        else jnp.broadcast_to(allowed[:, 0], (batch, q_len, kv_len)).astype(jnp.float32)
    )
    broken = (~jnp.isfinite(values)).any(axis=-1).astype(jnp.float32)  # [B, Tk, K]
    seen = jnp.einsum("bqs,bsk->bqk", sees, broken) > 0  # [B, Tq, K]
    seen = jnp.repeat(seen, heads // kv_heads, axis=2)  # query head n reads n // G
    return jnp.where(seen[..., None], jnp.asarray(jnp.nan, out.dtype), out)
