"""The relative bias through core's side of the seam: probe, choke point, verification, planner.

Core names no kernel and no model: it learns that a call has a bias from the call
(the probe), hands the bias on only to a kernel asked with it (the choke point),
verifies a candidate on a biased probe, and negotiates with the spec's ``bias``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from seamline.components.attention.blockwise import BlockwiseAttention
from seamline.components.attention.native import NativeAttention
from seamline.components.attention.xla_sdpa import XlaSdpaAttention
from seamline.contracts import (
    Attention,
    AttentionFn,
    AttentionSpec,
    ComponentConfig,
    RelativeBias,
    SegmentIds,
    Support,
)
from seamline.contracts.testing import dense_attention
from seamline.core.attention.checked import CheckedAttention
from seamline.core.attention.planner import AttentionPlanner, NoAttentionError
from seamline.core.attention.probe import attention_specs
from seamline.core.attention.verification import probe, probe_bias, verify
from seamline.core.config.spec import AttentionMode

BIASED = AttentionSpec(2, 32, 32, 4, 4, 16, "float32", False, True, "cpu", "cpu", "relative")


class _Plain(ComponentConfig):
    """Nothing to configure."""


class OldKernel(Attention[_Plain]):
    """Written for contract 1.1: no bias keyword at all."""

    name: ClassVar[str] = "old"
    contract_version: ClassVar[str] = "1.1"
    Config = _Plain

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.yes()

    def __call__(  # type: ignore[override]
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        return dense_attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)


class BiasBlind(OldKernel):
    """Declares the bias and drops it."""

    name: ClassVar[str] = "bias-blind"
    score_biases: ClassVar[tuple[str, ...]] = ("relative",)

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        kwargs.pop("bias", None)
        return super().__call__(q, k, v, **kwargs)


def _biased_apply(params: Any, arrays: dict[str, Any], attention: AttentionFn) -> jax.Array:
    """A one-layer "model" that calls its attention with a relative bias."""
    x = jnp.asarray(arrays["x"])
    positions = jnp.broadcast_to(jnp.arange(x.shape[1]), x.shape[:2])
    bias = RelativeBias.bucketed(params, positions, positions)
    return attention(x, x, x, bias=bias)


def test_the_probe_sees_the_bias_in_the_call() -> None:
    model: Any = type("M", (), {"apply": staticmethod(_biased_apply)})()
    arrays = {"x": np.zeros((2, 8, 4, 16), np.float32)}
    (spec,) = attention_specs(model, jnp.zeros((32, 4)), arrays)
    assert spec.bias == "relative"
    assert spec.signature().endswith("relative-bias,cpu")


def test_the_choke_point_passes_no_bias_keyword_without_a_bias() -> None:
    q, k, v, ids = probe(BIASED)
    checked = CheckedAttention(OldKernel(OldKernel.Config()))
    out = checked(q, k, v, segment_ids=ids)  # OldKernel would raise TypeError on bias=None
    assert out.shape == q.shape


def test_the_choke_point_hands_the_bias_to_a_kernel_that_takes_it() -> None:
    q, k, v, ids = probe(BIASED)
    bias = probe_bias(BIASED, ids)
    assert bias is not None
    native = CheckedAttention(NativeAttention(NativeAttention.Config()))
    with_bias = native(q, k, v, segment_ids=ids, bias=bias)
    without = native(q, k, v, segment_ids=ids)
    assert float(jnp.max(jnp.abs(with_bias - without))) > 0.05


def test_verification_catches_a_kernel_that_drops_the_bias() -> None:
    native = NativeAttention(NativeAttention.Config())
    blind = verify(BiasBlind(BiasBlind.Config()), native, [BIASED])
    assert not blind.ok
    good = verify(
        BlockwiseAttention(BlockwiseAttention.Config(block_q=8, block_k=8)), native, [BIASED]
    )
    assert good.ok


def test_the_probe_bias_positions_restart_per_segment() -> None:
    _, _, _, ids = probe(BIASED)
    bias = probe_bias(BIASED, ids)
    assert ids is not None
    assert bias is not None
    segments, positions = np.asarray(ids.q)[0], np.asarray(bias.q_positions)[0]
    starts = np.flatnonzero(np.diff(segments, prepend=-1))
    assert (positions[starts] == 0).all()
    assert positions[starts[0] + 3] == 3


def test_an_explicit_kernel_without_the_bias_is_refused_with_its_reason() -> None:
    planner = AttentionPlanner(
        [XlaSdpaAttention(XlaSdpaAttention.Config())], AttentionMode.EXPLICIT
    )
    with pytest.raises(NoAttentionError, match="does not add a relative-position score bias"):
        planner.choose([BIASED])


def test_auto_passes_over_kernels_without_the_bias() -> None:
    candidates: list[Attention[Any]] = [
        XlaSdpaAttention(XlaSdpaAttention.Config()),
        OldKernel(OldKernel.Config()),
        BlockwiseAttention(BlockwiseAttention.Config(block_q=256, block_k=256)),
        NativeAttention(NativeAttention.Config()),
    ]
    decision = AttentionPlanner(candidates, AttentionMode.LIST).choose([BIASED])
    assert decision.chosen == "blockwise"
    refused = {refusal.candidate for refusal in decision.refusals}
    assert refused == {"xla-sdpa", "old"}
