"""How one batch shape's model call is compiled with one attention: a :class:`Step`.

The model's ``apply`` with the attention behind its checked choke point, inside
``jax.named_scope("seamline/model/<name>")`` so XLA profiles name the component, with
one fused ``isfinite(...).all()`` reduction returned beside the outputs (the call-time
NaN check costs no host-side scan), jitted over the local devices when the batch is
split across them, lowered and compiled under a ``seamline.compile`` span.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from seamline.contracts import Attention, AttentionSpec, Batch, Compiled, Event, Model
from seamline.core.attention.candidates import AttentionCandidates
from seamline.core.attention.checked import CheckedAttention
from seamline.core.attention.planner import AttentionDecision, SpecKey
from seamline.core.devices import DataParallel
from seamline.core.seams import scope_name
from seamline.core.telemetry import (
    ATTENTION_NAME,
    ATTENTION_REASON,
    BATCH_LENGTH,
    BATCH_SIZE,
    DEVICE_KIND,
    DTYPE,
    PLATFORM,
    component_attributes,
    tracer,
)


@dataclass(frozen=True, slots=True)
class Step:
    """A compiled model call for one batch shape, with the attention that serves it."""

    call: Callable[[Any, Mapping[str, Any]], tuple[jax.Array, jax.Array]]
    """``(outputs, finite)``: the model's outputs, and whether every value of them is finite."""
    decision: AttentionDecision
    compiled: Any
    """The XLA executable; its HLO names each seam (``seamline/<kind>/<name>``)."""
    specs: SpecKey = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """The ``seamline.model.apply`` span's attributes for this shape (built once)."""


class StepCompiler:
    """Compiles steps for one model; keeps each attention's span attributes, built once."""

    def __init__(
        self,
        model: Model[Any],
        candidates: AttentionCandidates,
        report: Callable[[Event], None],
        parallel: DataParallel | None = None,
    ) -> None:
        self.model = model
        self.candidates = candidates
        self.parallel = parallel
        self._report = report
        self._attention_attributes: dict[str, dict[str, str]] = {}

    def compile(
        self,
        params: Any,
        batch: Batch,
        attention: Attention[Any],
        decision: AttentionDecision,
        specs: tuple[AttentionSpec, ...],
    ) -> Step:
        apply = functools.partial(self.model.apply, attention=CheckedAttention(attention))
        scope = scope_name("model", self.model.name)

        def seamline_step(params: Any, arrays: Mapping[str, Any]) -> tuple[jax.Array, jax.Array]:
            with jax.named_scope(scope):
                outputs = apply(params, arrays)
            # One fused reduction: the call-time NaN check costs no host-side scan.
            return outputs, jnp.isfinite(outputs).all()

        shape: dict[str, Any] = {BATCH_SIZE: batch.batch_size, BATCH_LENGTH: batch.length}
        if specs:
            shape.update(
                {
                    DTYPE: specs[0].dtype,
                    PLATFORM: specs[0].platform,
                    DEVICE_KIND: specs[0].device_kind,
                }
            )
        started = time.perf_counter()
        with tracer().start_as_current_span(
            "seamline.compile",
            attributes={**self.attributes_of(attention), **shape, ATTENTION_NAME: attention.name},
        ):
            parallel = self.parallel
            jitted = (
                parallel.jit(seamline_step)
                if parallel is not None and parallel.serves(batch.batch_size)
                else jax.jit(seamline_step)
            )
            compiled = jitted.lower(params, dict(batch.arrays)).compile()
        self._report(Compiled(batch.length, batch.batch_size, time.perf_counter() - started))
        attributes = {**shape, ATTENTION_NAME: decision.chosen, ATTENTION_REASON: decision.reason}
        return Step(lambda p, a: compiled(p, dict(a)), decision, compiled, specs, attributes)

    def attributes_of(self, attention: Attention[Any]) -> dict[str, str]:
        """An implementation's span attributes, built once per name."""
        attributes = self._attention_attributes.get(attention.name)
        if attributes is None:
            info = self.candidates.infos.get(attention.name)
            attributes = component_attributes(
                attention.describe(),
                distribution=info.distribution if info is not None else None,
                version=info.version if info is not None else None,
            )
            self._attention_attributes[attention.name] = attributes
        return attributes
