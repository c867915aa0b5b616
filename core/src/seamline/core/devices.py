"""Every local device at once: batches split over a mesh, parameters on every device.

A process that sees several devices of its platform (a host with eight GPUs, a TPU
VM's chips, or CPUs split with ``--xla_force_host_platform_device_count``) uses
them data-parallel: a one-axis ``jax.sharding.Mesh`` over the batch, each device
computing its rows, the parameters replicated. Inference has no cross-row
communication, so this is the whole of it; with one device nothing changes.
Batches of a shape whose row count the devices do not divide run on one device
(the batch planner rounds rows up to a multiple of the device count, so only a
caller that builds batches itself meets that).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from seamline.contracts import UserError
from seamline.core.forking import note_runtime_started
from seamline.core.private_cache import check_jax_compile_cache

BATCH_AXIS = "batch"
DEFAULT_DEVICE = "jax_default_device"  # jax.default_device(...): the thread's value
PLATFORMS_SETTING = "jax_platforms"  # what $JAX_PLATFORMS sets, or an application's code


@dataclass(frozen=True)
class DataParallel:
    """The mesh of this process's devices and the two shardings a step needs."""

    mesh: Mesh

    @property
    def devices(self) -> int:
        return int(self.mesh.devices.size)

    @property
    def rows(self) -> NamedSharding:
        """Arrays whose first axis is the batch: split over the devices."""
        return NamedSharding(self.mesh, PartitionSpec(BATCH_AXIS))

    @property
    def replicated(self) -> NamedSharding:
        """The parameters: a whole copy on every device."""
        return NamedSharding(self.mesh, PartitionSpec())

    def serves(self, rows: int) -> bool:
        return rows % self.devices == 0

    def jit(self, function: Callable[..., Any]) -> Any:
        """``function(params, arrays) -> (outputs, flag)`` compiled with the parameters
        replicated, the rows of the arrays and outputs split, and the scalar flag (the
        step's finite check) replicated."""
        return jax.jit(
            function,
            in_shardings=(self.replicated, self.rows),
            out_shardings=(self.rows, self.replicated),
        )

    def place_params(self, params: Any) -> Any:
        return jax.device_put(params, self.replicated)


def jax_devices(*, local: bool = False) -> list[Any]:
    """``jax.devices()`` (or ``local_devices()``), or a ``UserError`` naming ``JAX_PLATFORMS``.

    JAX starts its platforms on first use; one it cannot start (``JAX_PLATFORMS=cuda`` on
    a machine without a GPU raised a bare ``AssertionError``) failed a run "in the
    pipeline" with ``--resume`` advice, exit 1, and ``explain`` with a traceback. The
    environment is the user's to fix: one line, exit 2. The plugin it names is pinned to
    the JAX installed (gpu.md's way): an unpinned ``jax[cuda13]`` upgrades JAX itself, and
    with it the numbers every recorded check and tuning was made with.
    """
    check_jax_compile_cache()  # before anything seamline runs can load a cached program
    try:
        devices = list(jax.local_devices() if local else jax.devices())
    except (RuntimeError, AssertionError) as err:
        setting, undo = _platforms_setting()
        reason = str(err).split(" (set JAX_PLATFORMS", 1)[0].strip()
        because = f" ({reason})" if reason else ""  # a bare AssertionError says nothing more
        named = f": {setting} names" if setting else ""
        raise UserError(
            f"JAX cannot start{named} a platform this machine does not have or cannot load"
            f"{because}; {undo} (JAX then uses what there is, the CPU at least), "
            f"or install that platform's JAX plugin at the JAX installed, {jax.__version__}, "
            f'so that JAX does not move: "jax[cuda13]=={jax.__version__}" for NVIDIA GPUs '
            f'(in a seamline checkout with -c constraints.txt; docs/gpu.md), "jax[tpu]=='
            f'{jax.__version__}" for TPUs'
        ) from None
    # The runtime's threads run from here on: a child forked now would wait for ever on
    # them (an Embedder built, never used, then gunicorn --preload's fork: it hung).
    note_runtime_started()
    return devices


def _platforms_setting() -> tuple[str, str]:
    """``(setting, how to undo it)``: the platforms named, as the user named them.

    ``$JAX_PLATFORMS``, or ``jax.config.update("jax_platforms", ...)`` in an
    application's code, which was told to "unset JAX_PLATFORMS", a variable not set.
    """
    variable = os.environ.get("JAX_PLATFORMS", "")
    value = getattr(jax.config, PLATFORMS_SETTING) or ""
    if value and value != variable:
        return f"jax.config's jax_platforms={value!r}", "do not set jax_platforms in jax.config"
    if variable:
        return f"JAX_PLATFORMS={variable!r}", "unset JAX_PLATFORMS"
    return "", "unset JAX_PLATFORMS"


def pinned_device() -> Any | None:
    """The device an application pinned JAX to, if it did: ``jax.default_device(d)``
    around the ``Embedder``'s construction, or ``jax.config.update("jax_default_device",
    d)`` (a platform's name means its first device).

    It was ignored: the weights were copied to every local device and each batch split
    over them all, when the application meant the model to use that one alone.
    """
    value = getattr(jax.config, DEFAULT_DEVICE)
    if value is None:
        return None
    if isinstance(value, str):
        return jax.local_devices(backend=value)[0]
    return value


def local_data_parallel() -> DataParallel | None:
    """The data-parallel mesh of this process's local devices, or None with only one (or
    with a device pinned: :func:`pinned_device`)."""
    devices = jax_devices(local=True)
    if len(devices) < 2 or pinned_device() is not None:
        return None
    return DataParallel(Mesh(np.array(devices), (BATCH_AXIS,)))
