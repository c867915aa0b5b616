"""``gpu-flash`` against the reference, run through Pallas's interpreter on the CPU.

Each case packs several features, since every shape costs a compilation: padding
to power-of-two tiles (lengths like 200), grouped queries, segments, causal with
``Tq != Tk`` (the kernel aligns causal to the start, the wrapper to the end),
head sizes below Triton's 16, bfloat16, and the one-segment-array rule.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from seamline.components.attention.gpu_flash import GpuFlashAttention, GpuFlashConfig
from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.contracts import AttentionFn, SegmentIds
from seamline.contracts.kernel_kit import reference_attention
from seamline.contracts.testing import AttentionCase
from tests.components.attention_harness import TOLERANCE, max_error

INTERPRETED = GpuFlashAttention(GpuFlashConfig(interpret=True))

CASES = {
    # One id array for both sides, as self-attention over packed documents gives.
    "padded-gqa-segments-causal": AttentionCase(
        batch=2, q_len=200, kv_len=200, heads=2, kv_heads=1, head_dim=32, causal=True,
        segmented=True,
    ),
    # The first 136 queries have no key: zeros. Head size 8 is padded to 16. Keys
    # are padded in front (causal alignment) and behind, hidden by made-up ids.
    "bfloat16-causal-more-queries-narrow-heads": AttentionCase(
        q_len=200, kv_len=64, heads=2, kv_heads=1, head_dim=8, dtype="bfloat16", causal=True
    ),
    # Keys a whole tile: queries and keys keep their own lengths, no ids at all.
    "more-queries-whole-tiles": AttentionCase(
        q_len=200, kv_len=64, heads=1, kv_heads=1, head_dim=32
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_matches_the_reference(case: AttentionCase) -> None:
    assert INTERPRETED.supports(case.spec())
    error = max_error(INTERPRETED, case)
    print(f"gpu-flash {case}: max error {error:.3g}")
    assert error <= TOLERANCE[case.dtype]


def _segment_case() -> tuple[jax.Array, jax.Array, jax.Array, np.ndarray]:
    """Two sequences of 128 tokens in segments 1, 2 and padding 0; a NaN in one key of segment 2."""
    rng = np.random.default_rng(2)
    shape = (2, 128, 2, 32)
    q, k = (jnp.asarray(rng.normal(size=shape), jnp.float32) for _ in range(2))
    v = rng.normal(size=shape).astype(np.float32)
    v[0, 70, 1, 4] = np.nan
    ids = np.zeros((2, 128), np.int32)
    ids[:, :60], ids[:, 60:100] = 1, 2
    return q, k, jnp.asarray(v), ids


def _run(
    attention: AttentionFn, q: jax.Array, k: jax.Array, v: jax.Array, segments: SegmentIds
) -> jax.Array:
    return attention(q, k, v, segment_ids=segments, causal=False)


def test_traced_segment_ids_and_a_nan_that_stays_in_its_segment() -> None:
    """Ids as ``jit`` arguments arrive as two tracers: equal ones use the kernel, differing
    rows the reference math.

    The NaN value in segment 2 poisons segment 2's rows (as in the reference) and
    no others, although they share a tile with it; and only the head that reads it.
    """
    q, k, v, ids = _segment_case()
    run = jax.jit(lambda *a: _run(INTERPRETED, *a))
    segments = SegmentIds(jnp.asarray(ids), jnp.asarray(ids.copy()))
    out = np.asarray(run(q, k, v, segments))
    ref = np.asarray(jax.jit(lambda *a: _run(reference_attention, *a))(q, k, v, segments))
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out[0, 60:100, 1]).all()  # segment 2, the head that reads the NaN
    assert not np.isnan(out[0, 60:100, 0]).any()
    assert not np.isnan(out[0, :60]).any()
    assert not np.isnan(out[1]).any()
    both = ~np.isnan(ref)
    error = float(np.max(np.abs(out[both] - ref[both])))
    print(f"gpu-flash traced segments case: max error {error:.3g}")
    assert error <= TOLERANCE["float32"]

    different = ids.copy()
    different[1, 5] = 2  # the kernel cannot express this row: the reference computes it
    segments = SegmentIds(jnp.asarray(ids), jnp.asarray(different))
    out = np.asarray(run(q, k, v, segments))
    ref = np.asarray(jax.jit(lambda *a: _run(reference_attention, *a))(q, k, v, segments))
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    both = ~np.isnan(ref)
    assert float(np.max(np.abs(out[both] - ref[both]))) <= TOLERANCE["float32"]


def test_differing_known_segment_ids_take_the_reference() -> None:
    q, k, v, ids = _segment_case()
    different = ids.copy()
    different[0, 0] = 2
    segments = SegmentIds(jnp.asarray(ids), jnp.asarray(different))
    out = np.asarray(INTERPRETED(q, k, v, segment_ids=segments))
    ref = np.asarray(reference_attention(q, k, v, segment_ids=segments))
    both = ~np.isnan(ref)
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert float(np.max(np.abs(out[both] - ref[both]))) <= TOLERANCE["float32"]


def test_refuses_off_gpu_unless_interpreted() -> None:
    plain = GpuFlashAttention(GpuFlashConfig())
    answer = plain.supports(AttentionCase().spec("cpu", "cpu"))
    assert not answer
    assert answer.reasons == (
        "the Pallas GPU (Triton) kernel runs only on GPU; set interpret: true to run it "
        "(slowly) on cpu",
    )
    assert plain.supports(AttentionCase().spec("gpu", "NVIDIA H100 80GB HBM3"))


def test_refuses_what_one_segment_array_cannot_express() -> None:
    segmented_cross = INTERPRETED.supports(
        AttentionCase(q_len=64, kv_len=128, segmented=True).spec()
    )
    assert not segmented_cross
    assert "one segment-id array" in segmented_cross.reasons[0]
    ragged_keys = INTERPRETED.supports(AttentionCase(q_len=200, kv_len=100).spec())
    assert not ragged_keys
    assert "multiple of the key tile" in ragged_keys.reasons[0]
    # The same lengths are fine with causal (front padding) or keys in whole tiles.
    assert INTERPRETED.supports(AttentionCase(q_len=200, kv_len=100, causal=True).spec())
    assert INTERPRETED.supports(AttentionCase(q_len=200, kv_len=128).spec())
    assert not INTERPRETED.supports(AttentionCase(heads=3, kv_heads=2).spec())


def test_priority_prefers_gpu_and_steps_back_for_decoding() -> None:
    plain = GpuFlashAttention(GpuFlashConfig())
    gpu = ("gpu", "NVIDIA H100 80GB HBM3")
    assert plain.priority(AttentionCase(q_len=2048, kv_len=2048).spec(*gpu)) == 15
    assert plain.priority(AttentionCase(q_len=2048, kv_len=2048).spec("cpu", "cpu")) == -10
    # Causal decoding pads the one query to the keys' length in front.
    assert plain.priority(AttentionCase(q_len=1, kv_len=4096, causal=True).spec(*gpu)) < 0
    # Without causal, keys in whole tiles leave the query its own short length.
    assert plain.priority(AttentionCase(q_len=1, kv_len=4096).spec(*gpu)) == 15


def test_config_wants_power_of_two_tiles() -> None:
    with pytest.raises(ValueError, match="power of two"):
        GpuFlashConfig(block_q=48)
    with pytest.raises(ValueError, match="power of two"):
        GpuFlashConfig(block_k=8)
    assert GpuFlashConfig(block_q=64, block_k=32).block_k == 32


def test_priority_steps_back_below_the_xla_attentions_for_short_sequences() -> None:
    """Measured on an H200: at 512 tokens the kernel took 3.1 ms against native's 0.2."""
    plain = GpuFlashAttention(GpuFlashConfig())
    gpu = ("gpu", "NVIDIA H200")
    native = NativeAttention(NativeConfig())
    for length in (64, 256, 512):
        spec = AttentionCase(q_len=length, kv_len=length).spec(*gpu)
        assert plain.priority(spec) < native.priority(spec)
    assert plain.priority(AttentionCase(q_len=1024, kv_len=1024).spec(*gpu)) == 15
