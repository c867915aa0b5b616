"""``tokamax`` against the conformance suite's float64 numpy attention, case by case.

The cases, their inputs and the reference (``exact_attention``, written from the
contract's definition) come from ``seamline.contracts.testing``, which this package
may use as it depends on seamline-contracts alone; none of seamline's own kernels
is involved. Cases run under ``jax.jit``, as the orchestrator runs them; each new
shape compiles once, so every case packs several features.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any, get_args

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seamline_tokamax import Implementation, TokamaxAttention, TokamaxConfig

from seamline.contracts import AttentionSpec, SegmentIds
from seamline.contracts.testing import AttentionCase, attention_inputs, exact_attention

#: Absolute tolerances on outputs of unit scale. float32 runs at full precision here, so
#: only summation order differs; bfloat16 keeps about 3 significant digits and its inputs
#: are rounded before the product, so it gets the contract's own bfloat16 bound.
TOLERANCE = {"float32": 2e-5, "bfloat16": 5e-2, "float16": 1e-2}

#: The implementations that run on a CPU (the others refuse it; see test_supports).
CPU_IMPLEMENTATIONS: tuple[Implementation, ...] = ("xla", "xla_chunked", "auto")


#: The shape most cases here share, small so that each compiles quickly; the cases, their
#: inputs and the float64 reference are the conformance suite's own.
BASE = AttentionCase(batch=2, q_len=24, kv_len=24, heads=4, kv_heads=4, head_dim=32)


def small_case(**changes: Any) -> AttentionCase:
    """``BASE`` with some fields changed."""
    return dataclasses.replace(BASE, **changes)


def run(attention: TokamaxAttention, case: AttentionCase) -> tuple[np.ndarray, np.ndarray]:
    """The attention's output under jit, and the float64 reference's, on the same inputs."""
    q, k, v, segments = attention_inputs(case)
    out = jax.jit(lambda q, k, v: attention(q, k, v, segment_ids=segments, causal=case.causal))(
        q, k, v
    )
    assert out.shape == q.shape
    assert out.dtype == q.dtype
    return np.asarray(out, np.float64), exact_attention(
        q, k, v, segment_ids=segments, causal=case.causal
    )


def tokamax(implementation: Implementation = "xla") -> TokamaxAttention:
    return TokamaxAttention(TokamaxConfig(implementation=implementation))


CASES = {
    "f32-plain": small_case(),
    "f32-segments": small_case(segmented=True),
    "f32-causal": small_case(causal=True),
    "f32-grouped-8-over-2": small_case(heads=8, kv_heads=2),
    "f32-multi-query-causal-segments": small_case(heads=4, kv_heads=1, causal=True, segmented=True),
    # Decoding-like: 5 new queries over 37 keys; tokamax's causal flag is start-aligned.
    "f32-causal-decoding": small_case(q_len=5, kv_len=37, heads=4, kv_heads=2, causal=True),
    "f32-cross-segments": small_case(q_len=16, kv_len=40, segmented=True),
    "bf16-plain": small_case(dtype="bfloat16"),
    "bf16-grouped-causal-segments": small_case(
        heads=8, kv_heads=2, dtype="bfloat16", causal=True, segmented=True
    ),
    # XLA:CPU has no float16 dot with float32 accumulation: the adapter computes in float32.
    "f16-grouped-causal": small_case(heads=4, kv_heads=2, dtype="float16", causal=True),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_xla_matches_the_float64_reference(case: AttentionCase) -> None:
    attention = tokamax("xla")
    assert attention.supports(case.spec("cpu", "cpu"))
    out, expected = run(attention, case)
    assert np.isfinite(out).all()
    assert np.max(np.abs(out - expected)) <= TOLERANCE[case.dtype]


@pytest.mark.parametrize("implementation", ["xla_chunked", "auto"])
@pytest.mark.parametrize(
    "case",
    [CASES["f32-multi-query-causal-segments"], CASES["f32-causal-decoding"], CASES["bf16-plain"]],
    ids=["f32-mqa-causal-segments", "f32-causal-decoding", "bf16-plain"],
)
def test_other_cpu_implementations_match_the_reference(
    implementation: Implementation, case: AttentionCase
) -> None:
    attention = tokamax(implementation)
    assert attention.supports(case.spec("cpu", "cpu"))
    out, expected = run(attention, case)
    assert np.max(np.abs(out - expected)) <= TOLERANCE[case.dtype]


@pytest.mark.parametrize("implementation", CPU_IMPLEMENTATIONS)
def test_rows_without_keys_are_zero_not_the_mean_of_the_values(
    implementation: Implementation,
) -> None:
    """Queries whose segment no key has, and causal queries before the first key, give zeros.

    40 causal queries over 24 keys leave the first 16 without a key; segment 9 (queries
    34..39) appears among no keys.
    """
    case = small_case(batch=1, q_len=40, kv_len=24, heads=4, kv_heads=2, head_dim=16, causal=True)
    q, k, v, _ = attention_inputs(case)
    q_ids = np.ones((1, 40), np.int32)
    q_ids[:, 34:] = 9
    segments = SegmentIds(jnp.asarray(q_ids), jnp.ones((1, 24), jnp.int32))
    attention = tokamax(implementation)
    out = np.asarray(
        jax.jit(lambda q, k, v, s: attention(q, k, v, segment_ids=s, causal=True))(
            q, k, v, segments
        )
    )
    assert np.isfinite(out).all()
    assert (out[0, :16] == 0).all()
    assert (out[0, 34:] == 0).all()
    expected = exact_attention(q, k, v, segment_ids=segments, causal=True)
    assert np.max(np.abs(out - expected)) <= TOLERANCE["float32"]


def test_upstream_gives_rows_without_keys_the_mean_of_the_values() -> None:
    """Why the adapter zeroes rows: tokamax masks with the most negative finite float.

    All of a lonely row's logits are then equal, so the softmax is uniform and the row
    is the mean of the values (per key/value head: query heads 0-1 read head 0). If
    this starts failing, tokamax changed its masking; the adapter's repair stays
    correct either way.
    """
    import tokamax as upstream

    q, k, v, _ = attention_inputs(
        small_case(batch=1, q_len=6, kv_len=5, heads=4, kv_heads=2, head_dim=8)
    )
    q_ids = jnp.asarray([[1, 1, 1, 2, 2, 9]])
    kv_ids = jnp.asarray([[1, 1, 2, 2, 2]])
    mask = q_ids[:, None, :, None] == kv_ids[:, None, None, :]
    out = np.asarray(upstream.dot_product_attention(q, k, v, mask=mask, implementation="xla"))
    mean = np.asarray(v)[0].mean(axis=0)  # [K, H]
    np.testing.assert_allclose(out[0, 5], np.repeat(mean, 2, axis=0), atol=1e-5)
    fixed = np.asarray(tokamax()(q, k, v, segment_ids=SegmentIds(q_ids, kv_ids)))
    assert (fixed[0, 5] == 0).all()


@pytest.mark.parametrize("implementation", CPU_IMPLEMENTATIONS)
def test_garbage_in_masked_keys_and_values_stays_out_and_real_nan_shows(
    implementation: Implementation,
) -> None:
    """NaN/inf in keys and values no query may attend reach no row; a real NaN does.

    Keys 10 and 11 are in segment 3, which no query has: they hold an infinite key and
    NaN values. Value 3 of key/value head 1 is a real NaN: heads 2-3 of the queries
    from 3 on (causal) attend it.
    """
    rng = np.random.default_rng(1)
    q = jnp.asarray(rng.normal(size=(1, 12, 4, 16)), jnp.float32)
    k = rng.normal(size=(1, 12, 2, 16)).astype(np.float32)
    v = rng.normal(size=(1, 12, 2, 16)).astype(np.float32)
    kv_ids = np.ones((1, 12), np.int32)
    kv_ids[:, 10:] = 3
    k[:, 10, 0, 3] = np.inf
    v[:, 11] = np.nan
    v[:, 3, 1, 0] = np.nan
    segments = SegmentIds(jnp.ones((1, 12), jnp.int32), jnp.asarray(kv_ids))
    attention = tokamax(implementation)
    out = np.asarray(
        jax.jit(lambda q, k, v: attention(q, k, v, segment_ids=segments, causal=True))(q, k, v)
    )
    expected = exact_attention(q, k, v, segment_ids=segments, causal=True)
    assert np.isnan(out[0, 3:, 2:]).all()
    assert not np.isnan(out[0, :, :2]).any()
    assert not np.isnan(out[0, :3]).any()
    assert np.array_equal(np.isnan(out), np.isnan(expected))
    real = ~np.isnan(expected)
    assert np.max(np.abs(out[real] - expected[real])) <= TOLERANCE["float32"]


def test_explicit_and_traced_scale() -> None:
    case = small_case(heads=4, kv_heads=2, segmented=True)
    q, k, v, segments = attention_inputs(case)
    attention = tokamax()
    expected = exact_attention(q, k, v, segment_ids=segments, scale=0.3)
    fixed = attention(q, k, v, segment_ids=segments, scale=0.3)
    traced = jax.jit(lambda s: attention(q, k, v, segment_ids=segments, scale=s))(0.3)
    for out in (fixed, traced):
        assert np.max(np.abs(np.asarray(out, np.float64) - expected)) <= TOLERANCE["float32"]


def test_no_keys_at_all_gives_zeros() -> None:
    q = jnp.ones((1, 3, 2, 8), jnp.float32)
    k = v = jnp.ones((1, 0, 1, 8), jnp.float32)
    out = tokamax()(q, k, v)
    assert out.shape == q.shape
    assert (np.asarray(out) == 0).all()


def test_eager_call_takes_numpy_arrays() -> None:
    """tokamax type-checks for jax arrays at run time; the adapter converts eager inputs."""
    case = small_case(batch=1, heads=2, kv_heads=1, segmented=True)
    q, k, v, segments = attention_inputs(case)
    out = tokamax()(np.asarray(q), np.asarray(k), np.asarray(v), segment_ids=segments)
    expected = exact_attention(q, k, v, segment_ids=segments)
    assert np.max(np.abs(np.asarray(out, np.float64) - expected)) <= TOLERANCE["float32"]


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(
    q_ids=st.lists(st.integers(0, 3), min_size=16, max_size=16),
    kv_ids=st.lists(st.integers(0, 3), min_size=16, max_size=16),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_segment_layout_matches_the_reference(
    q_ids: list[int], kv_ids: list[int], causal: bool, seed: int
) -> None:
    """Arbitrary (not only packed) segment ids, with and without causality: one shape, so
    every example reuses the two compilations."""
    case = small_case(batch=1, q_len=16, kv_len=16, heads=4, kv_heads=2, head_dim=16)
    q, k, v, _ = attention_inputs(dataclasses.replace(case, seed=seed))
    segments = SegmentIds(jnp.asarray([q_ids], jnp.int32), jnp.asarray([kv_ids], jnp.int32))
    out = _JITTED[causal](q, k, v, segments)
    expected = exact_attention(q, k, v, segment_ids=segments, causal=causal)
    assert np.max(np.abs(np.asarray(out, np.float64) - expected)) <= TOLERANCE["float32"]


_ATTENTION = tokamax()
_JITTED = {
    causal: jax.jit(
        lambda q, k, v, s, causal=causal: _ATTENTION(q, k, v, segment_ids=s, causal=causal)
    )
    for causal in (False, True)
}


def test_supports_what_runs_here_and_refuses_the_rest_with_reasons() -> None:
    plain = small_case()
    for dtype in ("float32", "bfloat16", "float16"):
        for platform in ("cpu", "gpu", "tpu"):
            for implementation in ("xla", "xla_chunked", "auto"):
                spec = small_case(dtype=dtype).spec(platform, platform)
                assert tokamax(implementation).supports(spec), (implementation, spec)

    def refusal(implementation: Implementation, spec: AttentionSpec) -> str:
        support = tokamax(implementation).supports(spec)
        assert not support
        assert all(reason.strip() for reason in support.reasons)
        return " ".join(support.reasons)

    assert "only on NVIDIA GPUs; this is cpu" in refusal("triton", plain.spec("cpu", "cpu"))
    assert "only on NVIDIA GPUs; this is cpu" in refusal("cudnn", plain.spec("cpu", "cpu"))
    assert "this is cpu" in refusal("mosaic", plain.spec("cpu", "cpu"))
    assert "this is gpu (NVIDIA A100" in refusal("mosaic", plain.spec("gpu", "NVIDIA A100-SXM4"))
    assert "Ampere or newer" in refusal("triton", plain.spec("gpu", "Tesla V100-SXM2-16GB"))
    assert "NVIDIA GPUs; this is AMD" in refusal("triton", plain.spec("gpu", "AMD Instinct MI300X"))
    assert "float16 or bfloat16" not in refusal("cudnn", plain.spec("gpu", "NVIDIA H100"))
    assert "computes in (float16, bfloat16)" in refusal("cudnn", plain.spec("gpu", "NVIDIA H100"))
    assert "head_dim" in refusal(
        "cudnn", small_case(dtype="bfloat16", head_dim=160).spec("gpu", "NVIDIA H100")
    )
    assert "computes in (float16, bfloat16)" in refusal("mosaic", plain.spec("gpu", "NVIDIA H200"))
    assert "TPU v5 or newer" in refusal(
        "mosaic", small_case(q_len=128, kv_len=128).spec("tpu", "TPU v4")
    )
    assert "multiples of 128" in refusal("mosaic", plain.spec("tpu", "TPU v5 lite"))
    batched = small_case(batch=2, q_len=128, kv_len=128, segmented=True).spec("tpu", "TPU v6 lite")
    assert "one boolean mask for the whole batch" in refusal("mosaic", batched)
    assert "not a multiple" in refusal("xla", small_case(heads=3, kv_heads=2).spec("cpu", "cpu"))
    assert "int8" in refusal("xla", small_case(dtype="int8").spec("cpu", "cpu"))

    hopper = small_case(dtype="bfloat16").spec("gpu", "NVIDIA H100 80GB HBM3")
    for implementation in ("triton", "cudnn", "mosaic"):
        assert tokamax(implementation).supports(hopper), implementation
    tpu = small_case(batch=1, q_len=256, kv_len=128, segmented=True).spec("tpu", "TPU v5 lite")
    assert tokamax("mosaic").supports(tpu)


def test_never_ahead_of_first_party_kernels_under_auto() -> None:
    for platform in ("cpu", "gpu", "tpu"):
        assert tokamax().priority(small_case().spec(platform, platform)) < 0


def test_configuration_is_checked() -> None:
    assert set(get_args(Implementation)) == {
        "xla",
        "xla_chunked",
        "cudnn",
        "triton",
        "mosaic",
        "auto",
    }
    assert TokamaxConfig().implementation == "xla"
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        TokamaxConfig(block_q=128)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="implementation"):
        TokamaxConfig(implementation="flash")  # type: ignore[arg-type]


def test_importing_the_package_and_asking_supports_do_not_import_tokamax() -> None:
    """seamline imports every component's module to list components: it must stay fast."""
    code = (
        "import sys, seamline_tokamax as s\n"
        "from seamline.contracts import AttentionSpec\n"
        "spec = AttentionSpec(1, 8, 8, 2, 2, 8, 'float32', False, False, 'cpu', 'cpu')\n"
        "assert s.TokamaxAttention(s.TokamaxConfig()).supports(spec)\n"
        "print('tokamax' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "False"


def test_a_command_line_that_is_not_absl_flags_does_not_break_the_first_call() -> None:
    """tokamax parses sys.argv as absl flags on first use unless told they are parsed."""
    code = (
        "import sys, jax.numpy as jnp, seamline_tokamax as s\n"
        "x = jnp.ones((1, 4, 2, 8), jnp.float32)\n"
        "out = s.TokamaxAttention(s.TokamaxConfig())(x, x, x)\n"
        "print(out.shape, sys.argv[1:])\n"
    )
    argv = ["run", "pipeline.yaml", "--set", "attention.use=tokamax", "-q"]
    result = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"(1, 4, 2, 8) {argv}"
