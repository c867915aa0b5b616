"""The host's side of the executor seam: one run, split into shards, published once.

:class:`PipelineJob` is what an executor receives. It turns the executor's choice of
a shard count into tasks, and keeps the exactly-once promise that no executor has
to know about:

- **one shard** (``local``): the task writes the output through the sink as
  configured, which publishes it when the task succeeds — the run as it always was,
  ``--resume`` included (a resumed run keeps the id of the run it continues: its commit
  carries it, and the worker's report hands it to :meth:`publish`);
- **several shards**: the sink *stages* (sink contract 1.3). The driver opens a
  staging area for the run (:meth:`plan`); every shard writes its own part there
  with the sink's commits; :meth:`publish` writes the one manifest only after the
  executor has reported every shard, and checks that it did. A resumed run
  continues the staged run it finds — same run id, same shard count — and plans
  only the shards whose part is not finished.

Each call of the sink here (``staged_run``, ``begin_parts``, ``publish_parts``) goes
through a :class:`~seamline.core.seams.Seam`, like every component call: its span
(``seamline.sink.<operation>``, with the sink's attributes, the run id and the shard
count), and an exception leaving it names the sink (``failed_at``). The driver runs none
of the pipeline's monitors (they live with the workers), so these seams report to spans
and logs only.

The application's own monitors (``extra_monitors``) are given to a worker in this process
(:meth:`PipelineJob.worker`); for workers elsewhere, the job shows them what the
executor forwards (:meth:`PipelineJob.progress`, executor contract 1.2) and, at the end,
the shards' reports (:mod:`seamline.core.driver_progress`).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, cast

from seamline.contracts import (
    ContractViolation,
    ExecutionReport,
    Job,
    Loader,
    MonitorLike,
    ResumeRefused,
    RunCounts,
    RunStarted,
    Shard,
    ShardProgress,
    ShardTask,
    ShardWorker,
    Sink,
    UserError,
    WorkerFactory,
)
from seamline.contracts.errors import RESTART, RESUME
from seamline.contracts.executor import merge_attention
from seamline.contracts.logs import get_logger
from seamline.core.before_publishing import check_something_embedded
from seamline.core.config import ResolvedPipeline
from seamline.core.driver_progress import DriverProgress
from seamline.core.fingerprint import resolved_inputs
from seamline.core.input_size import whole_input_size
from seamline.core.monitor_hub import MonitorHub
from seamline.core.orchestrator import run_manifest, uses
from seamline.core.pinning import KeptModel
from seamline.core.propagators import inject
from seamline.core.provenance import attention_served
from seamline.core.published import AfterPublishing, after_publishing
from seamline.core.registry import Registry
from seamline.core.seams import Seam
from seamline.core.telemetry import SHARD_COUNT
from seamline.core.worker import PipelineWorker, RemoteWorkerFactory

log = get_logger("seamline.core")


_NOT_PUBLISHED = (
    "Nothing was published; what the shards committed is kept: fix the executor (or choose "
    f"another), then run again with {RESUME} to go on from it"
)
"""What a run whose executor broke its contract leaves, and how to go on."""


class PipelineJob(Job):
    """One run of a resolved pipeline, for an executor to place."""

    def __init__(
        self,
        pipeline: ResolvedPipeline,
        registry: Registry,
        extra_monitors: Sequence[MonitorLike] = (),
        *,
        resume: bool = False,
    ) -> None:
        self.resolved = pipeline
        self.registry = registry
        self.extra_monitors = tuple(extra_monitors)
        self.resume = resume
        self._run_id = uuid.uuid4().hex[:12]
        self.count: int | None = None
        self.tasks: tuple[ShardTask, ...] = ()
        self.finished_before: frozenset[int] = frozenset()
        self.trace_context: dict[str, str] = {}
        """The run's span, as the tasks carry it: every shard's parent. Empty: the span
        current when the executor plans."""
        self._monitors = MonitorHub(())
        """None at the driver: its seams report to spans and logs (see the module)."""
        self._held = contextlib.ExitStack()
        """A staged run's hold on its destination (sink contract 1.6), until :meth:`close`."""
        self._progress = DriverProgress(self.extra_monitors, self._run_started)
        self._published = False
        self._inputs: dict[str, Any] | None = None
        """The run's ``inputs``, taken once (:meth:`_staging_manifest`)."""
        self.kept = KeptModel()
        """The model the driver built to pin it, for a worker of this process."""

    @property
    def pipeline(self) -> str:
        return self.resolved.spec.pipeline

    @property
    def run_id(self) -> str:
        return self._run_id

    def where(self, field_name: str) -> str:
        return self.resolved.where(("run", "executor", "with", field_name))

    def _executor_place(self) -> str:
        return self.resolved.where(("run", "executor"))

    def telemetry(self) -> Mapping[str, Any]:
        return self.resolved.spec.telemetry.model_dump(mode="json", exclude_none=True)

    def worker(self) -> ShardWorker:
        self._progress.muted = True  # the monitors see this worker's own events
        model = self.kept.take(self.resolved)  # the driver's: built once in this process
        return PipelineWorker(self.resolved, self.registry, self.extra_monitors, model=model)

    def worker_factory(self) -> WorkerFactory:
        self.kept.close()  # workers elsewhere build their own: none is held while they run
        return RemoteWorkerFactory.of(self.resolved, self.registry)

    def progress(self, progress: ShardProgress) -> None:
        self._progress.update(progress)

    def _run_started(self) -> RunStarted:
        """The driver's ``RunStarted``: the whole input's size on a fresh run, as a worker's."""
        spec = self.resolved.spec
        expected = None if self.resume else self._input_size()
        return RunStarted(self.run_id, spec.pipeline, uses(spec), expected)

    def _input_size(self) -> int | None:
        """The whole input's items, as a fresh loader here says (for progress only: a loader
        that cannot be built here leaves it unknown, and the run goes on)."""
        choice = self.resolved.loader
        try:
            created = self.registry.create(choice.kind, choice.name, choice.config)
        except Exception as err:
            log.warning("the loader could not count its input here", error=repr(err))
            return None
        loader = cast(Loader[Any], created)
        try:
            return whole_input_size(loader, self.registry.info_of(loader), self._hidden())
        finally:
            loader.close()

    # -- planning --------------------------------------------------------------------------

    def plan(self, count: int) -> Sequence[ShardTask]:
        if self.count is not None:
            raise ContractViolation(
                f"executor planned run {self.run_id} twice ({self.count} then {count} "
                f"shards); it must call job.plan once. {_NOT_PUBLISHED}"
            )
        if count < 1:
            raise ContractViolation(f"executor asked for {count} shards; a run has at least one")
        self.count = count
        carrier = dict(self.trace_context)
        if not carrier:
            inject(carrier)  # the driver's current span
        if count == 1:
            self._refuse_staged_run_on_resume()
            pending = [Shard(0, 1)]
            resume = self.resume
        else:
            pending = self._stage(count)
            resume = True
        self.tasks = tuple(ShardTask(self.run_id, shard, resume, carrier) for shard in pending)
        return self.tasks

    def _stage(self, count: int) -> list[Shard]:
        """Open (or, resuming, find) the run's staging area; the shards still to run."""
        sink, seam = self._sink()
        if not sink.stageable:
            raise UserError(
                f"{self._executor_place()}: the executor splits this run into {count} shards, "
                f"but sink {sink.name!r} cannot stage parts (it does not implement sink "
                "contract 1.3's staging); use a sink that does (jsonl, npy, parquet, lancedb) "
                "or the local executor"
            )
        self._no_whole_run(count)
        self._hold(sink, seam)
        try:
            return self._open_staging(sink, seam, count)
        except BaseException:
            self.close()  # the run ends here: nobody else is kept out of it
            raise

    def _open_staging(self, sink: Sink[Any], seam: Seam, count: int) -> list[Shard]:
        """Find the staged run to resume, or begin one: the shards still to run."""
        if self.resume:
            with seam.call("staged_run", self._attributes()):
                staged = sink.staged_run(self._staging_manifest())
            if staged is not None:
                if staged.count != count:
                    raise ResumeRefused(
                        f"{self._executor_place()}: cannot resume: the interrupted run "
                        f"{staged.run_id} was split into {staged.count} shards, this executor "
                        f"asks for {count}; resume with the same executor settings, or run "
                        f"again with {RESTART} to start over"
                    )
                self._run_id = staged.run_id
                self.finished_before = staged.finished
                log.info(
                    "resuming a staged run",
                    run=staged.run_id,
                    shards=count,
                    finished=sorted(staged.finished),
                )
                return [Shard(i, count) for i in range(count) if i not in staged.finished]
            log.warning(  # as an unsharded run says it (orchestrator)
                "resume: no staged run to resume from; starting from the beginning",
                sink=sink.name,
            )
        with seam.call("begin_parts", self._attributes(count)):
            sink.begin_parts(self.run_id, count, self._staging_manifest())
        return [Shard(i, count) for i in range(count)]

    def _no_whole_run(self, count: int) -> None:
        """Leave nothing of an interrupted whole (one-shard) run at a staged run's destination:
        refuse to resume it, else discard it, through the sink's own ``recover``, ``start``
        and ``close`` (each takes the destination's lock: this runs before :meth:`_hold`).

        A staged run's parts do not continue a whole run's commit, and publishing them
        leaves its checkpoint and partial files: a ``--resume`` on ``ray`` after a ``local``
        run was killed recomputed every document, then left megabytes of
        ``.emb.jsonl.partial.*.tmp`` beside the published output. So a resume that finds a
        whole run's commit is refused, naming the checkpoint, as the other
        direction is (:meth:`_refuse_staged_run_on_resume`); ``--restart`` discards it. (A
        whole run's commit beside a staged run is refused too: which of them the user
        means to continue is not for the driver to guess.)
        """
        if self.resume:
            sink, seam = self._sink()
            with seam.call("recover", self._attributes()):
                committed = sink.recover(self._staging_manifest())
            try:
                if committed is not None:
                    with seam.call("committed_records", self._attributes()):
                        found = sink.committed_records()
                    where = (
                        f"the checkpoint {found.checkpoint!r}"
                        if found
                        else f"the {sink.name} sink's checkpoint"
                    )
                    raise ResumeRefused(
                        f"{self._executor_place()}: cannot resume from {where}: "
                        f"the interrupted run ran as one shard, and this executor splits the "
                        f"run into {count}; resume with the executor settings it was started "
                        f"with (local, or shards: 1), or run again with {RESTART} to start "
                        "over"
                    )
            finally:
                sink.close(complete=False)  # keeps a commit as it was
        sink, seam = self._sink()
        with seam.call("start", self._attributes()):
            sink.start(self._staging_manifest())  # forgets an interrupted whole run's files
        with seam.call("close", self._attributes()):
            sink.close(complete=False)  # nothing written: nothing kept, nothing published

    def _hold(self, sink: Sink[Any], seam: Seam) -> None:
        """Hold the destination until :meth:`close`, before the staging area is read.

        A whole run's sink holds it from ``start`` to ``close``; a staged run's parts lock
        only themselves, so without the driver's hold a second run could stage into the
        same destination (each publishing over the other) or a whole run replace it, and
        remove the staging area, while the shards write there.
        """
        with seam.call("hold_destination", self._attributes()):
            self._held.enter_context(sink.hold_destination())

    def close(self) -> None:
        """Let go of what the driver holds (a staged run's destination): after publishing,
        or once the run has failed. The application's monitors hear the run finish."""
        try:
            self._progress.finish(self._published)
        finally:
            self.kept.close()
            self._held.close()

    def _staging_manifest(self) -> dict[str, Any]:
        """The run's manifest with its ``inputs`` (the pipeline's section hashes and the
        input's fingerprint), as each shard's sink records them: a staged run keeps them,
        so that a resume after the corpus changed is refused even where every shard left
        finished has no checkpoint of its own to refuse it. Published with the parts too, as
        a local run publishes them (a sharded run's manifest had none). Taken once, when the
        run starts, as a local run takes them."""
        resolved = self.resolved
        if self._inputs is None:
            self._inputs = resolved_inputs(resolved, resolved.loader.config)
        return {**run_manifest(resolved, self.run_id), "inputs": self._inputs}

    def _refuse_staged_run_on_resume(self) -> None:
        if not self.resume:
            return
        sink, seam = self._sink()
        if not sink.stageable:
            return
        with seam.call("staged_run", self._attributes()):
            staged = sink.staged_run(self._staging_manifest())
        if staged is not None:
            raise ResumeRefused(
                f"{self._executor_place()}: cannot resume: the interrupted run {staged.run_id} "
                f"was split into {staged.count} shards, and this executor runs one; resume with "
                f"the executor settings it was started with, or run again with {RESTART} to "
                "start over"
            )

    # -- the end ---------------------------------------------------------------------------

    def publish(self, report: ExecutionReport) -> None:
        """Publish a staged run's parts (if the shards embedded anything:
        :mod:`seamline.core.before_publishing`), from a report the caller has checked
        (:func:`check_report`, inside the executor's seam, so a broken one names it)."""
        self._progress.settle(report)
        kept = report.shards[0].run_id if self.count == 1 and report.shards else None
        if kept is not None:  # a whole run resumed: the run it continues, by its commit
            self._run_id = kept
        if self.count is not None and self.count > 1:  # None: check_report refused it
            first = next((s.first_failure for s in report.shards if s.first_failure), None)
            check_something_embedded(_published(report), first)
            served = attention_served(merge_attention(report.shards))
            manifest = {**self._staging_manifest(), "attention_served": served}
            sink, seam = self._sink()
            with seam.call("publish_parts", self._attributes(self.count)):
                sink.publish_parts(self.run_id, self.count, manifest)
        self._published = True

    def after_publishing(self) -> AfterPublishing:
        """What the sink measured publishing this run changed (lancedb's sync counts), and
        what it left undone (:func:`~seamline.core.published.after_publishing`). Asked after
        the run, of a fresh sink, which reads them from what it published."""
        sink, seam = self._sink()
        return after_publishing(sink, seam, self.run_id)

    def _sink(self) -> tuple[Sink[Any], Seam]:
        """A fresh instance of the pipeline's sink, and the seam its calls cross."""
        choice = self.resolved.sink
        sink = cast(Sink[Any], self.registry.create(choice.kind, choice.name, choice.config))
        return sink, Seam(sink, self.registry.info_of(sink), self._monitors, self._hidden())

    def _hidden(self) -> dict[str, str]:
        """What the driver's seams' span attributes show instead of values that may not
        leave the machine (:meth:`ResolvedPipeline.span_hidden`)."""
        return self.resolved.span_hidden(self.registry.trust.network_variables)

    def _attributes(self, count: int | None = None) -> dict[str, str | int]:
        """The run's span attributes of a driver-side sink call (and the shard count)."""
        attributes: dict[str, str | int] = {"seamline.run_id": self.run_id}
        if count is not None:
            attributes[SHARD_COUNT] = count
        return attributes


def check_report(report: ExecutionReport, tasks: Sequence[ShardTask], count: int | None) -> None:
    """Refuse a report that breaks the executor contract (a task missing or twice, no
    plan). The driver calls it inside the executor's seam, so that the failure names the
    executor and its distribution, in one line, like a model's."""
    wanted = [task.shard for task in tasks]
    got = [shard_report.shard for shard_report in report.shards]
    if sorted(got, key=_key) != sorted(wanted, key=_key):
        raise ContractViolation(
            f"executor {report.executor!r} reported shards "
            f"{sorted(s.index for s in got)} for tasks {sorted(s.index for s in wanted)}; "
            f"it must report each task it was given exactly once. {_NOT_PUBLISHED}"
        )
    if count is None:
        raise ContractViolation(
            f"executor {report.executor!r} never planned the run (job.plan); nothing was "
            "published or committed: fix the executor (or choose another), then run again"
        )


def _published(report: ExecutionReport) -> RunCounts | None:
    """What the shards' outputs hold together, once published; None when one's is unknown."""
    total = RunCounts()
    for shard_report in report.shards:
        held = shard_report.published
        if held is None:
            return None
        total += held
    return total


def _key(shard: Shard) -> tuple[int, int]:
    return (shard.count, shard.index)
