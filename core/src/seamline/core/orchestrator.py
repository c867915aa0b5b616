"""A run: loader → model.prepare → bucketed batches → compiled step → sink.

Host work (reading, tokenising, padding) runs in a producer thread
(:mod:`.prefetch`), a bounded number of batches ahead of the device, so it overlaps
with compute and memory stays bounded however large the corpus. Which attention
serves each batch shape, and the compiled call for it, come from
:class:`~seamline.core.attention.steps.CompiledSteps`; the orchestrator runs the
step and reports what happened. It launches each batch before it writes the one
before (``run.in_flight`` batches stay launched and unwritten), so the device computes
while the host checks, writes and reports; batches are written in launch order, and
all of them before a checkpoint is committed. Documents that cannot be read or prepared are
reported to the sink and to monitors and set aside, never dropped silently. Every
call across a seam goes through its :class:`~seamline.core.seams.Seam` (span,
timing, ``SeamCall`` event), under one root span per run. A resumable sink is
checkpointed every ``run.checkpoint_every`` loaded documents, and a run started
with ``resume`` continues from its last checkpoint.

One orchestrator can also run several shards of a run, one after the other, each
into a sink of its own (:meth:`Orchestrator.run_part`): what it built — the
components, the parameters on the device, the compiled steps — serves them all.
That is what a worker of an executor is (:mod:`seamline.core.worker`).
"""

from __future__ import annotations

import contextlib
import functools
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, cast

from opentelemetry import trace
from opentelemetry.context import Context

from seamline.contracts import (
    BatchDone,
    CommittedRecords,
    Component,
    DocumentError,
    DocumentFailed,
    Event,
    Loader,
    Model,
    Monitor,
    MonitorLike,
    OutputRecord,
    ResumeRefused,
    RunCounts,
    RunFinished,
    RunStarted,
    Shard,
    ShardReport,
    Sink,
    UserError,
)
from seamline.contracts.errors import NOTHING_TO_RESUME, RESTART, WITHOUT_RESUME
from seamline.contracts.executor import Served, union_served
from seamline.contracts.logs import get_logger
from seamline.contracts.sink_kit import OutputConfig
from seamline.contracts.untrusted import for_telemetry
from seamline.core import commits
from seamline.core.attention.candidates import build_candidates
from seamline.core.attention.probe import device_identity
from seamline.core.attention.steps import Launched
from seamline.core.before_publishing import check_reconciles, check_something_embedded
from seamline.core.config import ComponentChoice, PipelineSpec, ResolvedPipeline
from seamline.core.encoder import Encoder
from seamline.core.fingerprint import resolved_inputs
from seamline.core.host import Checkpoint, Collated, HostWork, timed_reads
from seamline.core.in_flight import InFlight
from seamline.core.input_size import whole_input_size
from seamline.core.monitor_hub import MonitorHub
from seamline.core.pinning import pinned_and_built
from seamline.core.precision.negotiate import negotiated
from seamline.core.prefetch import prefetched
from seamline.core.provenance import (
    attention_served,
    provenance,
    recorded_config,
    run_versions,
)
from seamline.core.published import OlderVersions
from seamline.core.registry import Registry
from seamline.core.seams import BUILD, Seam, clipped, mark_failure
from seamline.core.stops import raise_kept_stop
from seamline.core.telemetry import (
    DEVICE_KIND,
    PLATFORM,
    SHARD_COUNT,
    SHARD_INDEX,
    WORKER,
    owned_span,
    record_failure,
    span_event,
    worker_name,
)

log = get_logger("seamline.core")


