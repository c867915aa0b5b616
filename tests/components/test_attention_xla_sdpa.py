"""``xla-sdpa`` (``jax.nn.dot_product_attention``, XLA path) against the reference.

Each case packs several features, because every new shape compiles twice (the
candidate and ``native``): grouped queries, segments, causal with ``Tq != Tk`` (the
upstream causal flag is start-aligned; the wrapper must align to the end), cross
attention without any mask, bfloat16, and float16 (which XLA:CPU can only run by
way of float32).
"""

from __future__ import annotations

from importlib.metadata import entry_points

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pydantic import ValidationError

from seamline.components.attention.xla_sdpa import XlaSdpaAttention, XlaSdpaConfig
from seamline.contracts import TOLERANCES, AttentionFn, SegmentIds
from seamline.contracts.kernel_kit import reference_attention
from seamline.contracts.testing import AttentionCase
from seamline.contracts.versions import compatibility_problem
from tests.components.attention_harness import TOLERANCE, max_error

ATTENTION = XlaSdpaAttention(XlaSdpaConfig())

#: The harness has no float16 entry; the contract's own tolerance serves.
TOLERANCE_BY_DTYPE = {**TOLERANCES, **TOLERANCE}

CASES = {
    "float32-gqa-segments": AttentionCase(
        batch=2, q_len=40, kv_len=40, heads=8, kv_heads=2, head_dim=32, segmented=True
    ),
    # Decoding-like: 5 new queries over 37 keys, end-aligned causal, one key head.
    "float32-causal-decoding-segments": AttentionCase(
        batch=2, q_len=5, kv_len=37, heads=4, kv_heads=1, head_dim=32, causal=True,
        segmented=True,
    ),
    # No mask at all: the upstream call gets mask=None.
    "float32-cross-unmasked": AttentionCase(q_len=24, kv_len=40, heads=2, kv_heads=2, head_dim=16),
    "bfloat16-gqa-causal-segments": AttentionCase(
        q_len=48, kv_len=48, heads=8, kv_heads=2, head_dim=32, dtype="bfloat16", causal=True,
        segmented=True,
    ),
    "float16-causal-cross": AttentionCase(
        q_len=16, kv_len=24, heads=2, kv_heads=1, head_dim=32, dtype="float16", causal=True
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_matches_the_reference(case: AttentionCase) -> None:
    assert ATTENTION.supports(case.spec())
    error = max_error(ATTENTION, case)
    print(f"xla-sdpa {case}: max error {error:.3g}")
    assert error <= TOLERANCE_BY_DTYPE[case.dtype]


def run(
    attention: AttentionFn, q: jax.Array, k: jax.Array, v: jax.Array, segments: SegmentIds
) -> jax.Array:
    return attention(q, k, v, segment_ids=segments, causal=True)


def test_rows_without_keys_are_zero_and_masked_garbage_stays_out() -> None:
    """Empty rows are zeros; NaN/inf in masked keys and values reach no row; real ones show.

    Causal with 40 queries over 24 keys leaves the first 16 queries no key; query
    id 9 leaves 6 more without. Segment ids are ``jit`` arguments (tracers).
    """
    rng = np.random.default_rng(1)
    batch, q_len, kv_len, heads, kv_heads, head_dim = 1, 40, 24, 4, 2, 16
    q = jnp.asarray(rng.normal(size=(batch, q_len, heads, head_dim)), jnp.float32)
    k = rng.normal(size=(batch, kv_len, kv_heads, head_dim)).astype(np.float32)
    v = rng.normal(size=(batch, kv_len, kv_heads, head_dim)).astype(np.float32)
    q_ids = np.ones((batch, q_len), np.int32)
    q_ids[:, 34:] = 9
    kv_ids = np.ones((batch, kv_len), np.int32)
    kv_ids[:, 20:] = 3  # keys nobody attends: garbage there must not leak
    k[:, 21, 0, 3] = np.inf
    v[:, 22, :, :] = np.nan
    v[:, 8, 1, 0] = np.nan  # a real NaN: queries 24.. of heads 2-3 attend it
    segments = SegmentIds(jnp.asarray(q_ids), jnp.asarray(kv_ids))

    out = np.asarray(jax.jit(lambda *a: run(ATTENTION, *a))(q, k, v, segments))
    ref = np.asarray(jax.jit(lambda *a: run(reference_attention, *a))(q, k, v, segments))
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(ref[0, 24, 2:]).all()
    assert not np.isnan(ref[0, 24, :2]).any()
    assert not np.isnan(ref[0, 23]).any()
    assert (out[0, :16] == 0).all()
    assert (out[0, 34:] == 0).all()
    both = ~np.isnan(ref)
    error = float(np.max(np.abs(out[both] - ref[both])))
    print(f"xla-sdpa empty rows case: max error {error:.3g}")
    assert error <= TOLERANCE["float32"]


def test_supports_floating_types_and_grouped_heads_only() -> None:
    for dtype in ("float32", "bfloat16", "float16"):
        for platform in ("cpu", "gpu", "tpu"):
            assert ATTENTION.supports(AttentionCase(dtype=dtype).spec(platform, platform))
    refusal = ATTENTION.supports(AttentionCase(dtype="int8").spec())
    assert not refusal
    assert "int8" in refusal.reasons[0]
    refusal = ATTENTION.supports(AttentionCase(heads=3, kv_heads=2).spec())
    assert not refusal
    assert "not a multiple" in refusal.reasons[0]


def test_priority_prefers_tpu_and_steps_back_on_cpu() -> None:
    assert ATTENTION.priority(AttentionCase().spec("tpu", "TPU v5 lite")) == 5
    assert ATTENTION.priority(AttentionCase().spec("gpu", "NVIDIA H100")) == 1
    assert ATTENTION.priority(AttentionCase().spec("cpu", "cpu")) == -5


def test_is_registered_under_its_name_for_this_contract() -> None:
    (entry,) = [e for e in entry_points(group="seamline.attention") if e.name == "xla-sdpa"]
    assert entry.load() is XlaSdpaAttention
    assert XlaSdpaAttention.name == "xla-sdpa"
    assert compatibility_problem("attention", XlaSdpaAttention.contract_version) is None
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        XlaSdpaConfig(block_q=1)  # type: ignore[call-arg]
