"""``tpu-flash`` and ``tpu-splash`` against the reference, through Pallas's TPU interpreter.

Both wrap a Pallas TPU kernel the same way (padding to the 128 block, made-up
segment ids to hide padded keys, end-aligned causal), so they share these tests;
only their cases and priorities differ. The interpreter compiles slowly (seconds
per shape), so each case packs several features at once:

- tpu-flash: a batch, padding to the 128 block (lengths like 100 or 200), grouped
  queries, segments, causal with ``Tq != Tk`` either way (the kernel aligns causal
  to the start, the wrapper to the end), bfloat16, and a head size above 128 that
  is not a multiple of it;
- tpu-splash: a batch (the kernel attends one sequence), padding to the 128 block
  (lengths like 200), grouped queries (native to splash), segments, causal with
  ``Tq != Tk`` (the causal mask's offset), keys padded without causal (hidden by
  made-up segment ids), and bfloat16.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from seamline.components.attention.tpu_flash import TpuFlashAttention, TpuFlashConfig
from seamline.components.attention.tpu_splash import TpuSplashAttention, TpuSplashConfig
from seamline.contracts import AttentionFn, SegmentIds
from seamline.contracts.kernel_kit import reference_attention
from seamline.contracts.testing import AttentionCase
from tests.components.attention_harness import TOLERANCE, max_error

KERNELS: dict[str, tuple[type[Any], type[Any]]] = {
    "tpu-flash": (TpuFlashAttention, TpuFlashConfig),
    "tpu-splash": (TpuSplashAttention, TpuSplashConfig),
}
INTERPRETED = {name: cls(config(interpret=True)) for name, (cls, config) in KERNELS.items()}

BATCH_GQA_SEGMENTS_CAUSAL_OFFSET = AttentionCase(
    batch=2, q_len=136, kv_len=200, heads=2, kv_heads=1, head_dim=32, causal=True, segmented=True
)  # tpu-flash: causal with fewer queries than keys, the wrapper pads 64 queries in front
CASES = [
    ("tpu-flash", "batch-gqa-segments-causal-offset", BATCH_GQA_SEGMENTS_CAUSAL_OFFSET),
    # No caller segments, but 28 padded keys: the wrapper makes ids up to hide them.
    (
        "tpu-flash",
        "bfloat16-padded-keys-wide-heads",
        AttentionCase(q_len=100, kv_len=100, heads=1, kv_heads=1, head_dim=192, dtype="bfloat16"),
    ),
    ("tpu-splash", "batch-gqa-segments-causal-offset", BATCH_GQA_SEGMENTS_CAUSAL_OFFSET),
    (
        "tpu-splash",
        "bfloat16-padded-keys",
        AttentionCase(q_len=72, kv_len=200, heads=2, kv_heads=2, head_dim=64, dtype="bfloat16"),
    ),
]


@pytest.mark.parametrize(
    ("kernel", "case"), [(k, c) for k, _, c in CASES], ids=[f"{k}-{n}" for k, n, _ in CASES]
)
def test_matches_the_reference(kernel: str, case: AttentionCase) -> None:
    interpreted = INTERPRETED[kernel]
    assert interpreted.supports(case.spec())
    error = max_error(interpreted, case)
    print(f"{kernel} {case}: max error {error:.3g}")
    assert error <= TOLERANCE[case.dtype]


@pytest.mark.parametrize("kernel", KERNELS)
def test_rows_without_keys_are_zero_and_masked_garbage_stays_out(kernel: str) -> None:
    """Empty rows come out as zeros; NaN/inf in masked keys reach no row; real ones still show.

    Causal with 200 queries over 136 keys leaves the first 64 queries no key; ids
    only on the query side (9) leave 50 more without. Segment ids are ``jit``
    arguments, so the wrapper's id handling runs on tracers.
    """
    rng = np.random.default_rng(1)
    batch, q_len, kv_len, heads, kv_heads, head_dim = 1, 200, 136, 2, 1, 32
    q = jnp.asarray(rng.normal(size=(batch, q_len, heads, head_dim)), jnp.float32)
    k = rng.normal(size=(batch, kv_len, kv_heads, head_dim)).astype(np.float32)
    v = rng.normal(size=(batch, kv_len, kv_heads, head_dim)).astype(np.float32)
    q_ids = np.ones((batch, q_len), np.int32)
    q_ids[:, 150:] = 9
    kv_ids = np.ones((batch, kv_len), np.int32)
    kv_ids[:, 120:] = 3  # keys nobody attends: garbage there must not leak
    k[:, 125, 0, 3] = np.inf
    v[:, 130, 0, 5] = np.nan
    v[:, 50, 0, 0] = np.nan  # a real NaN that queries 114..149 attend: it must show
    segments = SegmentIds(jnp.asarray(q_ids), jnp.asarray(kv_ids))

    def run(
        attention: AttentionFn, q: jax.Array, k: jax.Array, v: jax.Array, segments: SegmentIds
    ) -> jax.Array:
        return attention(q, k, v, segment_ids=segments, causal=True)

    interpreted = INTERPRETED[kernel]
    out = np.asarray(jax.jit(lambda *a: run(interpreted, *a))(q, k, v, segments))
    ref = np.asarray(jax.jit(lambda *a: run(reference_attention, *a))(q, k, v, segments))
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(ref[0, 114]).all()
    assert not np.isnan(ref[0, 113]).any()
    assert (out[0, :64] == 0).all()
    assert (out[0, 150:] == 0).all()
    both = ~np.isnan(ref)
    error = float(np.max(np.abs(out[both] - ref[both])))
    print(f"{kernel} empty rows case: max error {error:.3g}")
    assert error <= TOLERANCE["float32"]


@pytest.mark.parametrize("kernel", KERNELS)
def test_refuses_off_tpu_unless_interpreted(kernel: str) -> None:
    cls, config = KERNELS[kernel]
    plain = cls(config())
    answer = plain.supports(AttentionCase().spec("cpu", "cpu"))
    assert not answer
    assert answer.reasons == (
        "the Pallas TPU kernel runs only on TPU; set interpret: true to run it (slowly) on cpu",
    )
    assert plain.supports(AttentionCase().spec("tpu", "TPU v5 lite"))
    assert INTERPRETED[kernel].supports(AttentionCase().spec("cpu", "cpu"))


@pytest.mark.parametrize("kernel", KERNELS)
def test_refuses_what_the_kernel_cannot_compute(kernel: str) -> None:
    interpreted = INTERPRETED[kernel]
    refusal = interpreted.supports(AttentionCase(dtype="float16").spec())
    assert not refusal
    assert "float16" in refusal.reasons[0]
    refusal = interpreted.supports(AttentionCase(heads=3, kv_heads=2).spec())
    assert not refusal
    assert "not a multiple" in refusal.reasons[0]


def test_tpu_flash_priority_prefers_tpu_and_steps_back_for_decoding() -> None:
    plain = TpuFlashAttention(TpuFlashConfig())
    assert plain.priority(AttentionCase().spec("tpu", "TPU v4")) == 30
    assert plain.priority(AttentionCase().spec("cpu", "cpu")) == -10
    decode = AttentionCase(q_len=1, kv_len=4096, causal=True).spec("tpu", "TPU v4")
    assert plain.priority(decode) < 0


def test_tpu_splash_priority_prefers_tpu_only() -> None:
    plain = TpuSplashAttention(TpuSplashConfig())
    assert plain.priority(AttentionCase().spec("tpu", "TPU v4")) == 35
    assert (
        plain.priority(AttentionCase(q_len=1, kv_len=4096, causal=True).spec("tpu", "TPU v4")) == 35
    )
    assert plain.priority(AttentionCase().spec("cpu", "cpu")) == -10


@pytest.mark.parametrize("kernel", KERNELS)
def test_config_rejects_blocks_the_kernel_cannot_tile(kernel: str) -> None:
    config = KERNELS[kernel][1]
    with pytest.raises(ValueError, match="multiple of 128"):
        config(block_k=64)
    with pytest.raises(ValueError, match="multiple of 8"):
        config(block_q=12)
