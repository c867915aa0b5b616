"""``blockwise`` (online softmax over key blocks) against the reference.

Blocks of at most 64 make the small shapes span several query and key blocks, with
lengths (100, 130, 300) that are not multiples of the block, so the padding of
both axes, the carry across key blocks and the skipping of key blocks past the
causal diagonal are all exercised. Each case packs several features, because every
new shape compiles twice (the candidate and ``native``).
"""

from __future__ import annotations

from importlib.metadata import entry_points

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pydantic import ValidationError

from seamline.components.attention.blockwise import (
    BlockwiseAttention,
    BlockwiseConfig,
    _Blocks,
)
from seamline.contracts import TOLERANCES, AttentionFn, SegmentIds
from seamline.contracts.kernel_kit import reference_attention
from seamline.contracts.testing import AttentionCase
from seamline.contracts.versions import compatibility_problem
from tests.components.attention_harness import TOLERANCE, max_error

SMALL_BLOCKS = BlockwiseAttention(BlockwiseConfig(block_q=64, block_k=64))
DEFAULT = BlockwiseAttention(BlockwiseConfig())

#: The harness has no float16 entry; the contract's own tolerance serves.
TOLERANCE_BY_DTYPE = {**TOLERANCES, **TOLERANCE}

CASES = {
    # 2 x 56 queries and keys: both axes padded by 12.
    "float32-gqa-segments-padded": AttentionCase(
        batch=2, q_len=100, kv_len=100, heads=8, kv_heads=2, head_dim=32, segmented=True
    ),
    # Decoding-like: 5 queries over 5 key blocks, end-aligned causal, one key head.
    "float32-causal-decoding-segments": AttentionCase(
        batch=2, q_len=5, kv_len=300, heads=4, kv_heads=1, head_dim=32, causal=True,
        segmented=True,
    ),
    "bfloat16-gqa-causal-segments": AttentionCase(
        q_len=300, kv_len=300, heads=8, kv_heads=2, head_dim=32, dtype="bfloat16", causal=True,
        segmented=True,
    ),
    "float16-cross-unmasked": AttentionCase(
        q_len=100, kv_len=130, heads=2, kv_heads=2, head_dim=32, dtype="float16"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_matches_the_reference(case: AttentionCase) -> None:
    assert SMALL_BLOCKS.supports(case.spec())
    error = max_error(SMALL_BLOCKS, case)
    print(f"blockwise(64) {case}: max error {error:.3g}")
    assert error <= TOLERANCE_BY_DTYPE[case.dtype]


def test_default_blocks_match_the_reference() -> None:
    """One block each way, no padding, no mask: the plainest path of the loop."""
    case = AttentionCase(q_len=128, kv_len=128, heads=4, kv_heads=4, head_dim=64)
    error = max_error(DEFAULT, case)
    print(f"blockwise(default) {case}: max error {error:.3g}")
    assert error <= TOLERANCE["float32"]


def run(
    attention: AttentionFn, q: jax.Array, k: jax.Array, v: jax.Array, segments: SegmentIds
) -> jax.Array:
    return attention(q, k, v, segment_ids=segments, causal=True)


def test_rows_without_keys_are_zero_and_masked_garbage_stays_out() -> None:
    """Empty rows are zeros; NaN/inf in masked keys and values reach no row; real ones show.

    Causal with 200 queries over 136 keys leaves the first 64 queries no key (the
    first query block skips every key block, the second all but one); query id 9
    leaves 50 more without. Segment ids are ``jit`` arguments (tracers).
    """
    rng = np.random.default_rng(1)
    batch, q_len, kv_len, heads, kv_heads, head_dim = 1, 200, 136, 4, 2, 16
    q = jnp.asarray(rng.normal(size=(batch, q_len, heads, head_dim)), jnp.float32)
    k = rng.normal(size=(batch, kv_len, kv_heads, head_dim)).astype(np.float32)
    v = rng.normal(size=(batch, kv_len, kv_heads, head_dim)).astype(np.float32)
    q_ids = np.ones((batch, q_len), np.int32)
    q_ids[:, 150:] = 9
    kv_ids = np.ones((batch, kv_len), np.int32)
    kv_ids[:, 120:] = 3  # keys nobody attends: garbage there must not leak
    k[:, 125, 0, 3] = np.inf
    v[:, 130, :, :] = np.nan
    v[:, 50, 1, 0] = np.nan  # a real NaN: queries 114.. of heads 2-3 attend it
    segments = SegmentIds(jnp.asarray(q_ids), jnp.asarray(kv_ids))

    out = np.asarray(jax.jit(lambda *a: run(SMALL_BLOCKS, *a))(q, k, v, segments))
    ref = np.asarray(jax.jit(lambda *a: run(reference_attention, *a))(q, k, v, segments))
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(ref[0, 114, 2:]).all()
    assert not np.isnan(ref[0, 114, :2]).any()
    assert not np.isnan(ref[0, 113]).any()
    assert (out[0, :64] == 0).all()
    assert (out[0, 150:] == 0).all()
    both = ~np.isnan(ref)
    error = float(np.max(np.abs(out[both] - ref[both])))
    print(f"blockwise empty rows case: max error {error:.3g}")
    assert error <= TOLERANCE["float32"]


def test_working_memory_is_far_below_one_score_matrix() -> None:
    """At 16k tokens the score matrix alone is 12 GiB; the compiled loop needs a sliver.

    Compiled, not run: XLA's buffer assignment is the memory the call will take.
    """
    shape = jax.ShapeDtypeStruct((1, 16384, 12, 64), jnp.float32)
    ids = jax.ShapeDtypeStruct((1, 16384), jnp.int32)

    def call(q: jax.Array, k: jax.Array, v: jax.Array, ids: jax.Array) -> jax.Array:
        return DEFAULT(q, k, v, segment_ids=SegmentIds(ids, ids))

    compiled = jax.jit(call).lower(shape, shape, shape, ids).compile()
    temp = compiled.memory_analysis().temp_size_in_bytes
    scores = 12 * 16384 * 16384 * 4
    print(f"blockwise temp at 16k: {temp / 2**20:.0f} MiB; one score matrix {scores / 2**30} GiB")
    assert temp < scores / 16


def test_tiles_are_even_and_within_the_limit() -> None:
    assert _Blocks.of(100, 64) == _Blocks(56, 2)
    assert _Blocks.of(300, 64) == _Blocks(64, 5)
    assert _Blocks.of(5, 512) == _Blocks(8, 1)
    assert _Blocks.of(1, 1) == _Blocks(1, 1)
    assert _Blocks.of(30, 12) == _Blocks(10, 3)  # rounding to 8 would exceed the limit
    assert _Blocks.of(8192, 256) == _Blocks(256, 32)
    for length in (1, 7, 100, 513, 1000):
        for limit in (1, 8, 64, 500):
            blocks = _Blocks.of(length, limit)
            assert blocks.size <= limit
            assert blocks.padded >= length
            assert blocks.padded - length < 8 * blocks.number


def test_supports_floating_types_and_grouped_heads_on_every_platform() -> None:
    for dtype in ("float32", "bfloat16", "float16"):
        for platform in ("cpu", "gpu", "tpu"):
            assert DEFAULT.supports(AttentionCase(dtype=dtype).spec(platform, platform))
    refusal = DEFAULT.supports(AttentionCase(dtype="int32").spec())
    assert not refusal
    assert "int32" in refusal.reasons[0]
    refusal = DEFAULT.supports(AttentionCase(heads=3, kv_heads=2).spec())
    assert not refusal
    assert "not a multiple" in refusal.reasons[0]


def test_priority_leads_on_cpu_for_long_sequences_only() -> None:
    assert DEFAULT.priority(AttentionCase(q_len=2048, kv_len=2048).spec("cpu", "cpu")) == 10
    assert DEFAULT.priority(AttentionCase(q_len=1, kv_len=4096).spec("cpu", "cpu")) == 10
    assert DEFAULT.priority(AttentionCase(q_len=512, kv_len=512).spec("cpu", "cpu")) == -1
    assert DEFAULT.priority(AttentionCase(q_len=8192, kv_len=8192).spec("gpu", "NVIDIA H100")) == -1
    assert DEFAULT.priority(AttentionCase(q_len=8192, kv_len=8192).spec("tpu", "TPU v4")) == -1


def test_config_wants_positive_blocks() -> None:
    assert BlockwiseConfig().block_q > 0
    for bad in ({"block_q": 0}, {"block_k": -8}):
        with pytest.raises(ValidationError):
            BlockwiseConfig(**bad)
    with pytest.raises(ValidationError):
        BlockwiseConfig(block=64)  # type: ignore[call-arg]


def test_is_registered_under_its_name_for_this_contract() -> None:
    (entry,) = [e for e in entry_points(group="seamline.attention") if e.name == "blockwise"]
    assert entry.load() is BlockwiseAttention
    assert BlockwiseAttention.name == "blockwise"
    assert compatibility_problem("attention", BlockwiseAttention.contract_version) is None