@dataclass(frozen=True, slots=True)
class _LaunchedBatch:
    """A batch launched on the device whose outputs are not written yet."""

    launched: Launched
    texts: Sequence[str | None]
    started: float
    """``time.perf_counter()`` before the launch."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run did, returned by :meth:`Orchestrator.run` and ``Pipeline.run``."""

    run_id: str
    pipeline: str
    counts: RunCounts
    """What this run computed (every shard's finished attempt): the basis of its rates."""
    committed_before: RunCounts | None
    """What the output already held from commits made before this run, or before an
    attempt of a shard that was retried (a resume, a worker that died). None when that
    is not known: shards an earlier run finished, or a checkpoint too old to say."""
    compilations: int
    seconds: float
    attention: Served = field(default_factory=dict)
    """Shape signature → the attention implementation that served its rows: with a resumed
    run's, those of the run it continues (a list where they differ)."""
    resumed_from: str | None = None
    """The loader cursor this run continued after (``resume``), or None if it read from
    the beginning."""
    first_output_seconds: float | None = None
    """From the start of :meth:`Orchestrator.run` to the first records handed to the sink
    (None when nothing was written): what a user waits before anything comes out."""
    executor: str = "local"
    """The executor that ran the shards (``run.executor.use``)."""
    shards: tuple[ShardReport, ...] = ()
    """One report per shard the executor ran (empty for a bare :class:`Orchestrator` run)."""
    workers: int = 1
    """How many worker processes ran shards."""
    shard_count: int = 1
    """How many shards the run was split into."""
    finished_before: tuple[int, ...] = ()
    """Shards a resumed run found finished (by the run it continues) and did not redo."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Each stage's component, distribution and version, and the pipeline's hashes
    (:func:`seamline.core.provenance.provenance`), as the manifest records them."""
    changes: Mapping[str, int] | None = None
    """What publishing changed in the output, in documents by kind, as the sink measured it
    (the lancedb sink's ``mode: sync``: added, replaced, unchanged, deleted, kept); None
    when the sink does not measure it."""
    older_versions: OlderVersions | None = None
    """What the output's older versions keep on disk (``kept``, ``bytes``: what removing
    them frees), as the sink measured it after publishing (the lancedb sink's, without
    ``prune``); None when it keeps none or the sink does not say."""
    first_failure: DocumentError | None = None
    """The first document this run (or part) set aside as failed, if any."""

    def __repr__(self) -> str:
        """Counts, not every shard's report and the provenance (a multi-KB line in a notebook);
        the fields are all there to read, and each is shown by the name it is read by: the
        line said ``documents=2``, and ``summary.documents`` raised AttributeError (it is
        ``summary.output.documents``)."""
        out = self.output
        return (
            f"RunSummary(pipeline={clipped(self.pipeline, 60)!r}, run_id={self.run_id!r}, "
            f"output=RunCounts(documents={out.documents}, "
            f"failed_documents={out.failed_documents}, "
            f"skipped_documents={out.skipped_documents}, tokens={out.tokens}, ...), "
            f"seconds={self.seconds:.2f}, executor={clipped(self.executor, 40)!r}, "
            f"shard_count={self.shard_count}, "
            f"precision={{'chosen': {self.precision.get('chosen')!r}, ...}})"
        )

    @property
    def precision(self) -> Mapping[str, Any]:
        """The precision decision as recorded (``chosen``, ``mode``, ``candidates``, figures)."""
        record = self.provenance.get("precision")
        return record if isinstance(record, Mapping) else {"chosen": "float32"}

    @property
    def published(self) -> RunCounts | None:
        """What the published output holds (``committed_before + counts``), if known."""
        before = self.committed_before
        return None if before is None else before + self.counts

    @property
    def output(self) -> RunCounts:
        """The counts to report: what is published when known, else this run's."""
        return self.published or self.counts

    @property
    def tokens_per_second(self) -> float:
        """This run's tokens (not those committed before it) per second of its wall time."""
        return self.counts.tokens / self.seconds if self.seconds else 0.0


