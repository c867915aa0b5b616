"""How one batch shape's model call is compiled with one attention: a :class:`Step`.

The model's ``apply`` with the attention behind its checked choke point, inside
``jax.named_scope("seamline/model/<name>")`` so XLA profiles name the component, with
one fused ``isfinite(...).all()`` reduction returned beside the outputs (the call-time
NaN check costs no host-side scan), jitted over the local devices when the batch is
split across them, lowered and compiled under a ``seamline.compile`` span.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from seamline.contracts import (
    Attention,
    AttentionSpec,
    Batch,
    Compiled,
    Event,
    Model,
    UserError,
)
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
            with own_numerics():
                compiled = jitted.lower(params, dict(batch.arrays)).compile()
        self._report(Compiled(batch.length, batch.batch_size, time.perf_counter() - started))
        attributes = {**shape, ATTENTION_NAME: decision.chosen, ATTENTION_REASON: decision.reason}
        placed = compiled.input_shardings[0][1]  # where the compiled step wants the arrays

        def call(params: Any, arrays: Mapping[str, Any]) -> tuple[jax.Array, jax.Array]:
            return compiled(params, guarded_put(arrays, placed))  # type: ignore[no-any-return]

        return Step(call, decision, compiled, specs, attributes)

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


@contextlib.contextmanager
def own_numerics() -> Iterator[None]:
    """Trace seamline's own code with JAX's default promotion rules, whatever the host's.

    A host application's ``jax_numpy_rank_promotion="raise"`` (or
    ``JAX_NUMPY_RANK_PROMOTION=raise``) made every shape not yet compiled fail in the
    model's own broadcasting (``layer_norm``'s ``(1, 256, 384) * (384,)``), and a
    ``"strict"`` dtype promotion would too: the settings are for the host's code, and a
    step traced under them is the same program either way when it traces at all.
    """
    with jax.numpy_rank_promotion("allow"), jax.numpy_dtype_promotion("standard"):
        yield


TRANSFER_GUARD = "jax_transfer_guard_host_to_device"  # jax.transfer_guard(...), thread's own
DISABLE_JIT = "jax_disable_jit"  # JAX_DISABLE_JIT, or jax.disable_jit(): the thread's value


def guarded_put(arrays: Mapping[str, Any], shardings: Any) -> dict[str, Any]:
    """The batch's arrays, put on the device explicitly when the host guards transfers.

    A host application's ``jax.transfer_guard("disallow")`` (or ``JAX_TRANSFER_GUARD``)
    refuses the compiled call's implicit transfer of the NumPy batch, and every kernel
    failed alike; JAX allows an explicit ``jax.device_put``. It is made only under a
    guard: it costs 0.15 to 0.25 ms a call for four small arrays on this CPU (the implicit
    transfer is in the call's C++ fast path); reading the setting costs 0.5 µs.
    """
    placed = dict(arrays)
    if getattr(jax.config, TRANSFER_GUARD) in (None, "allow"):
        return placed
    moved: dict[str, Any] = jax.device_put(placed, shardings)
    return moved


def check_jit_enabled() -> None:
    """A ``UserError`` naming JAX's ``jax_disable_jit`` when it is on, before a step runs.

    Every step is compiled ahead of time, which JAX refuses to run with jit disabled
    ("Disable jit is not supported in the AOT path"): each candidate kernel failed the
    same way and ``seamline run`` ended "no attention candidate can serve" after five
    warnings to fix kernels, the setting never named.
    """
    if not getattr(jax.config, DISABLE_JIT):
        return
    where = (
        f"JAX_DISABLE_JIT={os.environ['JAX_DISABLE_JIT']} in the environment"
        if os.environ.get("JAX_DISABLE_JIT")
        else "jax.config.update('jax_disable_jit', True), or jax.disable_jit() around the call"
    )
    raise UserError(
        f"JAX's jax_disable_jit is on ({where}): seamline runs the model compiled ahead of "
        "time, which JAX cannot do with jit disabled; unset it for seamline's calls"
    )
