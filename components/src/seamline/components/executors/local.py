"""``local``: the whole run in this process, as one shard (seamline's default executor).

This is the run as it always was: one worker, built here with the application's
own monitors, reads the whole input, and the sink publishes as it always did. The
process's devices are still used together: the host compiles each step
data-parallel over every local device it has (see docs/scaling.md), so a machine
with several accelerators needs no other executor.
"""

from __future__ import annotations

import time
from typing import ClassVar

from seamline.contracts import ComponentConfig, ExecutionReport, Executor, Job


class LocalExecutorConfig(ComponentConfig):
    """The ``with:`` block of the ``local`` executor: nothing to set."""


class LocalExecutor(Executor[LocalExecutorConfig]):
    """Runs the job's one shard in this process."""

    name: ClassVar[str] = "local"
    contract_version: ClassVar[str] = "1.0"
    Config = LocalExecutorConfig
    is_default: ClassVar[bool] = True

    def execute(self, job: Job) -> ExecutionReport:
        started = time.perf_counter()
        tasks = job.plan(1)
        worker = job.worker()
        try:
            reports = tuple(worker.run(task) for task in tasks)
        finally:
            worker.close()
        return ExecutionReport(
            executor=self.name,
            shards=reports,
            workers=1,
            seconds=time.perf_counter() - started,
        )
