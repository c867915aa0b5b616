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

Progress (executor contract 1.2): the application's own monitors (``extra_monitors``,
the CLI's progress bar) live with the driver. An executor whose workers are other
processes asks each busy worker how far its shard has got (:meth:`ShardWorker.progress`)
and hands the answer to the driver (:meth:`Job.progress`), which shows it to those
monitors while the run goes on. An executor of 1.0 or 1.1 still works: the driver
then learns the counts only from the final reports.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import DocumentError, Shard
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
class RunCounts:
    """What a run, a shard or a stretch of one did, in numbers that add up (``+``).

    One value serves every place that counts: a shard's report, the run's summary,
    and the commits that let a resumed shard know what its output held already. Every
    item a loader yields is accounted for: ``read == documents + failed_documents +
    skipped_documents`` (:attr:`reconciles`).
    """

    read: int = 0
    """Items the loader yielded (documents and error records)."""
    documents: int = 0
    """Documents whose outputs were written."""
    failed_documents: int = 0
    """Documents set aside as failed (dead-lettered to the sink's errors)."""
    skipped_documents: int = 0
    """Documents read but set aside by a rule (stage ``skip``)."""
    examples: int = 0
    """Outputs written: one per window of a document."""
    tokens: int = 0
    positions: int = 0
    """Positions the model computed (rows x length of every batch): ``tokens`` plus padding."""
    batches: int = 0

    def __add__(self, other: RunCounts) -> RunCounts:
        if not isinstance(other, RunCounts):
            return NotImplemented
        return RunCounts(*(getattr(self, n) + getattr(other, n) for n in _COUNT_NAMES))

    @property
    def reconciles(self) -> bool:
        """Whether every item read is accounted for: written, dead-lettered or skipped."""
        return self.read == self.documents + self.failed_documents + self.skipped_documents

    def reconciliation(self) -> str:
        """The line that accounts for every item read (``documents`` are those written)."""
        line = (
            f"read {self.read} = written {self.documents} + dead-lettered "
            f"{self.failed_documents} + skipped by rule {self.skipped_documents}"
        )
        return line if self.reconciles else f"{line} DOES NOT RECONCILE"


_COUNT_NAMES = tuple(f.name for f in fields(RunCounts))


Served = Mapping[str, str | list[str]]
"""Shape signature → the attention implementation that served its rows: one name, or the
sorted names of several when processes that wrote rows of one output (a resumed run and
the one it continues, two shards' workers) were served by different ones."""


@dataclass(frozen=True, slots=True)
class ShardReport:
    """What running one shard did.

    ``counts`` are this task's own work; ``committed_before`` is what the shard's
    output already held when the task began (an earlier run's or an earlier try's
    last commit, recovered from the sink), so ``published`` is what the shard's
    finished output holds. Since executor contract 1.1 the counts are one
    :class:`RunCounts` instead of a field each.
    """

    shard: Shard
    worker: str
    """Which process ran it (``host:pid``): shards of one worker share its compiled steps."""
    counts: RunCounts = RunCounts()
    committed_before: RunCounts | None = RunCounts()
    """What the shard's output held when this task began; None when that is unknown (a
    checkpoint written by a seamline that did not record it)."""
    compilations: int = 0
    seconds: float = 0.0
    resumed_from: str | None = None
    """The cursor the shard continued after, or None if it read from its beginning."""
    finished_before: bool = False
    """The shard was already complete (an earlier run, or an earlier try of this task,
    finished it): nothing was redone, and what its output holds is not known here."""
    first_output_seconds: float | None = None
    attention: Served = field(default_factory=dict)
    """Shape signature → the attention that served its rows in this shard's output: those of
    the task that was stopped and this one's, when it continued from a commit."""
    first_failure: DocumentError | None = None
    """The first document this task set aside as failed, if any: the driver quotes it when
    every document of the run failed and nothing is published. Set by the host's worker;
    an executor passes reports through as they are."""
    run_id: str | None = None
    """The run the shard's output belongs to, as the host's worker found it: a whole run
    resumed from an earlier process's commit keeps that run's id, which the driver adopts.
    None: the task's (reports from an older worker). An executor passes it through."""

    @property
    def published(self) -> RunCounts | None:
        """What the shard's output holds once finished; None when that is not known."""
        if self.finished_before or self.committed_before is None:
            return None
        return self.committed_before + self.counts


@dataclass(frozen=True, slots=True)
class ShardProgress:
    """How far one try of a shard has got, while it runs (executor contract 1.2).

    ``counts`` are this try's own work so far, counted as :attr:`ShardReport.counts`
    counts it (not what the shard's output held before the try began). A shard's later
    progress *replaces* its earlier one: a retried shard counts from its own start
    again, so the driver never adds the work of two tries of one shard together, and
    once every shard has reported, the counts add up to the run's summary.
    """

    shard: Shard
    counts: RunCounts


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

    def progress(self) -> ShardProgress | None:
        """How far the shard this worker is running has got; None when it runs none (1.2).

        Called by an executor from another thread than the one in :meth:`run` (a Ray
        actor's second concurrency slot, say), so it must not block nor wait for the
        shard: it returns the last counts the worker recorded. The default says nothing.
        """
        return None


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

    def progress(self, progress: ShardProgress) -> None:  # noqa: B027 - optional: may show none
        """Take a worker's progress on the driver, while the run goes on (executor contract 1.2).

        An executor whose workers run in other processes calls it, on the driver's
        thread that drives the run, with what :meth:`ShardWorker.progress` answered there
        (and may call it with a finished shard's ``ShardReport.counts``): the driver shows
        it to the application's monitors, which cannot see the workers. It must not be
        called for workers from :meth:`worker`: those report to those monitors
        themselves. Each call replaces the shard's last progress. The default ignores it.
        """

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
    their exporters from ``job.telemetry()``. Since executor contract 1.2 such an
    executor also forwards its workers' progress (``worker.progress()`` to
    ``job.progress(...)``) while they run, without holding up their work.
    """

    kind: ClassVar[Kind] = "executor"
    is_default: ClassVar[bool] = False
    """Whether this executor runs pipelines that name none (seamline's ``local`` does). The
    host never names an executor itself: it asks the installed ones which is the default."""

    @abc.abstractmethod
    def execute(self, job: Job) -> ExecutionReport:
        """Run the job's shards and report on every one of them."""


def union_served(*served: Served) -> dict[str, str | list[str]]:
    """Every implementation that served each shape, over ``served`` (processes, shards).

    Implementations agree within verification's tolerance, not bit for bit: an output whose
    rows of one shape were computed by two of them says so (a list), rather than naming
    the first, as a merge once did, and a resumed run named only its own process's."""
    names: dict[str, set[str]] = {}
    for mapping in served:
        for signature, chosen in mapping.items():
            found = names.setdefault(signature, set())
            found.update([chosen] if isinstance(chosen, str) else chosen)
    return {
        signature: next(iter(found)) if len(found) == 1 else sorted(found)
        for signature, found in names.items()
    }


def merge_attention(reports: Sequence[ShardReport]) -> dict[str, str | list[str]]:
    """Shape signature → attention over several shards' reports (:func:`union_served`)."""
    return union_served(*(report.attention for report in reports))