class Orchestrator:
    """Runs one resolved pipeline (given ``model``, one the driver built from it and pinned)."""

    def __init__(
        self,
        pipeline: ResolvedPipeline,
        registry: Registry,
        extra_monitors: Sequence[MonitorLike] = (),
        model: Model[Any] | None = None,
    ) -> None:
        self.pipeline, self.registry = pipeline, registry
        self.hidden = pipeline.span_hidden(registry.trust.network_variables)  # ${VAR} on spans
        self.run_id = uuid.uuid4().hex[:12]
        self.loader = cast(Loader[Any], _create(registry, pipeline.loader))
        with _built_as(registry, pipeline.model):
            pipeline, created = pinned_and_built(pipeline, registry, model)  # pinned, as a driver,
        self.pipeline = pipeline = negotiated(pipeline, registry)  # before the precision
        self.model = created.with_precision(pipeline.chosen_precision)
        self.sink = cast(Sink[Any], _create(registry, pipeline.sink))
        monitors = [cast(Monitor[Any], _create(registry, m)) for m in pipeline.monitors]
        self.monitors = MonitorHub([*monitors, *extra_monitors])
        self.loader_seam = self._seam(self.loader)
        self.model_seam = self._seam(self.model)
        self.sink_seam = self._seam(self.sink)
        self.encoder = Encoder(
            self.model,
            self.model_seam,
            build_candidates(pipeline.attention, registry),
            pipeline.spec.run,
            self._traced,
        )
        self.attention = self.encoder.attention
        self.steps = self.encoder.steps
        self.shapes = self.encoder.shapes
        self.host = self._host_work()
        """The current part's host side (its thread counts items read, documents prepared)."""
        self._device_counts = RunCounts()
        """Counted by the consumer alone: batches, outputs, set-aside documents."""
        self._committed_before: RunCounts | None = RunCounts()
        """What the output held when this part began (recovered from its last commit)."""
        self.resumed_from: str | None = None
        self.has_commit: bool | None = None  # made or resumed by this part; None: not known yet
        """False from the start of a part that does not resume: a sink whose start failed (a
        read-only folder) committed nothing, and the failure's line must not offer --resume."""
        self.committing = False  # a commit begun: one may be on disk before has_commit is set
        self.last_commit: RunCounts | None = None  # held at the last commit: a stop keeps it
        self._started = 0.0
        self._first_output: float | None = None
        self._first_failure: DocumentError | None = None
        self._in_flight: InFlight[_LaunchedBatch] = InFlight(0, self._write)
        self._shard = Shard()
        self._inputs: dict[str, Any] | None = None
        self.part_manifest: dict[str, Any] = {}  # as the sink publishes it (completed)

    def _seam(self, component: Component[Any]) -> Seam:
        return Seam(component, self.registry.info_of(component), self.monitors, self.hidden)

    def _traced(self, event: Event) -> None:
        """Emit ``event`` to monitors and add it as an event of the current span."""
        span_event(event)
        self.monitors.emit(event)

    # -- the run ---------------------------------------------------------------------------

    def run(self, resume: bool = False) -> RunSummary:
        """Run the pipeline to completion; the sink publishes only if every batch succeeded.

        With ``resume``, continue an interrupted run from the sink's last checkpoint
        (``sink.recover``, not ``sink.start``; the loader reads on after its cursor). A sink
        that is not resumable is a ``UserError``. The components are closed at the end.
        """
        try:
            return self.run_part(resume=resume)
        finally:
            self.close()

    def run_part(
        self,
        *,
        resume: bool = False,
        shard: Shard = Shard(),
        sink: Sink[Any] | None = None,
        run_id: str | None = None,
        context: Context | None = None,
    ) -> RunSummary:
        """Run ``shard`` of the input into ``sink`` (default: the pipeline's own), and close it.

        The components stay open for another part; :meth:`close` closes them. The
        parameters are loaded, and each shape compiled, once for all parts. Given a
        ``context`` (the driver's, carried in a task), the part is a ``seamline.shard``
        span of the driver's trace; otherwise it is the root span ``seamline.run``.
        """
        started = self._started = time.perf_counter()
        if sink is not None:
            self.sink = sink
            self.sink_seam = self._seam(sink)
        if run_id is not None:
            self.run_id = run_id
        self._shard = shard
        self.host = self._host_work()
        self._device_counts = self._committed_before = RunCounts()  # frozen: one for both
        self.resumed_from, self.committing, self.last_commit = None, False, None
        self.has_commit = None if resume else False  # a sink's failed start: nothing committed
        self._first_output = self._first_failure = None
        self._in_flight = in_flight = InFlight(self.pipeline.spec.run.in_flight, self._write)
        compilations = self.steps.compilations
        spec = self.pipeline.spec
        attributes = _root_attributes(spec.pipeline, self.run_id, shard, context)
        name = "seamline.run" if context is None else "seamline.shard"
        with owned_span(name, context=context, attributes=attributes) as root:
            expected = None if resume else self._expected
            self.monitors.emit(RunStarted(self.run_id, spec.pipeline, uses(spec), expected))
            ok = False
            try:
                after = self._begin(resume)
                root.set_attribute("seamline.run_id", self.run_id)  # a resumed run's own
                self.encoder.params()  # loaded once, before the first batch is read
                items = timed_reads(
                    self.loader, self.loader_seam, self._shard, after, self.shapes.batch_size
                )
                batches = self.host.batches(items)
                for item in prefetched(batches, spec.run.prefetch):
                    raise_kept_stop()  # a Ctrl-C Python dropped (stops.py) stops here
                    if isinstance(item, Collated):
                        in_flight.launch(
                            functools.partial(self._launch, item),
                            compiles=not self.steps.compiled(item.batch),
                        )
                        continue
                    # FIFO: batches launched before a checkpoint or error are written first
                    in_flight.drain()
                    if isinstance(item, Checkpoint):
                        self._commit(item)
                    else:
                        self._set_aside(item.error, item.stage)
                in_flight.drain()
                check_reconciles(self._committed_before, self.counts)
                if shard.count == 1:  # the whole run: a shard's part is checked at publish
                    check_something_embedded(self._held, self._first_failure)
                ok = True
            except BaseException as err:
                record_failure(root, err)
                raise
            finally:
                self._end_part(ok, time.perf_counter() - started, root)
        return self._summary(time.perf_counter() - started, self.steps.compilations - compilations)

    def manifest(self) -> dict[str, Any]:
        """What a reader of the output needs to rebuild the model that made it, with the
        run's ``inputs`` (:mod:`.fingerprint`, taken once): a resume they no longer match
        is refused."""
        if self._inputs is None:
            self._inputs = resolved_inputs(self.pipeline, self.loader.config)
        return {**run_manifest(self.pipeline, self.run_id), "inputs": self._inputs}

    @functools.cached_property
    def _expected(self) -> int | None:
        """The whole input's items as the loader says, asked once per orchestrator."""
        return whole_input_size(self.loader, self.registry.info_of(self.loader), self.hidden)

    def _begin(self, resume: bool) -> str | None:
        """Start the sink, or recover it when resuming; the cursor to read on after, if any.
        A resumed run is the run it continues (:func:`_continued`)."""
        whole = self._shard.count == 1  # a part always recovers: nothing committed is no news
        manifest = self.part_manifest = self.manifest()
        recovered = _start_or_recover(self.sink, self.sink_seam, lambda: manifest, resume, whole)
        cursor = None
        if recovered is not None:
            cursor, self._committed_before = recovered.cursor, recovered.held
            self.last_commit = recovered.held  # what a stop before the next commit keeps
            self.run_id = _continued(manifest, recovered, self.run_id)
            if recovered.held is not None:
                where = (self.loader, self.loader_seam, self._shard)
                _check_cursor(where, recovered.checkpoint, cursor, recovered.held)
            log.info("resuming after the last checkpoint", sink=self.sink.name, cursor=cursor)
        self.resumed_from, self.has_commit = cursor, recovered is not None
        return cursor

    # -- host work (producer thread) -------------------------------------------------------

    def _host_work(self) -> HostWork:
        """A fresh host side for a part: checkpoints only when the sink can commit them."""
        every = self.pipeline.spec.run.checkpoint_every
        return self.encoder.host_work(every if self.sink.resumable else 0)

    # -- device work (this thread) ---------------------------------------------------------

    def _launch(self, item: Collated) -> _LaunchedBatch:
        """Start the model on a batch; its outputs are written once ``run.in_flight`` more
        batches are launched, or when a checkpoint, a set-aside document, a new shape or
        the end comes first."""
        started = time.perf_counter()
        return _LaunchedBatch(self.encoder.launch(item.batch), item.texts, started)

    def _write(self, flight: _LaunchedBatch) -> None:
        """Wait for a launched batch, hand its records to the sink and report it."""
        batch = flight.launched.batch
        outputs = self.encoder.finish(flight.launched)
        records = [
            OutputRecord(ex.doc_id, ex.index, ex.span, outputs[row], ex.metadata, text)
            for row, ex, text in zip(batch.example_rows, batch.examples, flight.texts, strict=True)
        ]
        with self.sink_seam.call("write", {"seamline.records": len(records)}):
            self.sink.write(records)
        if self._first_output is None:
            self._first_output = time.perf_counter() - self._started
        counts = self._device_counts = self._device_counts + RunCounts(
            examples=len(batch.examples),
            tokens=batch.tokens,
            positions=batch.batch_size * batch.length,
            batches=1,
        )
        seconds = self._in_flight.added(flight.started)  # not overlapping the batch before
        self.monitors.emit(
            BatchDone(
                counts.batches,
                batch.length,
                len(batch.examples),
                batch.tokens,
                seconds,
                self.host.counts.documents,
            )
        )

    def _commit(self, checkpoint: Checkpoint) -> None:
        """Make everything written so far durable in the sink, up to the checkpoint's cursor.

        The host work yields a checkpoint after the batches and set-aside documents
        of every item up to ``cursor``, and the prefetch queue is first in, first out
        (or the work runs inline): so when the consumer reaches the checkpoint, each
        of those batches has been run and written and each error written. Nothing
        before the cursor is missing from the commit, and nothing after it is in it.
        The commit carries what the output holds by then (:mod:`seamline.core.commits`),
        so a run that continues from it counts what it publishes.
        """
        cursor, before = checkpoint.cursor, self._committed_before
        held = None if before is None else before + checkpoint.host + self._device_counts
        committed = _encoded(self, cursor, held)
        self.committing, self.last_commit = True, None  # stopped inside it: either count
        with self.sink_seam.call("commit", {"seamline.cursor": cursor}):
            self.sink.commit(committed)
        self.has_commit, self.last_commit = True, held
        log.debug("checkpoint committed", sink=self.sink.name, cursor=cursor)

    def _set_aside(self, error: DocumentError, stage: str) -> None:
        """Record ``error`` in the sink's errors file: dead-lettered, or skipped by a rule."""
        if stage == "skip":
            self._device_counts += RunCounts(skipped_documents=1)
        else:
            self._device_counts += RunCounts(failed_documents=1)
            self._first_failure = self._first_failure or error
        if error.stage != stage:
            error = replace(error, stage=stage)
        with self.sink_seam.call("write_error", {"seamline.document.id": for_telemetry(error.id)}):
            self.sink.write_error(error)
        self.monitors.emit(DocumentFailed(error.id, error.reason, stage))

    def _end_part(self, ok: bool, seconds: float, root: trace.Span) -> None:
        if ok:  # which attention served each shape, known now (sink contract, ``start``)
            self.part_manifest["attention_served"] = _output_served(self)
        closed = False  # a part whose sink fails to close (to publish) failed: _close_sink
        try:
            _close_sink(self.sink_seam, self.sink, ok, root)
            closed = True
        finally:
            finished = (self.counts, self.steps.compilations, seconds, ok and closed)
            self.monitors.emit(_finished(self.run_id, *finished))

    def close(self) -> None:
        """Close the monitors and components (once, after the last part)."""
        self.monitors.close()
        self.loader.close()
        self.encoder.close()

    @property
    def counts(self) -> RunCounts:
        """What the current (or last) part has counted so far."""
        return self.host.counts + self._device_counts

    @property
    def _held(self) -> RunCounts | None:
        """What the output holds with this part's work (None: unknown, an older checkpoint)."""
        before = self._committed_before
        return None if before is None else before + self.counts

    def _summary(self, seconds: float, compilations: int | None = None) -> RunSummary:
        return RunSummary(
            run_id=self.run_id,
            pipeline=self.pipeline.spec.pipeline,
            counts=self.counts,
            committed_before=self._committed_before,
            compilations=self.steps.compilations if compilations is None else compilations,
            seconds=seconds,
            attention=_served(self),
            resumed_from=self.resumed_from,
            first_output_seconds=self._first_output,
            provenance=provenance(self.pipeline),
            first_failure=self._first_failure,
        )


