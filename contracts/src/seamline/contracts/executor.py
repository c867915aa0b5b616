"""The executor seam: where a run's shards are computed, and the one summary of them.

A run can be split into disjoint shards of the loader's input (``Shard(index,
count)``). The *host* knows how to run one shard end to end — build the loader,
model, attention and sink from the pipeline, read the shard, write its outputs with
checkpoints — and how to publish the run once every shard is done. An *executor*
only decides where shards run: in this process (``local``), or on a pool of
workers in other processes or on other machines (``ray``). It talks to the host
through a :class:`Job`, and never needs to know what a pipeline contains.

The division of labour keeps the exactly-once promise in one place: the host
stages each shard's output and publishes the run only after the executor has
returned a report for every shard it was asked to run. An executor may run a
shard's task more than once (a worker died, a retry): a task is idempotent,
because a shard resumes from its own last commit and a shard already finished is
not redone.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import Shard
from seamline.contracts.versions import Kind


@dataclass(frozen=True, slots=True)
class ShardTask:
    """One shard of one run, as a worker receives it: plain data, so it crosses processes."""

    run_id: str
    shard: Shard
    resume: bool = False
    """Continue from the shard's last commit instead of starting it over."""
    trace_context: Mapping[str, str] = field(default_factory=dict)
    """The driver's trace context (W3C ``traceparent``...), so the shard's spans join the run's
    trace wherever it runs."""


@dataclass(frozen=True, slots=True)
class ShardReport:
    """What running one shard did. Counts are those of this task alone (a resumed shard's
    earlier work is not counted again)."""

    shard: Shard
    worker: str
    """Which process ran it (``host:pid``): shards of one worker share its compiled steps."""
    documents: int = 0
    failed_documents: int = 0
    examples: int = 0
    tokens: int = 0
    positions: int = 0
    batches: int = 0
    compilations: int = 0
    seconds: float = 0.0
    resumed_from: str | None = None
    """The cursor the shard continued after, or None if it read from its beginning."""
    finished_before: bool = False
    """The shard was already complete (an earlier run, or an earlier try of this task,
    finished it): nothing was redone."""
    first_output_seconds: float | None = None
    attention: Mapping[str, str] = field(default_factory=dict)
    """Shape signature → the attention that served it in this shard."""
    read: int = 0
    """Items the shard's loader yielded: ``documents + failed_documents + skipped_documents``."""
    skipped_documents: int = 0
    """Documents read but set aside by a rule (stage ``skip``)."""


@dataclass(frozen=True, slots=True)
class ExecutionReport:
    """What an executor returns: one report per task it was given, in shard order."""

    executor: str
    shards: tuple[ShardReport, ...]
    workers: int
    """How many workers (processes) ran shards."""
    seconds: float


class ShardWorker(abc.ABC):
    """Runs shards in the process it was built in, reusing what it built for every shard.

    Building a worker builds the pipeline's components and loads the model once;
    compiled steps are kept, so a worker that runs several shards compiles each shape
    once.
    """

    @abc.abstractmethod
    def run(self, task: ShardTask) -> ShardReport:
        """Run the task's shard to completion and finish its part of the output.

        Raises :class:`~seamline.contracts.errors.ShardFailed` naming the shard, the
        component and the reason when it cannot; a
        :class:`~seamline.contracts.errors.UserError` (bad input, missing weights...)
        is raised as it is.
        """

    def close(self) -> None:  # noqa: B027 - optional: a worker may hold nothing to release
        """Release the components (called once, when the executor is done with the worker)."""


WorkerFactory = Callable[[], ShardWorker]
"""A picklable zero-argument callable that builds a :class:`ShardWorker` in the process
that calls it: what an executor sends to a remote worker."""


class Job(abc.ABC):
    """One run of one pipeline, as the host hands it to an executor."""

    @property
    @abc.abstractmethod
    def pipeline(self) -> str:
        """The pipeline's name (for logs and the workers' names)."""

    @property
    @abc.abstractmethod
    def run_id(self) -> str:
        """The run's id; a resumed run keeps the id of the run it continues (known after
        :meth:`plan`)."""

    @abc.abstractmethod
    def plan(self, count: int) -> Sequence[ShardTask]:
        """Split the run into ``count`` shards (called once); the tasks still to run.

        On a fresh run that is every shard; on a resumed run, the shards an earlier
        run did not finish (a finished one is not redone). Raises a ``UserError`` when
        the run cannot be split so (the sink cannot stage parts, or a resumed run was
        split differently).
        """

    @abc.abstractmethod
    def worker(self) -> ShardWorker:
        """A worker in this process (with the application's own monitors, if any)."""

    @abc.abstractmethod
    def worker_factory(self) -> WorkerFactory:
        """A picklable factory of workers for other processes; it rebuilds the pipeline
        from its validated spec there."""

    def telemetry(self) -> Mapping[str, Any]:
        """The pipeline's ``telemetry`` settings as plain data, for a worker process that
        sets up its own exporters. The default is none."""
        return {}

    def where(self, field_name: str) -> str:
        """Where ``run.executor.with.<field_name>`` is set (``file:line:column``), for errors."""
        return f"run.executor.with.{field_name}"


ExecutorConfigT = TypeVar("ExecutorConfigT", bound=ComponentConfig)


class Executor(Component[ExecutorConfigT], abc.ABC):
    """Decides where a job's shards run; returns one report for all of them.

    An executor calls ``job.plan(count)`` once, runs every task it returns exactly
    as often as it takes to complete it (a retry resumes), and returns an
    :class:`ExecutionReport` with one :class:`ShardReport` per task. A shard that
    cannot complete ends the run: the executor raises the worker's
    :class:`~seamline.contracts.errors.ShardFailed` (or ``UserError``) and the host
    publishes nothing. Telemetry crosses processes in each task's
    ``trace_context``; an executor whose workers are other processes should set up
    their exporters from ``job.telemetry()``.
    """

    kind: ClassVar[Kind] = "executor"
    is_default: ClassVar[bool] = False
    """Whether this executor runs pipelines that name none (seamline's ``local`` does). The
    host never names an executor itself: it asks the installed ones which is the default."""

    @abc.abstractmethod
    def execute(self, job: Job) -> ExecutionReport:
        """Run the job's shards and report on every one of them."""


def merge_attention(reports: Sequence[ShardReport]) -> dict[str, str]:
    """Shape signature → attention over several shards' reports (the first one's word wins)."""
    merged: dict[str, str] = {}
    for report in reports:
        for signature, chosen in report.attention.items():
            merged.setdefault(signature, chosen)
    return merged
