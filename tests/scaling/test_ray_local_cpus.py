"""A Ray the run starts on this machine gets the CPUs the process may use, not the host's.

Under ``taskset -c 0`` on a 2-CPU machine Ray counted ``CPU: 2`` and ran 2 actors (about
510 MB each) on the one CPU, without a word, while the run's XLA threads and the tuning
key followed the affinity. ``ray.init`` now gets ``num_cpus`` (then the pool is cut to
fit, with the usual warning); a cluster the run joins is unchanged. With a fake ``ray``:
the arguments ``ray.init`` is given, no cluster started.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from seamline.adapters.executors import ray_actors
from seamline.adapters.executors.ray_actors import RayExecutor, RayExecutorConfig


class FakeRay:
    def __init__(self) -> None:
        self.inits: list[dict[str, Any]] = []

    def is_initialized(self) -> bool:
        return False

    def init(self, **arguments: Any) -> Any:
        self.inits.append(arguments)
        return SimpleNamespace(address_info={"session_dir": "/nonexistent/session"})


@pytest.fixture
def one_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process may run on CPU 0 only (``taskset -c 0``); Ray would count 2."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(ray_actors, "_ray_cpu_count", lambda: 2, raising=False)
    monkeypatch.setattr(ray_actors.RayReaper, "start", lambda session: None)
    monkeypatch.setattr(ray_actors, "_check_reachable", lambda address, job: None)
    monkeypatch.delenv("RAY_OVERRIDE_RESOURCES", raising=False)


def _init(address: str | None = None) -> dict[str, Any]:
    ray = FakeRay()
    RayExecutor(RayExecutorConfig(address=address))._connect(ray, job=None)  # type: ignore[arg-type]
    (arguments,) = ray.inits
    return arguments


@pytest.mark.usefixtures("one_of_two")
def test_a_ray_started_here_gets_the_cpus_this_process_may_use() -> None:
    arguments = _init()
    assert arguments["address"] == "local"
    assert arguments["num_cpus"] == 1


@pytest.mark.usefixtures("one_of_two")
@pytest.mark.parametrize("address", ["auto", "10.0.0.5:6379", "ray://10.0.0.5:10001"])
def test_a_cluster_joined_is_given_no_cpus(address: str) -> None:
    arguments = _init(address)
    assert arguments["address"] == address
    assert "num_cpus" not in arguments


@pytest.mark.usefixtures("one_of_two")
def test_the_users_cpu_override_is_left_to_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_OVERRIDE_RESOURCES", '{"CPU": 4}')
    assert "num_cpus" not in _init()


@pytest.mark.usefixtures("one_of_two")
def test_a_quota_lower_than_the_affinity_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """``docker run --cpus=1`` on 4 usable CPUs: Ray's count (the quota) is not raised."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(ray_actors, "_ray_cpu_count", lambda: 1, raising=False)
    assert _init()["num_cpus"] == 1


@pytest.mark.usefixtures("one_of_two")
def test_without_rays_count_the_affinity_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_actors, "_ray_cpu_count", lambda: None, raising=False)
    assert _init()["num_cpus"] == 1


def test_rays_own_count_is_read() -> None:
    """Ray's helper is not public: this says when a Ray upgrade moves it."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    counted = ray_actors._ray_cpu_count()
    assert counted is not None
    assert counted >= 1