def _close_sink(seam: Seam, sink: Sink[Any], complete: bool, root: trace.Span) -> None:
    """Close a part's sink, which publishes a ``complete`` part.

    A part whose work completed fails still when the close fails, its publication above
    all: that failure is the part's, on its root span (status ERROR) as in the event
    that closes it (``ok`` false). The event was sent with the ``ok`` from before the
    close, and a run that published nothing was logged ``"run finished", "ok": true``.
    """
    try:
        with seam.call("close", {"seamline.complete": complete}):
            sink.close(complete=complete)
    except BaseException as err:
        if complete:  # a failure of the work itself is recorded on the root span already
            record_failure(root, err)
        raise


def _finished(
    run_id: str, counts: RunCounts, compilations: int, seconds: float, ok: bool
) -> RunFinished:
    """The event closing a part: what it counted, and whether it finished."""
    return RunFinished(
        run_id,
        counts.documents,
        counts.failed_documents,
        counts.examples,
        counts.tokens,
        counts.batches,
        compilations,
        seconds,
        ok,
    )


def _root_attributes(
    pipeline: str, run_id: str, shard: Shard, context: Context | None
) -> dict[str, str | int]:
    """The attributes of a part's root span: the pipeline, the run, the device, and for a
    shard of a driver's run (``context`` given) which shard and which worker."""
    platform, device_kind = device_identity()
    attributes: dict[str, str | int] = {
        "seamline.pipeline": pipeline,
        "seamline.run_id": run_id,
        PLATFORM: platform,
        DEVICE_KIND: device_kind,
    }
    if context is not None:
        attributes.update(
            {SHARD_INDEX: shard.index, SHARD_COUNT: shard.count, WORKER: worker_name()}
        )
    return attributes


