"""The application's monitors see a run's progress when its shards run elsewhere.

The executors here are the tests' own and run everything in this process, but as an
executor of other processes does (executor contract 1.2): workers from
``job.worker_factory()`` (without the application's monitors), each shard on a thread
of its own, and the driver asking each worker's ``progress()`` meanwhile and handing it
to ``job.progress``. The application's monitor (given to ``Pipeline.run``) must see the
counts grow before the run ends, and end on the summary's figures; a run whose worker
holds those monitors itself (``local``) must not show them the run twice.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from seamline.contracts import (
    BatchDone,
    ComponentConfig,
    Event,
    ExecutionReport,
    Executor,
    Job,
    Monitor,
    RunCounts,
    RunFinished,
    RunStarted,
    ShardProgress,
    ShardReport,
    ShardTask,
    ShardWorker,
)
from seamline.core.config import parse_pipeline
from seamline.core.pipeline import Pipeline
from seamline.core.registry import ComponentInfo, Registry
from tests.scaling.test_ray_executor import TEXTS, pipeline_text


class Recording(Monitor[ComponentConfig]):
    """An application's monitor: every event it is shown, with when it came."""

    name: ClassVar[str] = "recording"
    contract_version: ClassVar[str] = "1.6"

    def __init__(self) -> None:
        super().__init__(ComponentConfig())
        self.events: list[tuple[float, Event]] = []
        self.closed = False

    def observe(self, event: Event) -> None:
        self.events.append((time.monotonic(), event))

    def close(self) -> None:
        self.closed = True

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for _, event in self.events if isinstance(event, kind)]


class ForwardingConfig(ComponentConfig):
    shards: int = 2
    failed_try: bool = False
    """Report a try of shard 0 that got far and failed, before running it for good."""


class ForwardingExecutor(Executor[ForwardingConfig]):
    """Shards on threads of this process, their progress forwarded as a remote pool's is."""

    name: ClassVar[str] = "forwarding"
    contract_version: ClassVar[str] = "1.2"
    Config = ForwardingConfig

    def execute(self, job: Job) -> ExecutionReport:
        tasks = job.plan(self.config.shards)
        if self.config.failed_try:  # more than the shard has: its retry must replace it
            inflated = RunCounts(read=500, documents=500, examples=500, tokens=9_999, batches=99)
            job.progress(ShardProgress(tasks[0].shard, inflated))
        factory = job.worker_factory()
        workers = [factory() for _ in tasks]
        reports: dict[int, ShardReport] = {}
        threads = [
            threading.Thread(target=_run_into, args=(worker, task, reports))
            for worker, task in zip(workers, tasks, strict=True)
        ]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            for worker in workers:
                progress = worker.progress()
                if progress is not None:
                    job.progress(progress)
            time.sleep(0.01)
        for thread in threads:
            thread.join()
        for worker in workers:
            worker.close()
        done = tuple(reports[task.shard.index] for task in tasks)
        return ExecutionReport(self.name, done, len(workers), 0.0)


def _run_into(worker: ShardWorker, task: ShardTask, reports: dict[int, ShardReport]) -> None:
    reports[task.shard.index] = worker.run(task)


def registry_with(registry: Registry) -> Registry:
    info = ComponentInfo(
        "executor", "forwarding", f"{__name__}:ForwardingExecutor", "tests", "0", "ok", "",
        ForwardingExecutor, "1.2",
    )  # fmt: skip
    return Registry([*registry.entries(), info])


def run(registry: Registry, out: Path, executor: str, monitor: Monitor[Any]) -> Any:
    text = pipeline_text(out, executor=executor).replace(
        "{use: tiny}", "{use: tiny, with: {collate_seconds: 0.02}}"
    )
    resolved = parse_pipeline(text, str(out / "p.yaml"), registry_with(registry))
    return Pipeline(resolved, registry_with(registry)).run([monitor])


def assert_ends_on_the_summary(recording: Recording, summary: Any) -> None:
    """The last progress shown and the run's end are the summary's figures."""
    counts = summary.counts
    assert recording.of(BatchDone)[-1].documents == counts.read == len(TEXTS)
    (finished,) = recording.of(RunFinished)
    assert finished.ok
    assert (finished.documents, finished.failed_documents) == (
        counts.documents,
        counts.failed_documents,
    )
    assert (finished.examples, finished.tokens, finished.batches) == (
        counts.examples,
        counts.tokens,
        counts.batches,
    )
    assert finished.compilations == summary.compilations
    assert recording.closed


def test_the_applications_monitor_sees_the_shards_move_before_the_run_ends(
    scale_registry: Registry, tmp_path: Path
) -> None:
    recording = Recording()
    summary = run(scale_registry, tmp_path, "{use: forwarding, with: {shards: 2}}", recording)
    assert summary.shard_count == 2
    kinds = [type(event) for _, event in recording.events]
    assert kinds[0] is RunStarted
    assert kinds[-1] is RunFinished
    assert kinds.count(RunStarted) == 1  # one run, however many shards
    assert recording.of(RunStarted)[0].run_id == summary.run_id
    # The counts grew over several events, before the shards' reports came in.
    shown = [event.documents for event in recording.of(BatchDone)]
    during = [n for n in shown if 0 < n < len(TEXTS)]
    assert len(set(during)) >= 3, shown
    assert shown == sorted(shown)  # no try failed: the count never went back
    tokens = sum(event.tokens for event in recording.of(BatchDone))
    assert tokens == summary.counts.tokens
    assert_ends_on_the_summary(recording, summary)


def test_a_retried_shard_is_not_counted_twice(scale_registry: Registry, tmp_path: Path) -> None:
    recording = Recording()
    executor = "{use: forwarding, with: {shards: 2, failed_try: true}}"
    summary = run(scale_registry, tmp_path, executor, recording)
    shown = [event.documents for event in recording.of(BatchDone)]
    assert shown[0] == 500  # the failed try, as it was reported
    assert min(shown[1:]) < 500  # then the retry's own counts replaced it
    assert_ends_on_the_summary(recording, summary)


def test_a_worker_that_holds_the_monitors_is_not_shown_twice(
    scale_registry: Registry, tmp_path: Path
) -> None:
    recording = Recording()
    summary = run(scale_registry, tmp_path, "{use: local}", recording)
    assert len(recording.of(RunStarted)) == len(recording.of(RunFinished)) == 1
    # Every batch is the worker's own (a driver's summary of several has length 0).
    assert all(event.length > 0 for event in recording.of(BatchDone))
    assert len(recording.of(BatchDone)) == summary.counts.batches


def test_the_clis_progress_bar_counts_every_shard_to_the_end(
    scale_registry: Registry, tmp_path: Path
) -> None:
    from rich.console import Console

    from seamline.adapters.cli.render.progress import ProgressMonitor

    screen = io.StringIO()
    bar = ProgressMonitor(Console(file=screen, force_terminal=True, width=200))
    summary = run(scale_registry, tmp_path, "{use: forwarding, with: {shards: 3}}", bar)
    (task,) = bar.progress.tasks
    assert task.completed == summary.counts.read == len(TEXTS)  # set-aside ones included
    assert task.description == "done"
    assert not bar.progress.live.is_started, "the bar was left running after the run"
