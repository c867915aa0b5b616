"""A sharded run that stops on purpose cancels its pending Ray tasks before killing actors.

The actors are killed when the run stops (SIGTERM, a ``UserError`` in a worker, a shard
that failed for good). A task still pending on a killed actor is one Ray may retry
(``max_task_retries``), and Ray's raylet then printed ``Task ShardActor.run failed. There
are 3 retries remaining, so the task will be retried ...`` after seamline's own
``interrupted (SIGTERM)`` line; a cancelled task is not retried, and Ray says nothing.
With a fake ``ray`` (no cluster): which tasks ``_drive`` leaves cancelled.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from seamline.adapters.executors.ray_actors import RayExecutor, RayExecutorConfig
from seamline.contracts import Shard, ShardTask, UserError


class TaskError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class FakeRay:
    """Tasks that never finish, unless ``fails`` names one (a worker's ``UserError``);
    ``interrupt``: the driver's wait is interrupted (SIGTERM, as the CLI raises it)."""

    exceptions = SimpleNamespace(RayTaskError=TaskError, RayActorError=RuntimeError)

    def __init__(self, *, interrupt: bool = False, fails: int | None = None) -> None:
        self.interrupt = interrupt
        self.fails = fails
        self.runs: list[str] = []
        self.cancelled: list[str] = []

    def wait(self, refs: list[str], num_returns: int, timeout: float) -> tuple[list[str], list]:
        if self.interrupt:
            raise KeyboardInterrupt
        failed = [ref for ref in refs if ref == f"run-{self.fails}"]
        return failed, [ref for ref in refs if ref not in failed]

    def get(self, ref: str) -> Any:
        raise TaskError(UserError(f"{ref}: the loader's root does not exist"))

    def cancel(self, ref: str) -> None:
        self.cancelled.append(ref)


class FakeActor:
    def __init__(self, ray: FakeRay) -> None:
        self.run = SimpleNamespace(remote=self._run)
        self.progress = SimpleNamespace(remote=lambda: "question")
        self.ray = ray

    def _run(self, task: ShardTask) -> str:
        ref = f"run-{task.shard.index}"
        self.ray.runs.append(ref)
        return ref


def drive(ray: FakeRay) -> None:
    tasks = [ShardTask("r", Shard(i, 2), True, {}) for i in range(2)]
    actors = [FakeActor(ray), FakeActor(ray)]
    RayExecutor(RayExecutorConfig())._drive(ray, actors, tasks, job=None)  # type: ignore[arg-type]


def test_a_sigterm_cancels_every_running_task() -> None:
    ray = FakeRay(interrupt=True)
    with pytest.raises(KeyboardInterrupt):
        drive(ray)
    assert sorted(ray.runs) == ["run-0", "run-1"]
    assert sorted(ray.cancelled) == ["run-0", "run-1"]


def test_a_user_error_in_one_shard_cancels_the_others() -> None:
    ray = FakeRay(fails=1)
    with pytest.raises(UserError, match="run-1: the loader's root does not exist"):
        drive(ray)
    assert ray.cancelled == ["run-0"]
