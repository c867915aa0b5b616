"""``ExecutorContract``: every task run, each until it completes, once; failures stop the run.

The suite gives the executor a job of its own (:class:`ScriptedJob`), whose workers
do no real work: building one and running a task each leave a file in a directory,
so the suite can count what happened in whatever processes the executor used
(the files say which process), and a script makes chosen shards fail. The author
provides one fixture, ``executor``.

What is checked: the executor plans once and runs exactly the tasks ``plan``
returned, each once when nothing fails, and reports each once; a worker is built
once per process however many shards it runs; every task reaches its worker with
the job's trace context; a shard that fails for good raises
:class:`~seamline.contracts.errors.ShardFailed` naming that shard; a ``UserError``
reaches the caller as it was raised. An executor declaring contract 1.2 or later whose
workers are built from ``job.worker_factory()`` hands the job their progress while
they run (``job.progress``).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seamline.contracts.component import Component
from seamline.contracts.documents import Shard
from seamline.contracts.errors import ContractViolation, ShardFailed, UserError
from seamline.contracts.executor import (
    ExecutionReport,
    Executor,
    Job,
    RunCounts,
    ShardProgress,
    ShardReport,
    ShardTask,
    ShardWorker,
    WorkerFactory,
)
from seamline.contracts.testing._common import ComponentContract
from seamline.contracts.versions import Kind, parse_version

TRACE_CONTEXT = {"traceparent": "00-5eed5eed5eed5eed5eed5eed5eed5eed-00f067aa0ba902b7-01"}
"""What the suite's job propagates: every task must carry it to its worker."""


@dataclass(frozen=True)
class Script:
    """What the suite's workers do, shard by shard."""

    fail: Mapping[int, str] = field(default_factory=dict)
    """Shard index → the reason it fails with, on every try."""
    user_error: Mapping[int, str] = field(default_factory=dict)
    """Shard index → the message of a ``UserError`` it raises."""
    seconds: float = 0.0
    """How long each task takes (answering ``progress()`` meanwhile)."""


def _process() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _leave(directory: Path, kind: str, record: Mapping[str, Any]) -> None:
    (directory / kind).mkdir(parents=True, exist_ok=True)
    name = f"{uuid.uuid4().hex}.json"
    (directory / kind / name).write_text(json.dumps(dict(record)), encoding="utf-8")


def left(directory: Path, kind: str) -> list[dict[str, Any]]:
    """The records workers left of ``kind`` (``builds`` or ``runs``)."""
    folder = directory / kind
    if not folder.is_dir():
        return []
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.iterdir())]


class ScriptedWorker(ShardWorker):
    """Leaves a record of each build and run; fails as the script says."""

    def __init__(self, directory: Path, script: Script) -> None:
        self.directory = directory
        self.script = script
        self._running: ShardTask | None = None
        _leave(directory, "builds", {"process": _process()})

    def progress(self) -> ShardProgress | None:
        task = self._running
        return None if task is None else ShardProgress(task.shard, RunCounts(read=1))

    def run(self, task: ShardTask) -> ShardReport:
        self._running = task
        try:
            return self._run(task)
        finally:
            self._running = None

    def _run(self, task: ShardTask) -> ShardReport:
        time.sleep(self.script.seconds)
        index = task.shard.index
        _leave(
            self.directory,
            "runs",
            {
                "process": _process(),
                "shard": [index, task.shard.count],
                "run_id": task.run_id,
                "trace_context": dict(task.trace_context),
            },
        )
        if index in self.script.user_error:
            raise UserError(self.script.user_error[index])
        if index in self.script.fail:
            raise ShardFailed(index, task.shard.count, "model 'scripted'", self.script.fail[index])
        return ShardReport(task.shard, _process(), RunCounts(documents=index + 1))


@dataclass(frozen=True)
class ScriptedFactory:
    """Builds a :class:`ScriptedWorker` wherever it is called (picklable: plain data)."""

    directory: str
    script: Script

    def __call__(self) -> ShardWorker:
        return ScriptedWorker(Path(self.directory), self.script)


class ScriptedJob(Job):
    """A job whose tasks do nothing but leave records; ``finished`` shards are not planned."""

    def __init__(
        self, directory: Path, script: Script | None = None, finished: Sequence[int] = ()
    ) -> None:
        self.directory = directory
        self.script = script or Script()
        self.finished = set(finished)
        self.plans: list[int] = []
        self.tasks: list[ShardTask] = []
        self.progressed: list[ShardProgress] = []
        self.in_process = False
        """Whether the executor asked for a worker in this process (it needs forward nothing)."""
        self._lock = threading.Lock()

    def progress(self, progress: ShardProgress) -> None:
        with self._lock:
            self.progressed.append(progress)

    @property
    def pipeline(self) -> str:
        return "conformance"

    @property
    def run_id(self) -> str:
        return "conformance-run"

    def plan(self, count: int) -> Sequence[ShardTask]:
        self.plans.append(count)
        if len(self.plans) > 1:
            raise ContractViolation(f"plan() called {len(self.plans)} times; once is the contract")
        self.tasks = [
            ShardTask(self.run_id, Shard(index, count), True, TRACE_CONTEXT)
            for index in range(count)
            if index not in self.finished
        ]
        return self.tasks

    def worker(self) -> ShardWorker:
        self.in_process = True
        return ScriptedWorker(self.directory, self.script)

    def worker_factory(self) -> WorkerFactory:
        return ScriptedFactory(str(self.directory), self.script)

    def where(self, field_name: str) -> str:
        return f"conformance.yaml:1:1 (run.executor.with.{field_name})"