def _check_cursor(
    reading: tuple[Loader[Any], Seam, Shard], checkpoint: str, cursor: str, held: RunCounts
) -> None:
    """The items the loader skips to resume after ``cursor`` must be those the commit
    counted as read: a cursor moved back would write documents twice, one moved on
    would leave them out. Checked when the loader can tell cheaply (``position``)."""
    loader, seam, shard = reading
    with seam.call("position", {"seamline.cursor": cursor}):
        skipped = loader.position(cursor, shard=shard)
    if skipped is not None and skipped != held.read:
        raise ResumeRefused(
            f"cannot resume: {checkpoint} resumes after {cursor!r}, item "
            f"{skipped:,} of the input, but counts {held.read:,} items read up to it; it "
            "was changed after it was written, and resuming from it would write documents "
            f"twice or leave them out. Run again with {RESTART} to start over"
        )


@dataclass(frozen=True, slots=True)
class _Recovered:
    """What a resumed sink's last commit says, checked against what the sink holds."""

    cursor: str
    """The loader cursor to read on after."""
    held: RunCounts | None
    """What the output held at that commit (None when an older checkpoint did not say)."""
    checkpoint: str
    """How a refusal names the checkpoint (its file, where the sink says)."""
    run_id: str | None = None
    """The run that made the commit (None when an older checkpoint did not say)."""
    served: Served | None = None
    """What served each shape of the rows committed (None when an older one did not say)."""


