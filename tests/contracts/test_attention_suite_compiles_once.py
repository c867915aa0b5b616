"""The attention suite compiles a case once per class and configuration, not per instance.

Most fixtures build an instance per check (the tokamax example's does, as the docs show
authors): keyed by the instance, each check traced and compiled every case anew, and an
interpreted Pallas kernel takes seconds to compile (JAX's persistent cache does not keep
programs holding host callbacks). seamline's own fixtures kept one instance per
configuration in three module-level caches to get round it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from pydantic import Field

from seamline.contracts import AttentionSpec, ComponentConfig, Support
from seamline.contracts.attention import Attention
from seamline.contracts.testing.attention import _jitted

TRACES: list[str] = []
"""One entry per trace of a :class:`Counted` call (what a compilation starts from)."""


class Scaled(ComponentConfig):
    factor: float = 1.0


class Tabled(ComponentConfig):
    """A configuration holding a mapping: frozen, but it cannot be hashed."""

    factor: float = 1.0
    table: dict[str, float] = Field(default_factory=dict)


class Counted(Attention[Any]):
    """An attention that says each time it is traced."""

    name: ClassVar[str] = "counted"
    Config = Scaled

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.yes()

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        TRACES.append(type(self.config).__name__)
        return q * self.config.factor


class Doubled(Counted):
    """Another class with the same configuration: another function."""

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
        return super().__call__(q, k, v, **kwargs) * 2


class CountedTabled(Counted):
    Config = Tabled  # type: ignore[assignment]


def traces(*instances: Any) -> int:
    """How many times calling each of ``instances`` through the suite traced a call."""
    TRACES.clear()
    q = jnp.ones((1, 4, 1, 8), jnp.float32)
    for attention in instances:
        _jitted(attention, False)(q, q, q, None)
    return len(TRACES)


def test_instances_of_one_class_and_configuration_share_one_compilation() -> None:
    assert traces(Counted(Scaled(factor=5.0)), Counted(Scaled(factor=5.0))) == 1
    assert traces(Counted(Scaled(factor=5.0))) == 0, "compiled by the first instance"


def test_another_configuration_or_class_is_compiled_apart() -> None:
    assert traces(Counted(Scaled(factor=6.0)), Counted(Scaled(factor=7.0))) == 2
    assert traces(CountedTabled(Tabled(factor=6.0))) == 1
    assert traces(Doubled(Scaled(factor=6.0))) == 1
    q = jnp.ones((1, 4, 1, 8), jnp.float32)
    assert float(_jitted(Counted(Scaled(factor=7.0)), False)(q, q, q, None)[0, 0, 0, 0]) == 7.0
    assert float(_jitted(Counted(Scaled(factor=6.0)), False)(q, q, q, None)[0, 0, 0, 0]) == 6.0
    assert float(_jitted(Doubled(Scaled(factor=6.0)), False)(q, q, q, None)[0, 0, 0, 0]) == 12.0


def test_an_unhashable_configuration_keeps_one_compilation_per_instance() -> None:
    assert traces(CountedTabled(Tabled(factor=8.0)), CountedTabled(Tabled(factor=8.0))) == 2
    one = CountedTabled(Tabled(factor=9.0))
    assert traces(one, one) == 1
