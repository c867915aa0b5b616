"""How the conformance suite builds the ``ray`` executor: two actors of one CPU each.

It joins the Ray this process has started (seamline's tests start one per session),
else starts one on this machine for each check.
"""

from __future__ import annotations

import pytest

from seamline.adapters.executors.ray_actors import RayExecutor
from seamline.contracts.testing import ExecutorContract


class RayExecutorConformance(ExecutorContract):
    @pytest.fixture
    def executor(self) -> RayExecutor:
        pytest.importorskip("ray", reason="the ray extra is not installed")
        return RayExecutor(RayExecutor.Config(actors=2, cpus_per_actor=1, retries=0))
