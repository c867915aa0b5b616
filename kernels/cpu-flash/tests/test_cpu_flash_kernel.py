"""What the conformance suite does not reach: the kernel's own shortcuts and limits.

The kernel visits only the keys inside each query's segment range, keeps per-thread
scratch, pads head dimensions to whole vectors and splits work across threads;
each of those is a place where it could differ from the contract. Every check here
compares with the suite's float64 yardstick (``exact_attention``), never with the
kernel itself.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import seamline_cpu_flash._library as library
from seamline_cpu_flash import CpuFlashAttention

from seamline.contracts import SegmentIds
from seamline.contracts.testing import AttentionCase, attention_inputs, exact_attention

KERNEL = CpuFlashAttention(CpuFlashAttention.Config())
ONE_THREAD = CpuFlashAttention(CpuFlashAttention.Config(threads=1))
FLOAT32_BOUND = 2e-5


def _error(out: jax.Array, expected: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(out, np.float64) - expected)))


def _random(shape: tuple[int, ...], seed: int) -> jax.Array:
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_segments_that_come_back_later_in_the_row() -> None:
    """A segment in two runs ([1,1,2,2,1,1]): the key range spans both, masks in between."""
    length = 48
    pattern = np.array(([1] * 8 + [2] * 8) * 3, np.int32)
    segments = jnp.asarray(np.stack([pattern, pattern[::-1]]))
    q, k, v = (_random((2, length, 4, 32), seed) for seed in (1, 2, 3))
    ids = SegmentIds(segments, segments)
    out = jax.jit(lambda q, k, v: KERNEL(q, k, v, segment_ids=ids))(q, k, v)
    assert _error(out, exact_attention(q, k, v, segment_ids=ids)) < FLOAT32_BOUND


def test_packed_rows_match_documents_attended_alone() -> None:
    """Three documents packed in one row give what each gives in a row of its own."""
    lengths = (5, 17, 42)
    docs = [(_random((1, n, 2, 32), 10 + n), _random((1, n, 2, 32), 20 + n)) for n in lengths]
    packed_q = jnp.concatenate([q for q, _ in docs], axis=1)
    packed_kv = jnp.concatenate([kv for _, kv in docs], axis=1)
    segments = jnp.asarray(np.concatenate([np.full(n, i, np.int32) for i, n in enumerate(lengths)]))
    ids = SegmentIds(segments[None], segments[None])
    packed = np.asarray(KERNEL(packed_q, packed_kv, packed_kv, segment_ids=ids))
    start = 0
    for (q, kv), n in zip(docs, lengths, strict=True):
        alone = np.asarray(KERNEL(q, kv, kv))
        np.testing.assert_allclose(packed[:, start : start + n], alone, atol=1e-6)
        start += n


def test_long_keys_beyond_the_kept_scratch() -> None:
    """20k keys: scratch past 4 MiB is given back after the call, and the answer holds."""
    q = _random((1, 8, 2, 64), 4)
    k, v = _random((1, 20_000, 2, 64), 5), _random((1, 20_000, 2, 64), 6)
    for _ in range(2):  # the second call runs on scratch that the first gave back
        out = KERNEL(q, k, v, causal=True)
        assert _error(out, exact_attention(q, k, v, causal=True)) < FLOAT32_BOUND


@pytest.mark.parametrize("head_dim", [20, 520])
def test_head_dims_that_are_not_whole_vectors_or_are_very_wide(head_dim: int) -> None:
    """20 pads to 24 lanes; 520 is past the kernel's stack buffer of 512 and uses the heap."""
    case = AttentionCase(batch=2, q_len=19, kv_len=19, heads=2, kv_heads=1, head_dim=head_dim,
                         segmented=True)  # fmt: skip
    q, k, v, ids = attention_inputs(case)
    out = KERNEL(q, k, v, segment_ids=ids)
    assert _error(out, exact_attention(q, k, v, segment_ids=ids)) < FLOAT32_BOUND


def test_a_visible_nan_shows_and_a_hidden_one_does_not() -> None:
    """NaN in a key that segment 1 sees makes segment 1's rows NaN, and no other row."""
    segments = jnp.asarray(np.array([[1] * 10 + [2] * 10], np.int32))
    q, k, v = (_random((1, 20, 2, 32), seed) for seed in (7, 8, 9))
    v = v.at[0, 3, 0, 5].set(jnp.nan)
    ids = SegmentIds(segments, segments)
    out = np.asarray(KERNEL(q, k, v, segment_ids=ids))
    assert np.isnan(out[0, :10, 0]).all()
    assert np.isfinite(out[0, 10:]).all()
    assert np.isfinite(out[0, :, 1]).all()


def test_the_thread_split_does_not_change_a_bit() -> None:
    case = AttentionCase(batch=3, q_len=100, kv_len=100, heads=6, kv_heads=3, segmented=True)
    q, k, v, ids = attention_inputs(case)
    assert np.array_equal(
        np.asarray(KERNEL(q, k, v, segment_ids=ids)),
        np.asarray(ONE_THREAD(q, k, v, segment_ids=ids)),
    )


