"""One local Ray cluster for the whole test session, and the components its workers find.

Starting Ray costs seconds, so every scaling test shares one cluster of two CPUs
(as many as this machine has). Its workers rebuild pipelines from entry points,
so the test components (``plugin/``) reach them through ``PYTHONPATH``; this
process finds them on ``sys.path``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from seamline.core.config.user import user_trust
from seamline.core.registry import Registry

PLUGIN = Path(__file__).parent / "plugin"


def plugin_environment() -> dict[str, str]:
    """This environment, with the test components importable (for workers and subprocesses)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN), env.get("PYTHONPATH")) if p)
    return env


@contextmanager
def plugin_on_path() -> Iterator[None]:
    """The test components importable in this process, for as long as the block runs."""
    sys.path.insert(0, str(PLUGIN))
    try:
        yield
    finally:
        if str(PLUGIN) in sys.path:  # a test may have swapped sys.path for its own list
            sys.path.remove(str(PLUGIN))


@pytest.fixture(autouse=True)
def _plugin_importable() -> Iterator[None]:
    """A scaling test's components import while it runs, and only then.

    The path goes when the test ends, not when the session does: on a worker that runs
    other modules' tests after these, they must discover the installed components only
    (the hostile-pipelines table lists the available models, and ``tiny`` is not one).
    """
    with plugin_on_path():
        yield


@pytest.fixture(scope="session")
def scale_registry() -> Registry:
    """Discovery as a worker sees it: the installed components and the test ones."""
    with plugin_on_path():
        return Registry.discover(user_trust())


@pytest.fixture(scope="session")
def ray_cluster(scale_registry: Registry) -> Iterator[str]:
    """A local Ray of 2 CPUs, started once; yields the address a driver process can join.

    Ray starts no idle workers for this process (by default one per CPU, for tasks): the
    executor runs actors only, each in a process of its own (their thread caps make their
    runtime environment differ from this process's), so those workers were never used.
    """
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="warning",
        runtime_env={"env_vars": {"PYTHONPATH": plugin_environment()["PYTHONPATH"]}},
        _system_config={"prestart_worker_first_driver": False, "enable_worker_prestart": False},
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
