"""The relative-position bias of attention contract 1.2: its semantics, its gate, its checks.

The bucket function is also compared with transformers' own, token for token, in
tests/components/test_mpnet_golden.py (the goldens record it).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from seamline.contracts import (
    Attention,
    AttentionSpec,
    ComponentConfig,
    ContractViolation,
    RelativeBias,
    Support,
    UnsupportedError,
    relative_position_buckets,
)
from seamline.contracts.kernel_kit import refuse_bias
from seamline.contracts.seams import check_attention_bias
from seamline.contracts.testing import (
    ATTENTION_CASES,
    attention_bias,
    attention_inputs,
    exact_attention,
)
from seamline.contracts.testing._reference import chunked_attention, dense_attention

SPEC = AttentionSpec(2, 64, 64, 4, 4, 32, "float32", False, True, "cpu", "cpu")
BIASED = AttentionSpec(2, 64, 64, 4, 4, 32, "float32", False, True, "cpu", "cpu", "relative")


class _Plain(ComponentConfig):
    """Nothing to configure."""


class WrittenFor11(Attention[_Plain]):
    """A kernel as a third party wrote it for contract 1.1: it has never heard of a bias."""

    name: ClassVar[str] = "written-for-1.1"
    contract_version: ClassVar[str] = "1.1"
    Config = _Plain

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.no("float16 only") if spec.dtype == "float64" else Support.yes()

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        return q


class Declares(WrittenFor11):
    """The same kernel declaring the relative bias."""

    score_biases: ClassVar[tuple[str, ...]] = ("relative",)


def test_buckets_of_mpnet_bidirectional_32_128() -> None:
    buckets = relative_position_buckets(32, 128, bidirectional=True)
    at = {d: int(buckets[d + 128]) for d in range(-128, 129)}
    # Keys before the query (d < 0): buckets 0..15, exact up to 7 back; after: 16..31.
    assert [at[-d] for d in range(8)] == list(range(8))
    assert [at[d] for d in range(1, 8)] == list(range(17, 24))
    assert at[0] == 0
    assert at[-128] == 15
    assert at[128] == 31
    # Logarithmic in between, never decreasing with distance, saturating before max_distance.
    back = [at[-d] for d in range(128)]
    assert back == sorted(back)
    assert at[-90] == 14
    assert at[-91] == 15


def test_unidirectional_buckets_put_every_later_key_in_bucket_zero() -> None:
    buckets = relative_position_buckets(32, 128, bidirectional=False)
    assert set(buckets[128:].tolist()) == {0}
    assert buckets[128 - 15] == 15
    assert buckets[0] == 31


def test_bucketed_bias_gathers_the_table_per_distance() -> None:
    table = jnp.arange(32 * 3, dtype=jnp.float32).reshape(32, 3)
    positions = jnp.zeros((1, 4), jnp.int32)
    bias = RelativeBias.bucketed(table, positions, positions, max_distance=128)
    assert bias.values.shape == (257, 3)
    assert bias.max_distance == 128
    buckets = relative_position_buckets(32, 128)
    np.testing.assert_array_equal(np.asarray(bias.values), np.asarray(table)[buckets])


def test_exact_reference_adds_the_bias_of_each_clipped_distance() -> None:
    """Two keys, one query: the softmax weights are those of the two biases alone (q = 0)."""
    q = jnp.zeros((1, 1, 1, 4), jnp.float32)
    k = jnp.zeros((1, 2, 1, 4), jnp.float32)
    v = jnp.asarray([[[[1.0, 0, 0, 0]], [[0, 1.0, 0, 0]]]])
    values = jnp.asarray([[0.0], [0.0], [0.0], [np.log(3.0)], [0.0]])  # D = 2; d = +1 -> log 3
    # Query at position 10; keys at 11 (d = +1) and 50 (d = +40, clipped to +2, value 0).
    bias = RelativeBias(values, jnp.asarray([[10]]), jnp.asarray([[11, 50]]))
    out = exact_attention(q, k, v, bias=bias)
    np.testing.assert_allclose(out[0, 0, 0, :2], [0.75, 0.25], atol=1e-12)


def test_a_bias_constant_per_head_changes_nothing() -> None:
    """Softmax is shift-invariant: an independent check of every plain implementation's bias."""
    case = ATTENTION_CASES["relative-bias-segments"]
    q, k, v, ids = attention_inputs(case)
    positions = jnp.zeros((case.batch, case.q_len), jnp.int32)
    flat = RelativeBias(jnp.full((9, case.heads), 3.0), positions, positions)
    want = exact_attention(q, k, v, segment_ids=ids)
    np.testing.assert_allclose(
        exact_attention(q, k, v, segment_ids=ids, bias=flat), want, atol=1e-12
    )
    for plain in (dense_attention, chunked_attention):
        got = plain(q, k, v, segment_ids=ids, bias=flat)
        np.testing.assert_allclose(np.asarray(got), want, atol=1e-5)