class ExecutorContract(ComponentContract):
    """Subclass it and provide the ``executor`` fixture."""

    kind: ClassVar[Kind] = "executor"

    @pytest.fixture
    def executor(self) -> Executor[Any]:
        raise NotImplementedError("provide an 'executor' fixture returning your Executor")

    @pytest.fixture
    def component(self, executor: Executor[Any]) -> Component[Any]:
        return executor

    @staticmethod
    def execute(executor: Executor[Any], job: ScriptedJob) -> ExecutionReport:
        try:
            return executor.execute(job)
        finally:
            executor.close()

    # -- the checks ------------------------------------------------------------------------

    def test_runs_every_planned_task_once(self, executor: Executor[Any], tmp_path: Path) -> None:
        job = ScriptedJob(tmp_path)
        report = self.execute(executor, job)
        assert len(job.plans) == 1, f"executor {executor.name!r} never called job.plan()"
        assert job.plans[0] >= 1, f"executor {executor.name!r} planned {job.plans[0]} shards"
        wanted = sorted(task.shard.index for task in job.tasks)
        ran = sorted(run["shard"][0] for run in left(tmp_path, "runs"))
        assert ran == wanted, (
            f"executor {executor.name!r} ran shards {ran}; the plan had {wanted} (each exactly "
            "once when nothing fails)"
        )
        reported = sorted(r.shard.index for r in report.shards)
        assert reported == wanted, (
            f"executor {executor.name!r} reported shards {reported} for tasks {wanted}"
        )
        assert report.executor == executor.name, (
            f"executor {executor.name!r}'s report names executor {report.executor!r}"
        )
        counts = {run["shard"][1] for run in left(tmp_path, "runs")}
        assert counts == {job.plans[0]}, "tasks reached workers with another shard count"

    def test_runs_only_what_the_plan_returns(self, executor: Executor[Any], tmp_path: Path) -> None:
        job = ScriptedJob(tmp_path, finished=[0])
        report = self.execute(executor, job)
        ran = sorted(run["shard"][0] for run in left(tmp_path, "runs"))
        assert 0 not in ran, (
            f"executor {executor.name!r} ran shard 0, which the plan left out (finished by "
            "an earlier run: redoing it is wasted work)"
        )
        assert ran == sorted(task.shard.index for task in job.tasks)
        assert sorted(r.shard.index for r in report.shards) == ran

    def test_builds_a_worker_once_per_process(
        self, executor: Executor[Any], tmp_path: Path
    ) -> None:
        self.execute(executor, ScriptedJob(tmp_path))
        builds = [build["process"] for build in left(tmp_path, "builds")]
        repeated = sorted({p for p in builds if builds.count(p) > 1})
        assert not repeated, (
            f"executor {executor.name!r} built the pipeline more than once in {repeated}: a "
            "worker loads the model and compiles once, then runs shard after shard"
        )
        ran_in = {run["process"] for run in left(tmp_path, "runs")}
        assert ran_in <= set(builds), "a task ran in a process that built no worker"

    def test_every_task_carries_the_trace_context(
        self, executor: Executor[Any], tmp_path: Path
    ) -> None:
        self.execute(executor, ScriptedJob(tmp_path))
        contexts = [run["trace_context"] for run in left(tmp_path, "runs")]
        assert contexts, f"executor {executor.name!r} ran nothing"
        assert all(context == TRACE_CONTEXT for context in contexts), (
            f"executor {executor.name!r}: tasks reached their workers with trace contexts "
            f"{contexts}, not the job's {TRACE_CONTEXT}: spans would leave the run's trace"
        )

    def test_a_failing_shard_stops_the_run_naming_it(
        self, executor: Executor[Any], tmp_path: Path
    ) -> None:
        script = Script(fail={0: "RuntimeError: scripted failure"})
        with pytest.raises(ShardFailed) as caught:
            self.execute(executor, ScriptedJob(tmp_path, script))
        failure = caught.value
        assert failure.index == 0, f"the failure names shard {failure.index}, not 0"
        assert "scripted failure" in failure.reason, failure.reason
        assert failure.component == "model 'scripted'", failure.component

    def test_a_user_error_reaches_the_caller(self, executor: Executor[Any], tmp_path: Path) -> None:
        script = Script(user_error={0: "weights missing: fix the path"})
        with pytest.raises(UserError, match="weights missing: fix the path"):
            self.execute(executor, ScriptedJob(tmp_path, script))

    def test_nothing_to_run(self, executor: Executor[Any], tmp_path: Path) -> None:
        class Finished(ScriptedJob):
            def plan(self, count: int) -> Sequence[ShardTask]:
                super().plan(count)
                self.tasks = []
                return self.tasks

        report = self.execute(executor, Finished(tmp_path))
        assert report.shards == (), "shards were reported though the plan had none"
        assert left(tmp_path, "runs") == [], "tasks ran though the plan had none"

    def test_forwards_progress_while_shards_run(
        self, executor: Executor[Any], tmp_path: Path
    ) -> None:
        if parse_version(executor.contract_version) < (1, 2):
            pytest.skip("executor contract 1.2 (progress) is not declared")
        job = ScriptedJob(tmp_path, Script(seconds=PROGRESS_TASK_SECONDS))
        self.execute(executor, job)
        if job.in_process:
            pytest.skip("the workers ran in this process: the job's monitors see them")
        planned = {task.shard for task in job.tasks}
        running = [
            p for p in job.progressed if p.shard in planned and p.counts == RunCounts(read=1)
        ]
        assert running, (
            f"executor {executor.name!r} declares executor contract "
            f"{executor.contract_version} but handed the job no progress from a worker during "
            f"tasks of {PROGRESS_TASK_SECONDS:g} s: ask each busy worker's progress() and "
            "pass it to job.progress(), without waiting for the task"
        )


PROGRESS_TASK_SECONDS = 3.0
"""How long each task takes in the progress check: several of a progress bar's ticks."""
