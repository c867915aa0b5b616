"""The attention's choke point inside compiled code: what a model receives as its attention.

:class:`CheckedAttention` checks the contract's shapes and dtypes at trace time
(free under ``jit``: they are static) and wraps the call in
``jax.named_scope("seamline/attention/<name>")`` so XLA profiles name the kernel.
Every path that hands an attention to a model (a run, verification, ``search``)
goes through it.
"""

from __future__ import annotations

from typing import Any

import jax

from seamline.contracts import Attention, ContractViolation, RelativeBias, SegmentIds
from seamline.contracts.seams import (
    check_attention_bias,
    check_attention_inputs,
    check_attention_output,
)
from seamline.core.seams import scope_name


class AttentionBrokeContract(ContractViolation):
    """The attention itself (not the model calling it) returned what the contract forbids.

    Still a :class:`ContractViolation`, so an explicit choice or ``on_failure: raise``
    stops as before; but it is the kernel's fault for this shape, so ``auto`` or a
    preference list demotes the kernel and falls back instead of stopping the run.
    """


class CheckedAttention:
    """An attention behind the seam's checks and named scope."""

    def __init__(self, attention: Attention[Any]) -> None:
        self.attention = attention
        self.name = attention.name
        self._scope = scope_name("attention", attention.name)

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        check_attention_inputs(self.name, q, k, v)
        if bias is not None:
            check_attention_bias(self.name, q, k, bias)
        with jax.named_scope(self._scope):
            if bias is None:  # a kernel written before contract 1.2 has no bias keyword
                out = self.attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)
            else:
                out = self.attention(
                    q, k, v, segment_ids=segment_ids, causal=causal, scale=scale, bias=bias
                )
        try:
            check_attention_output(self.name, q, out)
        except ContractViolation as err:
            raise AttentionBrokeContract(str(err)) from None
        return out