@pytest.mark.parametrize("plain", [dense_attention, chunked_attention])
@pytest.mark.parametrize("name", ["relative-bias-segments", "relative-bias-cross-segments"])
def test_the_suites_plain_attentions_add_the_bias(plain: Any, name: str) -> None:
    case = ATTENTION_CASES[name]
    q, k, v, ids = attention_inputs(case)
    bias = attention_bias(case)
    want = exact_attention(q, k, v, segment_ids=ids, causal=case.causal, bias=bias)
    unbiased = exact_attention(q, k, v, segment_ids=ids, causal=case.causal)
    assert np.max(np.abs(want - unbiased)) > 0.1  # the suite's bias moves the answer
    got = np.asarray(plain(q, k, v, segment_ids=ids, causal=case.causal, bias=bias))
    assert np.max(np.abs(got - want)) < 1e-5


def test_the_suites_positions_restart_with_each_segment() -> None:
    case = ATTENTION_CASES["relative-bias-segments"]
    _, _, _, ids = attention_inputs(case)
    bias = attention_bias(case)
    assert ids is not None
    assert bias is not None
    segments, positions = np.asarray(ids.q), np.asarray(bias.q_positions)
    for row in range(case.batch):
        starts = np.flatnonzero(np.diff(segments[row], prepend=-1))
        assert (positions[row, starts] == 2).all()


def test_a_kernel_written_before_the_bias_refuses_it_with_a_reason() -> None:
    kernel = WrittenFor11(WrittenFor11.Config())
    assert kernel.supports(SPEC).ok
    refusal = kernel.supports(BIASED)
    assert not refusal.ok
    assert "relative-position score bias" in refusal.reasons[0]


def test_the_gate_keeps_the_kernels_own_reasons() -> None:
    kernel = WrittenFor11(WrittenFor11.Config())
    refusal = kernel.supports(dataclasses.replace(BIASED, dtype="float64"))
    assert len(refusal.reasons) == 2
    assert refusal.reasons[1] == "float16 only"


def test_a_kernel_that_declares_the_bias_is_asked_as_before() -> None:
    assert Declares(Declares.Config()).supports(BIASED).ok


def test_an_unknown_bias_is_refused_even_by_a_kernel_that_declares_one() -> None:
    spec = AttentionSpec(1, 8, 8, 2, 2, 8, "float32", False, False, "cpu", "cpu", "alibi")
    refusal = Declares(Declares.Config()).supports(spec)
    assert not refusal.ok
    assert "'alibi' is not one this contract defines" in refusal.reasons[0]


def test_the_signature_names_the_bias() -> None:
    assert BIASED.signature().endswith(":float32:segments,relative-bias,cpu")
    assert "bias" not in SPEC.signature()


def test_refuse_bias_raises_the_contracts_error_only_with_a_bias() -> None:
    refuse_bias("x", None)
    positions = jnp.zeros((1, 2), jnp.int32)
    with pytest.raises(UnsupportedError, match="does not add a relative-position"):
        refuse_bias("x", RelativeBias(jnp.zeros((3, 1)), positions, positions))


@pytest.mark.parametrize(
    ("values", "q_pos", "kv_pos", "says"),
    [
        ((4, 2), (1, 8), (1, 8), "values(4, 2) is not [2D + 1, 2]"),
        ((5, 3), (1, 8), (1, 8), "values(5, 3) is not [2D + 1, 2]"),
        ((5, 2), (1, 7), (1, 8), "q_positions(1, 7) is not [1, 8]"),
        ((5, 2), (1, 8), (2, 8), "kv_positions(2, 8) is not [1, 8]"),
    ],
)
def test_the_seam_refuses_a_bias_that_does_not_fit(
    values: tuple[int, int], q_pos: tuple[int, int], kv_pos: tuple[int, int], says: str
) -> None:
    q = jnp.zeros((1, 8, 2, 4))
    bias = RelativeBias(
        jnp.zeros(values), jnp.zeros(q_pos, jnp.int32), jnp.zeros(kv_pos, jnp.int32)
    )
    with pytest.raises(ContractViolation, match=re.escape(says)):
        check_attention_bias("model-x", q, q, bias)