def _continued(manifest: dict[str, Any], recovered: _Recovered, run_id: str) -> str:
    """The id of a resumed run: that of the run whose commit it continues (a commit carries
    it, :mod:`.commits`; ``run_id``, this process's, when an older one did not).

    The run's ``manifest`` is completed in place with it, and with ``resumed``: the commit
    continued held ``committed_before`` (the counts of :class:`RunCounts`; null when an
    older checkpoint did not record them). The sink was handed the manifest before the
    commit was read, and publishes the mapping as it is at ``close`` (sink contract,
    ``start``). A process that resumed a local run published an id of its own, and nothing
    in its manifest said that most of the output came from another process. A run that
    starts from the beginning has no ``resumed``.
    """
    kept = recovered.run_id or run_id
    held = recovered.held
    if recovered.served:  # what served the rows committed, completed at close (_served)
        manifest["attention_served"] = dict(recovered.served)
    manifest.update(
        run_id=kept, resumed={"committed_before": None if held is None else asdict(held)}
    )
    return kept


def _start_or_recover(
    sink: Sink[Any],
    seam: Seam,
    manifest: Callable[[], dict[str, Any]],
    resume: bool,
    whole: bool = True,
) -> _Recovered | None:
    """``sink.start``, or ``sink.recover`` when resuming. None: read from the beginning;
    else the recovered commit, its counts checked against the records the sink holds.

    Only a ``whole`` run warns that it found nothing committed: the user asked to resume
    it. A part of a staged run always recovers (the driver resumes or begins the staged
    run, and says so there), so on a fresh sharded run every part would warn about a
    resume nobody asked for."""
    if not resume:
        with seam.call("start"):
            sink.start(manifest())
        return None
    if not sink.resumable:
        raise UserError(
            f"cannot resume: sink {sink.name!r} keeps no checkpoints (it is not "
            f"resumable); run again {WITHOUT_RESUME} to start from the beginning, or "
            "choose a resumable sink"
        )
    with seam.call("recover"):
        committed = sink.recover(manifest())
    if committed is None and whole:
        log.warning(nothing_to_resume(sink), sink=sink.name)
    if committed is None:
        return None
    with seam.call("committed_records"):
        found = sink.committed_records()
    checkpoint = (
        f"the checkpoint {found.checkpoint!r}" if found else f"the {sink.name} sink's checkpoint"
    )
    try:
        cursor, held, run_id, served = commits.decode(committed)
    except commits.TamperedCommit as err:
        raise ResumeRefused(
            f"cannot resume: {checkpoint} holds a commit seamline did not write "
            f"({err}); it was changed after it was written. Run again with {RESTART} to "
            "start over"
        ) from None
    if held is not None and found is not None:
        _check_records(found, held)
    return _Recovered(cursor, held, checkpoint, run_id, served)