def test_vmap_runs_once_per_element() -> None:
    q, k, v = (_random((3, 2, 16, 2, 32), seed) for seed in (11, 12, 13))
    out = jax.vmap(lambda q, k, v: KERNEL(q, k, v, causal=True))(q, k, v)
    for i in range(3):
        expected = exact_attention(q[i], k[i], v[i], causal=True)
        assert _error(out[i], expected) < FLOAT32_BOUND


def test_refuses_other_platforms_with_the_reason() -> None:
    spec = AttentionCase().spec("gpu", "NVIDIA H100")
    support = KERNEL.supports(spec)
    assert not support
    assert any("CPU kernel" in reason for reason in support.reasons)


def test_a_missing_library_is_a_refusal_not_an_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    library.ensure_registered.cache_clear()
    library._load.cache_clear()
    monkeypatch.setattr(library, "_MODULE", "seamline_cpu_flash._not_built")
    try:
        support = KERNEL.supports(AttentionCase().spec())
        assert not support
        assert any("reinstall seamline-cpu-flash" in reason for reason in support.reasons)
    finally:
        library.ensure_registered.cache_clear()
        library._load.cache_clear()


@pytest.mark.parametrize("old", ["0.4.36", "0.5.0", "0.9.0"])
def test_a_jaxlib_older_than_the_ffi_needs_is_a_refusal_naming_the_version(
    monkeypatch: pytest.MonkeyPatch, old: str
) -> None:
    """At jaxlib 0.5 to 0.9.0 the first call failed ("API version (0.3) is incompatible")
    while the listing said ok and attention: auto fell back without a word; before 0.5 there
    is no jax.ffi. Both the listing and supports() say which jaxlib is needed."""
    real_version = library.importlib.metadata.version
    monkeypatch.setattr(
        library.importlib.metadata,
        "version",
        lambda name: old if name == "jaxlib" else real_version(name),
    )
    library.ensure_registered.cache_clear()
    library._load.cache_clear()
    try:
        assert f"jaxlib {old} is older than 0.9.1" in (CpuFlashAttention.unavailable() or "")
        support = KERNEL.supports(AttentionCase().spec())
        assert not support
        assert any("'jax>=0.9.1'" in reason for reason in support.reasons)
    finally:
        library.ensure_registered.cache_clear()
        library._load.cache_clear()


def test_narrow_dtypes_are_computed_in_float32_and_returned_narrow() -> None:
    case = dataclasses.replace(AttentionCase(batch=2, segmented=True, causal=True), dtype="float16")
    q, k, v, ids = attention_inputs(case)
    out = KERNEL(q, k, v, segment_ids=ids, causal=True)
    assert out.dtype == jnp.float16
    assert _error(out, exact_attention(q, k, v, segment_ids=ids, causal=True)) < 1e-2


def test_a_nan_query_makes_its_own_row_nan() -> None:
    q, k, v = (_random((1, 16, 1, 32), seed) for seed in (14, 15, 16))
    q = q.at[0, 2, 0, 0].set(jnp.nan)
    out = np.asarray(KERNEL(q, k, v))
    assert np.isnan(out[0, 2]).all()
    assert np.isfinite(np.delete(out[0], 2, axis=0)).all()


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    pytest.skip("no /proc/cpuinfo to read the CPU's flags from")


def test_the_library_finds_the_instruction_sets_the_kernel_reports() -> None:
    flags = _cpu_flags()
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16"} <= flags:
        expected = library.ISA_LEVELS["avx512-bf16"]
    elif {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        expected = library.ISA_LEVELS["avx512"]
    elif {"avx2", "fma", "bmi2"} <= flags:
        expected = library.ISA_LEVELS["avx2"]
    else:
        expected = library.ISA_LEVELS["baseline"]
    assert library.best_isa() == expected


def test_pinning_the_baseline_runs_another_copy() -> None:
    # The baseline copy has no FMA: it rounds each product before adding it, so its
    # answer differs from the fused copies' in the last bits. Equal outputs would mean
    # the pin was ignored and the same copy ran twice.
    if library.best_isa() < library.ISA_LEVELS["avx2"]:
        pytest.skip("this CPU runs only the baseline copy")
    baseline = CpuFlashAttention(CpuFlashAttention.Config(isa="baseline"))
    q, k, v, ids = attention_inputs(AttentionCase(batch=2, q_len=64, kv_len=64, segmented=True))
    fused = np.asarray(KERNEL(q, k, v, segment_ids=ids))
    plain = np.asarray(baseline(q, k, v, segment_ids=ids))
    assert not np.array_equal(fused, plain)
    expected = exact_attention(q, k, v, segment_ids=ids)
    assert _error(jnp.asarray(plain), expected) < FLOAT32_BOUND


def test_an_instruction_set_the_cpu_lacks_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(library, "best_isa", lambda: library.ISA_LEVELS["baseline"])
    monkeypatch.setattr("seamline_cpu_flash.attention.best_isa", library.best_isa)
    support = CpuFlashAttention(CpuFlashAttention.Config(isa="avx2")).supports(
        AttentionCase().spec()
    )
    assert not support
    assert any("does not run the avx2 copy" in r and "isa: auto" in r for r in support.reasons)
    assert CpuFlashAttention(CpuFlashAttention.Config(isa="baseline")).supports(
        AttentionCase().spec()
    )
