"""Shared checks for attention implementations: the suite's cases, compared with ``native``.

Cases and their inputs are the conformance suite's own (``AttentionCase`` and
``attention_inputs`` from ``seamline.contracts.testing``); what is added here is a
comparison with the plain float32 reference every kernel may fall back to.

Tolerances are per dtype and written down here once: float32 kernels that reorder
the sum (online softmax, blocked matmuls) agree with the reference to a few 1e-6;
bfloat16 carries about 3 significant digits, and one bfloat16 step is already
1.6e-2 for outputs between 2 and 4 (jax.nn rounds the softmax weights to bfloat16
before the second product), so 5e-2 absolute, the contract's own bfloat16 bound.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from seamline.contracts import AttentionFn
from seamline.contracts.kernel_kit import reference_attention
from seamline.contracts.testing import AttentionCase, attention_inputs

TOLERANCE = {"float32": 2e-5, "bfloat16": 5e-2, "float16": 1e-2}


def max_error(attention: AttentionFn | Callable[..., jax.Array], case: AttentionCase) -> float:
    """Largest absolute difference from the reference, both jitted, on the case's inputs."""
    q, k, v, segments = attention_inputs(case)

    def candidate(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return attention(q, k, v, segment_ids=segments, causal=case.causal)

    def reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return reference_attention(q, k, v, segment_ids=segments, causal=case.causal)

    out = jax.jit(candidate)(q, k, v)
    assert out.shape == q.shape, (out.shape, q.shape)
    assert out.dtype == q.dtype, (out.dtype, q.dtype)
    expected = jax.jit(reference)(q, k, v)
    return float(jnp.max(jnp.abs(out.astype(jnp.float32) - expected.astype(jnp.float32))))