def _encoded(orchestrator: Orchestrator, cursor: str, held: RunCounts | None) -> str:
    """The string a commit hands the sink (:mod:`.commits`): the cursor, what the output
    holds, the run, and what served each shape of its rows. What an older checkpoint held
    is unknown (``held`` None): the commit must not claim to know it, a bare cursor."""
    if held is None:
        return cursor
    return commits.encode(cursor, held, orchestrator.run_id, _served(orchestrator))


def _served(orchestrator: Orchestrator) -> dict[str, str | list[str]]:
    """What served each shape of the part's output rows: this process's steps, and what the
    commit a resume continues recorded (:func:`_continued` put it in the part's manifest:
    the stopped process's shapes and kernels, which its own steps never saw)."""
    before: Served = orchestrator.part_manifest.get("attention_served") or {}
    return union_served(before, orchestrator.steps.served)


def _output_served(orchestrator: Orchestrator) -> dict[str, str | list[str]]:
    """The manifest's ``attention_served`` (:func:`_served`), with a warning where this
    process served a shape with another attention than the run it continues."""
    before: Served = orchestrator.part_manifest.get("attention_served") or {}
    warn_served_otherwise(before, orchestrator.steps.served)
    return attention_served(_served(orchestrator))


def warn_served_otherwise(before: Served, now: Mapping[str, str]) -> None:
    """Warn when a resumed run served a shape with another attention than the run it
    continues did: the output then holds rows of that shape from both, which agree within
    verification's tolerance, not bit for bit. Not refused: ``use: auto`` may rank the
    candidates by timings measured in each process, so two processes on one machine can
    choose differently. The manifest records both (``attention_served``)."""
    changed = {
        signature: chosen
        for signature, chosen in now.items()
        if signature in before and before[signature] != chosen
    }
    if changed:
        shapes = ", ".join(sorted(changed)[:3]) + (" and more" if len(changed) > 3 else "")
        log.warning(
            f"resume: this process served {len(changed)} shape(s) ({shapes}) with another "
            "attention than the run it continues: the output holds rows of each computed by "
            "both (within verification's tolerance, not bit for bit; attention_served lists "
            "both). To reproduce it bit for bit, name one attention (attention: {use: ...}) "
            f"and run again with {RESTART}",
            shapes=sorted(changed),
        )


