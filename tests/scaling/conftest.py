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


@pytest.fixture(scope="session")
def scale_registry() -> Iterator[Registry]:
    """Discovery as a worker sees it: the installed components and the test ones."""
    sys.path.insert(0, str(PLUGIN))
    try:
        yield Registry.discover(user_trust())
    finally:
        sys.path.remove(str(PLUGIN))


@pytest.fixture(scope="session")
def ray_cluster(scale_registry: Registry) -> Iterator[str]:
    """A local Ray of 2 CPUs, started once; yields the address a driver process can join."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="warning",
        runtime_env={"env_vars": {"PYTHONPATH": plugin_environment()["PYTHONPATH"]}},
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
