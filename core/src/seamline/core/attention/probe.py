"""Learning a model's attention shapes without running it.

``jax.eval_shape`` traces ``apply`` abstractly with a stand-in attention that
records each call's shapes and returns zeros of the right shape. This costs no
FLOPs and needs no knowledge of the model's internals, which is what lets the
planner negotiate per shape bucket for any model.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from seamline.contracts import AttentionSpec, Model, RelativeBias, SegmentIds
from seamline.contracts.attention import RELATIVE
from seamline.core.devices import jax_devices


def device_identity() -> tuple[str, str]:
    """``(platform, device_kind)`` of the default device, e.g. ``("cpu", "cpu")``."""
    device = jax_devices()[0]  # a platform JAX cannot start: the user's error, named
    return device.platform, device.device_kind


def attention_specs(
    model: Model[Any], params: Any, arrays: Mapping[str, Any]
) -> list[AttentionSpec]:
    """The distinct attention calls ``model.apply`` makes for a batch shaped like ``arrays``."""
    platform, device_kind = device_identity()
    seen: list[AttentionSpec] = []

    def recorder(
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        spec = AttentionSpec(
            batch=q.shape[0],
            q_len=q.shape[1],
            kv_len=k.shape[1],
            num_heads=q.shape[2],
            num_kv_heads=k.shape[2],
            head_dim=q.shape[3],
            dtype=str(q.dtype),
            causal=causal,
            segmented=segment_ids is not None,
            platform=platform,
            device_kind=device_kind,
            bias=None if bias is None else RELATIVE,
        )
        if spec not in seen:
            seen.append(spec)
        return jnp.zeros_like(q)

    jax.eval_shape(functools.partial(model.apply, attention=recorder), params, dict(arrays))
    return seen