def nothing_to_resume(sink: Sink[Any]) -> str:
    """What a resume that found no commit says before it starts from the beginning.

    A published output (its manifest there) is complete: a notebook cell kept at
    ``run(resume=True)`` re-embedded a finished run for minutes, told "nothing was
    committed to resume from" as if it had been stopped; it now says so as ``seamline
    run`` says it after publishing. The run still starts over, as the command's does
    (the input may have changed since): with ``mode: append``, adding every document
    again."""
    config = sink.config
    if isinstance(config, OutputConfig) and config.manifest_path().is_file():
        return (
            f"resume: {NOTHING_TO_RESUME.format(output=repr(str(config.path)))}: starting "
            "from the beginning, every document embedded again (and a sink that appends "
            f"adds every document again); run {WITHOUT_RESUME} to start over unwarned"
        )
    return "resume: nothing was committed to resume from; starting from the beginning"


def _check_records(found: CommittedRecords, held: RunCounts) -> None:
    """The records the recovered output holds must be those its commit counted."""
    problems = []
    if found.outputs is not None and found.outputs != held.examples:
        problems.append(f"{found.outputs:,} output records where it counts {held.examples:,}")
    set_aside = held.failed_documents + held.skipped_documents
    if found.set_aside is not None and found.set_aside != set_aside:
        problems.append(f"{found.set_aside:,} documents set aside where it counts {set_aside:,}")
    if problems:
        raise ResumeRefused(
            f"cannot resume: the output committed with the checkpoint {found.checkpoint!r} "
            f"holds {' and '.join(problems)}; it was changed after it was written. Run again "
            f"with {RESTART} to start over"
        )


def uses(spec: PipelineSpec) -> dict[str, str]:
    """The component each stage uses, as ``RunStarted`` names them to monitors."""
    return {
        "loader": spec.loader.use,
        "model": spec.model.use,
        "attention": str(spec.attention.use),
        "sink": spec.sink.use,
    }


def run_manifest(pipeline: ResolvedPipeline, run_id: str) -> dict[str, Any]:
    """The manifest of run ``run_id``: what a reader needs to rebuild the model that made it."""
    model = pipeline.model
    return {
        "seamline_manifest": 1,
        "pipeline": pipeline.spec.pipeline,
        "run_id": run_id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"use": model.name, "with": recorded_config(model.config)},
        "attention": pipeline.spec.attention.model_dump(mode="json", by_alias=True),
        "precision": pipeline.chosen_precision,
        "versions": run_versions(),
        "provenance": provenance(pipeline),
    }


def _create(registry: Registry, choice: ComponentChoice) -> Component[Any]:
    """A loader, sink or monitor (the model is built pinned: :mod:`.pinning`); an error
    its constructor raises is marked as that component's (``build``), so the run's one
    line names it and its distribution, as it does for a failing call."""
    with _built_as(registry, choice):
        return registry.create(choice.kind, choice.name, choice.config)


@contextlib.contextmanager
def _built_as(registry: Registry, choice: ComponentChoice) -> Iterator[None]:
    """Mark an error building ``choice`` (outside its seam: it is not there yet) as its
    ``build``'s; a ``UserError`` (its refusal of its settings) is left as it is."""
    try:
        yield
    except UserError:
        raise
    except Exception as err:
        mark_failure(err, choice.kind, choice.name, BUILD, registry.get(choice.kind, choice.name))
        raise
