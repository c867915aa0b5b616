"""A worker: runs shards of a run in its own process, building the pipeline once for all.

An executor gets workers from the job: one in the driver's own process
(:class:`PipelineWorker`, with the application's monitors), or, for other processes
and machines, a :class:`RemoteWorkerFactory` — plain, picklable data (the validated
spec, the working directory) from which the worker process rebuilds the very
pipeline the driver validated. Either way one :class:`~seamline.core.orchestrator.
Orchestrator` runs every shard the worker is given, so the model is loaded and each
shape compiled once per worker, not once per shard.

A shard of a run split in several writes its part through the sink's ``part()`` and
always *recovers* it: a task Ray retries after its worker died continues from the
part's last commit instead of writing again what was committed, and a part already
finished is reported as such and not redone. ``part()`` and ``finished()`` cross a
seam like every other sink call. A shard that fails (there too) becomes
:class:`~seamline.contracts.errors.ShardFailed` naming the component whose call it
left (the seams record it); a ``UserError`` stays what it is.

A worker built for another process records how far its current shard has got
(:mod:`seamline.core.progress_recorder`), for its executor to ask with
:meth:`PipelineWorker.progress` and hand to the driver's monitors (executor contract 1.2).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry.context import Context

from seamline.contracts import (
    Model,
    MonitorLike,
    ShardFailed,
    ShardProgress,
    ShardReport,
    ShardTask,
    ShardWorker,
    Sink,
    UserError,
)
from seamline.contracts.errors import (
    COMMITTED_DOCUMENTS,
    FIRST_COMMIT_UNDER_WAY,
    NOTHING_COMMITTED,
)
from seamline.contracts.logs import get_logger
from seamline.core.config import ResolvedPipeline, pipeline_trust, resolve_located
from seamline.core.config.located import Path as DataPath
from seamline.core.config.located import parse_located
from seamline.core.orchestrator import Orchestrator, RunSummary
from seamline.core.precision.decision import PrecisionDecision
from seamline.core.progress_recorder import ProgressRecorder
from seamline.core.propagators import extract
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.seams import Seam, failed_at, one_line
from seamline.core.telemetry import SHARD_COUNT, SHARD_INDEX, worker_name
from seamline.core.trust import EVERYONE, ConformanceEntry, TrustPolicy

log = get_logger("seamline.core")


class PipelineWorker(ShardWorker):
    """Runs shards of one pipeline in this process, with one orchestrator for them all."""

    def __init__(
        self,
        pipeline: ResolvedPipeline,
        registry: Registry,
        extra_monitors: Sequence[MonitorLike] = (),
        *,
        records_progress: bool = False,
        model: Model[Any] | None = None,
    ) -> None:
        """``records_progress``: keep the current shard's counts for :meth:`progress` (a
        worker in another process, whose executor forwards them to the driver). ``model``:
        the driver's, built for pinning and handed over (:class:`~seamline.core.pinning.
        KeptModel`), so that a local run builds its model once."""
        self.pipeline = pipeline
        self.registry = registry
        self._recorder = ProgressRecorder() if records_progress else None
        recording = () if self._recorder is None else (self._recorder,)
        try:
            self.orchestrator = Orchestrator(
                pipeline, registry, [*extra_monitors, *recording], model
            )
        except UserError:
            raise
        except Exception as err:  # a component's constructor: its one line, not a traceback
            # Not chained as the cause: the CLI takes an OSError cause for the machine's
            # failure (a full disk), and this is the component's (a file it could not open).
            raise ShardFailed(0, 1, failed_at(err) or "the pipeline", one_line(err)) from None
        self.name = worker_name()
        self._running: ShardTask | None = None

    def progress(self) -> ShardProgress | None:
        """The running shard's counts so far (None: no shard runs, or nothing recorded)."""
        task, recorder = self._running, self._recorder
        counts = None if recorder is None else recorder.counts
        if task is None or counts is None:
            return None
        return ShardProgress(task.shard, counts)

    def run(self, task: ShardTask) -> ShardReport:
        if self._recorder is not None:
            self._recorder.forget()  # the last shard's counts are not this one's
        self._running = task
        try:
            return self._run(task)
        finally:
            self._running = None

    def _run(self, task: ShardTask) -> ShardReport:
        shard = task.shard
        context = extract(dict(task.trace_context))
        running = False
        try:
            sink = self._sink_for(task, context)
            if sink is None:
                log.info("shard already finished; not redone", shard=shard.index, run=task.run_id)
                return ShardReport(shard, self.name, committed_before=None, finished_before=True)
            # A part always continues from its own last commit, if any.
            resume = task.resume if shard.count == 1 else True
            running = True
            summary = self.orchestrator.run_part(
                resume=resume, shard=shard, sink=sink, run_id=task.run_id, context=context
            )
        except UserError:
            raise
        except KeyboardInterrupt as stop:  # Ctrl-C, a SIGTERM made one: say what is kept
            orchestrator = self.orchestrator  # a stop inside a commit: one may be on disk
            fresh = not running and not task.resume  # before the sink was met, not resuming
            if fresh or (running and not orchestrator.has_commit and not orchestrator.committing):
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(stop, NOTHING_COMMITTED, True)
            elif running and orchestrator.committing and orchestrator.has_commit is False:
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(stop, FIRST_COMMIT_UNDER_WAY, True)
            elif running and shard.count == 1 and orchestrator.last_commit is not None:
                with contextlib.suppress(AttributeError, TypeError):  # what a resume goes on from
                    setattr(stop, COMMITTED_DOCUMENTS, orchestrator.last_commit.documents)
            raise
        except Exception as err:
            where = failed_at(err) or "the pipeline"
            # Whether the part's output holds a commit (one it made, or the one it resumed
            # from; None before its sink started or recovered): the message tells the user
            # whether a run again continues from it or starts from the beginning.
            committed = self.orchestrator.has_commit if running else None
            raise ShardFailed(shard.index, shard.count, where, one_line(err), committed) from err
        return _report(shard, self.name, summary)

    def _sink_for(self, task: ShardTask, context: Context) -> Sink[Any] | None:
        """The sink the shard writes into: the pipeline's (one shard), else the shard's part;
        None when that part is finished already.

        ``part`` and ``finished`` are sink calls like any other: each crosses a seam, its
        span in the run's trace (``context``), beside the shard's.
        """
        sink = self._new_sink()
        shard = task.shard
        if shard.count == 1:  # the whole output, through the sink as configured
            return sink
        attributes = {
            SHARD_INDEX: shard.index,
            SHARD_COUNT: shard.count,
            "seamline.run_id": task.run_id,
        }
        token = otel_context.attach(context)
        try:
            with self._seam(sink).call("part", attributes):
                part = sink.part(task.run_id, shard)
            with self._seam(part).call("finished", attributes):
                finished = part.finished()
        finally:
            otel_context.detach(token)
        return None if finished else part

    def _seam(self, sink: Sink[Any]) -> Seam:
        hidden = self.orchestrator.hidden
        return Seam(sink, self.registry.info_of(sink), self.orchestrator.monitors, hidden)

    def close(self) -> None:
        self.orchestrator.close()

    def _new_sink(self) -> Sink[Any]:
        choice = self.pipeline.sink
        return cast(Sink[Any], self.registry.create(choice.kind, choice.name, choice.config))


def _report(shard: Any, worker: str, summary: RunSummary) -> ShardReport:
    return ShardReport(
        shard=shard,
        worker=worker,
        counts=summary.counts,
        committed_before=summary.committed_before,
        compilations=summary.compilations,
        seconds=summary.seconds,
        resumed_from=summary.resumed_from,
        first_output_seconds=summary.first_output_seconds,
        attention=dict(summary.attention),
        first_failure=summary.first_failure,
        run_id=summary.run_id,
    )


@dataclass(frozen=True, slots=True)
class RemoteWorkerFactory:
    """Builds a :class:`PipelineWorker` in whatever process calls it (picklable).

    ``spec`` is the driver's validated pipeline (after interpolation and ``--set``),
    so a worker never reads the file or the environment again. Relative paths in it
    mean what they meant to the driver: the worker changes to the driver's working
    directory when it has one of that name (on a cluster, use absolute paths on a
    shared file system). A registry built by hand (tests) travels as its entries;
    a discovered one is discovered again in the worker's environment.
    """

    spec: Mapping[str, Any]
    source: str
    directory: str
    components: tuple[ComponentInfo, ...] | None = None
    file_sha256: str | None = None
    """The driver's pipeline file hash, for the provenance of what the worker writes."""
    trust: TrustPolicy = EVERYONE
    """The driver's trust policy: a worker imports no more than the driver would."""
    conformance: tuple[ConformanceEntry, ...] = ()
    """A registry built by hand: its conformance classes (a discovered one finds them again)."""
    precision: Mapping[str, Any] | None = None
    """The driver's precision decision (its record): a worker computes in what the driver
    chose and does not negotiate again."""
    interpolated: Mapping[DataPath, Mapping[str, str]] | None = None
    """Which of ``spec``'s strings the driver filled from which variables: the worker's
    span attributes and messages hide those values as the driver's do (``spec`` holds the
    values alone, and a worker never reads the environment)."""

    @classmethod
    def of(cls, pipeline: ResolvedPipeline, registry: Registry) -> RemoteWorkerFactory:
        spec = pipeline.spec.model_dump(mode="json", by_alias=True)
        by_hand = not registry.discovered
        return cls(
            spec,
            pipeline.source,
            os.getcwd(),
            tuple(registry.entries()) if by_hand else None,
            pipeline.file_sha256,
            registry.trust,
            tuple(registry.conformance.entries()) if by_hand else (),
            pipeline.precision.record() if pipeline.precision is not None else None,
            None if pipeline.located is None else dict(pipeline.located.interpolated),
        )

    def __call__(self) -> ShardWorker:
        if os.path.isdir(self.directory):
            os.chdir(self.directory)
        located = parse_located(json.dumps(self.spec), self.source)
        located.interpolated.update({at: dict(v) for at, v in (self.interpolated or {}).items()})
        if self.components is None:
            registry = Registry.discover(pipeline_trust(located, self.trust))
        else:
            registry = Registry(self.components, trust=self.trust, conformance=self.conformance)
        resolved = resolve_located(located, registry, file_sha256=self.file_sha256)
        if self.precision is not None:
            decision = PrecisionDecision.from_record(dict(self.precision))
            resolved = replace(resolved, precision=decision)
        return PipelineWorker(resolved, registry, records_progress=True)
