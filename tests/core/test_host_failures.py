"""A failure that is the host application's, not a kernel's: no kernel pays for it.

A JAX application that wraps one ``encode`` in a setting of its own (a
``jax.transfer_guard("disallow")``, ``jax.disable_jit()``) made every candidate kernel
fail the same way for that batch shape; each was demoted for the shape, for the
Embedder's whole life, so later calls without the setting raised ``NoAttentionError``
with the stale reason. The toy model keeps these fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import jax
import numpy as np
import pytest

from seamline.components.attention.native import NativeAttention
from seamline.core.embedder import Embedder
from tests.core.toy import toy_registry, with_attention

REFUSAL = "the host application refuses this for now"


class _Host:
    """Whether the host's setting is on, and where the failure shows (tracing or running)."""

    refusing: ClassVar[str] = ""


def _while_running() -> None:
    if _Host.refusing == "running":
        raise RuntimeError(REFUSAL)


def _host_says_no(q: jax.Array) -> None:
    """What the host's setting does to every kernel alike."""
    if _Host.refusing == "tracing":
        raise RuntimeError(REFUSAL)
    jax.debug.callback(_while_running)


class HostBoundNative(NativeAttention):
    name: ClassVar[str] = "host-bound"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:  # type: ignore[override]
        _host_says_no(q)
        return super().__call__(q, k, v, **kwargs)


class HostBoundReference(NativeAttention):
    name: ClassVar[str] = "host-bound-reference"
    contract_version: ClassVar[str] = "1.1"

    def __call__(self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:  # type: ignore[override]
        _host_says_no(q)
        return super().__call__(q, k, v, **kwargs)


@pytest.fixture
def embedder() -> Iterator[Embedder]:
    registry = with_attention(toy_registry(), HostBoundNative, "tests", "0")
    registry = with_attention(registry, HostBoundReference, "tests", "0")
    attention = {"use": ["host-bound", "host-bound-reference"], "verify": False}
    with Embedder({"use": "toy"}, attention, registry=registry) as built:
        yield built
    _Host.refusing = ""


@pytest.mark.parametrize("where", ["tracing", "running"])
def test_every_candidate_failing_alike_raises_that_error_and_demotes_none(
    embedder: Embedder, where: str
) -> None:
    _Host.refusing = where
    with pytest.raises(RuntimeError, match=REFUSAL) as caught:
        embedder.encode(["one two three"])
    assert "not a kernel's fault" in "".join(getattr(caught.value, "__notes__", []))
    _Host.refusing = ""
    again = embedder.encode(["one two three"])  # the same shape, the setting gone
    assert again.shape == (1, 32)
    assert np.isfinite(again).all()
