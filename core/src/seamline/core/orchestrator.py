"""A run: loader → model.prepare → bucketed batches → jit(model.apply ∘ attention) → sink.

Host work (reading, tokenising, padding) runs in a producer thread, a bounded
number of batches ahead of the device, so it overlaps with compute and memory
stays bounded however large the corpus. Each shape bucket is planned (which
attention serves it) and compiled once. Documents that cannot be read or
prepared are reported to the sink and to monitors and set aside, never dropped
silently. Every seam call is a span under one root span per run. A resumable sink
is checkpointed every ``run.checkpoint_every`` loaded documents, and a run started
with ``resume`` continues from its last checkpoint.
"""

from __future__ import annotations

import contextvars
import functools
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import jax
import numpy as np
import structlog
from opentelemetry.trace import Status, StatusCode

from seamline.contracts import (
    Alert,
    Attention,
    AttentionChosen,
    AttentionSpec,
    Batch,
    BatchDone,
    Compiled,
    ContractViolation,
    Document,
    DocumentError,
    DocumentFailed,
    Example,
    Fallback,
    Loaded,
    Loader,
    Model,
    Monitor,
    OutputRecord,
    RunFinished,
    RunStarted,
    SeamCall,
    ShadowCompared,
    Sink,
    UserError,
    Verified,
)
from seamline.contracts.seams import check_batch, check_examples, check_loaded, check_model_output
from seamline.core.batching import Bucketer, resolve_buckets
from seamline.core.config import ResolvedPipeline
from seamline.core.planner import AttentionDecision, AttentionPlanner
from seamline.core.probe import attention_specs, device_identity
from seamline.core.registry import Registry
from seamline.core.seams import CheckedAttention, MonitorHub, scope_name
from seamline.core.telemetry import (
    ATTENTION_NAME,
    ATTENTION_REASON,
    BATCH_LENGTH,
    BATCH_SIZE,
    DEVICE_KIND,
    DTYPE,
    PLATFORM,
    THREAD_NAME,
    component_attributes,
    span_event,
    tracer,
)
from seamline.core.trust import untrusted_candidates
from seamline.core.verification import tolerance_for, verify

log = structlog.get_logger("seamline.core")


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run did, returned by :meth:`Orchestrator.run`."""

    run_id: str
    pipeline: str
    documents: int
    failed_documents: int
    examples: int
    tokens: int
    batches: int
    compilations: int
    seconds: float
    attention: dict[str, str] = field(default_factory=dict)
    """Shape signature → the attention implementation that served it."""
    resumed_from: str | None = None
    """The loader cursor this run continued after (``resume``), or None if it read from
    the beginning. The counts are those of this run only."""

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


@dataclass
class _Counts:
    documents: int = 0
    failed: int = 0
    examples: int = 0
    tokens: int = 0
    batches: int = 0


@dataclass(frozen=True, slots=True)
class _Step:
    """A compiled model call for one batch shape, with the attention that serves it."""

    call: Callable[[Any, Mapping[str, Any]], jax.Array]
    decision: AttentionDecision
    compiled: Any
    """The XLA executable; its HLO names each seam (``seamline/<kind>/<name>``)."""
    specs: tuple[AttentionSpec, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    """The ``seamline.model.apply`` span's attributes for this shape (built once)."""


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    """From the host work: everything loaded up to ``cursor`` has been yielded before this."""

    cursor: str


_DONE = object()


class Orchestrator:
    """Runs one resolved pipeline."""

    def __init__(
        self,
        pipeline: ResolvedPipeline,
        registry: Registry,
        extra_monitors: Sequence[Monitor[Any]] = (),
    ) -> None:
        self.pipeline = pipeline
        self.registry = registry
        self.run_id = uuid.uuid4().hex[:12]
        self.loader: Loader[Any] = self._create(pipeline.loader)
        self.model: Model[Any] = self._create(pipeline.model)
        self.sink: Sink[Any] = self._create(pipeline.sink)
        self.monitors = MonitorHub([*(self._create(m) for m in pipeline.monitors), *extra_monitors])
        candidates: list[Attention[Any]] = [self._create(a) for a in pipeline.attention]
        self.planner = AttentionPlanner(
            candidates,
            explicit=pipeline.attention_explicit,
            auto=pipeline.attention_auto,
            untrusted=untrusted_candidates(candidates, pipeline.spec.attention.require_conformance),
        )
        self.reference = self._reference(candidates)
        attention_settings = pipeline.spec.attention
        self.verify = attention_settings.verify and self.reference is not None
        self.fallback = attention_settings.on_failure == "fallback"
        self.shadow_every = attention_settings.shadow.every if attention_settings.shadow else 0
        self._verified: set[tuple[tuple[AttentionSpec, ...], str]] = set()
        self._reference_steps: dict[tuple[int, int], _Step] = {}
        settings = pipeline.spec.run
        self.batch_size = settings.batch_size
        self.buckets = resolve_buckets(settings.buckets, self.model.max_length)
        self._steps: dict[tuple[int, int], _Step] = {}
        self.counts = _Counts()
        self.resumed_from: str | None = None
        # Span attributes built once per component, not once per call.
        self._loader_attributes = self._attributes_of(self.loader)
        self._model_attributes = self._attributes_of(self.model)
        self._sink_attributes = self._attributes_of(self.sink)
        self._prepare_attributes = self._model_attributes
        self._attention_attributes: dict[str, dict[str, str]] = {}

    def _create(self, choice: Any) -> Any:
        return self.registry.create(choice.kind, choice.name, choice.config)

    def _attributes_of(self, component: Any) -> dict[str, str]:
        """The component's span attributes, with the distribution that registers it."""
        distribution: str | None
        version: str | None
        try:
            info = self.registry.get(component.kind, component.name)
            distribution, version = info.distribution, info.version
        except Exception:  # not from the registry (a hand-made component): name it anyway
            distribution = version = None
        return component_attributes(
            component.kind,
            component.name,
            component.contract_version,
            distribution=distribution,
            version=version,
        )

    def _attention_attributes_of(self, attention: Attention[Any]) -> dict[str, str]:
        attributes = self._attention_attributes.get(attention.name)
        if attributes is None:
            attributes = self._attention_attributes[attention.name] = self._attributes_of(attention)
        return attributes

    def _traced(self, event: Any) -> None:
        """Emit ``event`` to monitors and add it as an event of the current span."""
        span_event(event)
        self.monitors.emit(event)

    def _reference(self, candidates: list[Attention[Any]]) -> Attention[Any] | None:
        """The reference attention: the candidate of that name if there is one, else its own."""
        choice = self.pipeline.attention_reference
        if choice is None:
            return None
        same = [c for c in candidates if c.name == choice.name and c.config == choice.config]
        return same[0] if same else self._create(choice)

    # -- the run ---------------------------------------------------------------------------

    def run(self, resume: bool = False) -> RunSummary:
        """Run the pipeline to completion; the sink publishes only if every batch succeeded.

        With ``resume``, continue an interrupted run: the sink restores its last
        checkpoint (``sink.recover`` instead of ``sink.start``) and the loader reads on
        after the cursor committed there. A sink that is not resumable is a
        ``UserError``.
        """
        started = time.perf_counter()
        spec = self.pipeline.spec
        platform, device_kind = device_identity()
        with tracer().start_as_current_span(
            "seamline.run",
            attributes={
                "seamline.pipeline": spec.pipeline,
                "seamline.run_id": self.run_id,
                PLATFORM: platform,
                DEVICE_KIND: device_kind,
            },
        ) as root:
            self.monitors.emit(
                RunStarted(
                    self.run_id,
                    spec.pipeline,
                    {
                        "loader": spec.loader.use,
                        "model": spec.model.use,
                        "attention": str(spec.attention.use),
                        "sink": spec.sink.use,
                    },
                )
            )
            ok = False
            try:
                after = self._begin(resume)
                params = self._load_params()
                for item in _prefetched(self._host_work(after), spec.run.prefetch):
                    if isinstance(item, Batch):
                        self._process(params, item)
                    elif isinstance(item, _Checkpoint):
                        # FIFO: every batch and error before it is written (see _commit).
                        self._commit(item.cursor)
                    else:
                        self._set_aside(*item)
                ok = True
            except BaseException as err:
                root.record_exception(err)
                root.set_status(Status(StatusCode.ERROR, f"{type(err).__name__}: {err}"))
                raise
            finally:
                self._finish(ok, time.perf_counter() - started)
        return self._summary(time.perf_counter() - started)

    def manifest(self) -> dict[str, Any]:
        """What a reader of the output needs to know to rebuild the model that made it."""
        model = self.pipeline.model
        return {
            "seamline_manifest": 1,
            "pipeline": self.pipeline.spec.pipeline,
            "run_id": self.run_id,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "model": {"use": model.name, "with": model.config.model_dump(mode="json")},
            "attention": self.pipeline.spec.attention.model_dump(mode="json", by_alias=True),
            "versions": _versions(),
        }

    def _begin(self, resume: bool) -> str | None:
        """Start the sink, or recover it when resuming; the cursor to read on after, if any."""
        sink = self.sink
        if not resume:
            sink.start(self.manifest())
            return None
        if not sink.resumable:
            raise UserError(
                f"cannot resume: sink {sink.name!r} keeps no checkpoints (it is not "
                "resumable); run again without --resume (resume=False) to start from the "
                "beginning, or choose a resumable sink"
            )
        cursor = sink.recover(self.manifest())
        if cursor is None:
            log.info("resume: nothing was committed; starting from the beginning", sink=sink.name)
        else:
            log.info("resuming after the last checkpoint", sink=sink.name, cursor=cursor)
        self.resumed_from = cursor
        return cursor

    def _load_params(self) -> Any:
        with tracer().start_as_current_span(
            "seamline.model.load", attributes=self._model_attributes
        ):
            return jax.device_put(self.model.load())

    def _host_work(
        self, after: str | None = None
    ) -> Iterator[Batch | tuple[DocumentError, str] | _Checkpoint]:
        """Read, prepare and bucket documents; yields batches, set-aside documents and checkpoints.

        Every ``checkpoint_every`` loaded items (documents and error records) the
        buckets are flushed, so that every example of every item loaded so far is in
        a batch already yielded, and a ``_Checkpoint`` with the last item's cursor
        follows those batches.

        Reading is timed per item, but reported per chunk of up to ``batch_size``
        items: one ``seamline.loader.read`` span and one ``SeamCall`` per chunk (a span
        per document read would cost more than many loaders' reads).
        """
        bucketer = Bucketer(self.buckets, self.batch_size)
        every = self.pipeline.spec.run.checkpoint_every if self.sink.resumable else 0
        thread = {THREAD_NAME: threading.current_thread().name}
        self._prepare_attributes = {**self._model_attributes, **thread}
        reads = self._reads(after, {**self._loader_attributes, **thread})
        for count, loaded in enumerate(reads, start=1):
            yield from self._host_item(loaded.item, bucketer)
            if every and count % every == 0:
                # The partly filled buckets go out padded: the price of a checkpoint.
                for length, ready in bucketer.flush():
                    yield self._collate(ready, length)
                yield _Checkpoint(loaded.cursor)
        for length, ready in bucketer.flush():
            yield self._collate(ready, length)

    def _reads(self, after: str | None, attributes: Mapping[str, Any]) -> Iterator[Loaded]:
        """The loader's checked items, its time in the loader reported per chunk of items.

        Reads interleave with ``prepare``, so a chunk's span starts when its first item
        is asked for and lasts as long as the loader took for the chunk's items
        together: the sum of the reads, not a wall-clock interval.
        """
        loader = self.loader
        clock = time.perf_counter_ns
        size = self.batch_size
        reader: Iterator[Loaded] | None = None
        items = spent = first = 0
        while True:
            if items == 0:
                first = time.time_ns()
            started = clock()
            try:
                if reader is None:
                    reader = iter(loader.read(after=after))
                loaded = check_loaded(loader.name, next(reader))
            except StopIteration:
                self._read_span(first, spent + clock() - started, items, attributes)
                return
            except BaseException as err:
                self._read_span(first, spent + clock() - started, items, attributes, err)
                raise
            spent += clock() - started
            items += 1
            if items == size:
                self._read_span(first, spent, items, attributes)
                items = spent = 0
            yield loaded

    def _read_span(
        self,
        start_ns: int,
        spent_ns: int,
        items: int,
        attributes: Mapping[str, Any],
        error: BaseException | None = None,
    ) -> None:
        span = tracer().start_span(
            "seamline.loader.read", attributes=attributes, start_time=start_ns
        )
        span.set_attribute("seamline.loader.items", items)
        if error is not None:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        span.end(end_time=start_ns + spent_ns)
        self.monitors.emit(SeamCall("loader", self.loader.name, "read", spent_ns / 1e9))

    def _host_item(
        self, item: Document | DocumentError, bucketer: Bucketer
    ) -> Iterator[Batch | tuple[DocumentError, str]]:
        """One loaded item: set aside, or prepared into examples and bucketed."""
        if isinstance(item, DocumentError):
            yield item, "load"
            return
        examples = self._prepare(item)
        if isinstance(examples, DocumentError):
            yield examples, "prepare"
            return
        self.counts.documents += 1
        for example in examples:
            if item.metadata:  # records carry their document's metadata (path, source...)
                example = replace(example, metadata={**item.metadata, **example.metadata})
            for length, ready in bucketer.add(example):
                yield self._collate(ready, length)

    def _prepare(self, document: Document) -> list[Example] | DocumentError:
        model = self.model
        started = time.perf_counter()
        failed: DocumentError | None = None
        examples: list[Example] = []
        with tracer().start_as_current_span(
            "seamline.model.prepare", attributes=self._prepare_attributes
        ) as span:
            span.set_attribute("seamline.document.id", document.id)
            try:
                examples = list(model.prepare(document))
            except ContractViolation:
                raise
            except Exception as err:
                # Set aside, not raised: the span still says the call failed.
                span.record_exception(err)
                span.set_status(Status(StatusCode.ERROR, f"{type(err).__name__}: {err}"))
                failed = DocumentError(
                    document.id, f"prepare failed: {type(err).__name__}: {err}", document.metadata
                )
        self.monitors.emit(SeamCall("model", model.name, "prepare", time.perf_counter() - started))
        if failed is not None:
            return failed
        check_examples(model.name, examples, model.max_length)
        return examples

    def _collate(self, examples: list[Example], length: int) -> Batch:
        batch = self.model.collate(examples, self.batch_size, length)
        check_batch(self.model.name, batch, self.batch_size, length)
        return batch

    def _commit(self, cursor: str) -> None:
        """Make everything written so far durable in the sink, up to ``cursor``.

        The host work yields a checkpoint after the batches and set-aside documents
        of every item up to ``cursor``, and the prefetch queue is first in, first out
        (or the work runs inline): so when the consumer reaches the checkpoint, each
        of those batches has been run and written and each error written. Nothing
        before the cursor is missing from the commit, and nothing after it is in it.
        """
        sink = self.sink
        started = time.perf_counter()
        with tracer().start_as_current_span(
            "seamline.sink.commit", attributes=self._sink_attributes
        ) as span:
            span.set_attribute("seamline.cursor", cursor)
            sink.commit(cursor)
        self.monitors.emit(SeamCall("sink", sink.name, "commit", time.perf_counter() - started))
        log.debug("checkpoint committed", sink=sink.name, cursor=cursor)

    def _set_aside(self, error: DocumentError, stage: str) -> None:
        self.counts.failed += 1
        self.sink.write_error(error)
        self.monitors.emit(DocumentFailed(error.id, error.reason, stage))

    def _process(self, params: Any, batch: Batch) -> None:
        started = time.perf_counter()
        step = self._step(params, batch)
        model = self.model
        applied = time.perf_counter()
        with tracer().start_as_current_span("seamline.model.apply", attributes=step.attributes):
            # np.asarray waits for the device, so the span covers the real compute.
            outputs = np.asarray(step.call(params, batch.arrays))
        self.monitors.emit(SeamCall("model", model.name, "apply", time.perf_counter() - applied))
        check_model_output(model.name, outputs, batch.batch_size, model.output_dtype())
        outputs = self._shadow(params, batch, step, outputs)
        records = [
            OutputRecord(ex.doc_id, ex.index, ex.span, outputs[row], ex.metadata)
            for row, ex in enumerate(batch.examples)
        ]
        sink = self.sink
        written = time.perf_counter()
        with tracer().start_as_current_span(
            "seamline.sink.write", attributes=self._sink_attributes
        ) as span:
            span.set_attribute("seamline.records", len(records))
            sink.write(records)
        self.monitors.emit(SeamCall("sink", sink.name, "write", time.perf_counter() - written))
        counts = self.counts
        counts.batches += 1
        counts.examples += len(batch.examples)
        counts.tokens += batch.tokens
        self.monitors.emit(
            BatchDone(
                counts.batches,
                batch.length,
                len(batch.examples),
                batch.tokens,
                time.perf_counter() - started,
                counts.documents,
            )
        )

    def _step(self, params: Any, batch: Batch) -> _Step:
        """The compiled call for this batch's shape: planned, verified and compiled once.

        A candidate that disagrees with the reference, or fails to compile, is
        demoted for this shape and the next one is tried (unless ``on_failure:
        raise``); when no candidate is left the planner raises with every reason.
        """
        key = (batch.batch_size, batch.length)
        step = self._steps.get(key)
        if step is not None:
            return step
        specs = tuple(attention_specs(self.model, params, batch.arrays))
        failed: tuple[str, str] | None = None  # (implementation, reason) that fell through
        step: _Step | None = None
        while True:
            decision = self._plan(batch, specs)
            if failed is not None:
                self._fell_back(failed[0], decision.chosen, failed[1], decision.signature)
            attention = self.planner.implementation(decision.chosen)
            try:
                # Verification traces and compiles the kernel too, so either may fail here.
                problem = self._verification_problem(attention, specs, decision.signature)
                if problem is None:
                    step = self._compile(params, batch, attention, decision, specs)
            except ContractViolation:
                raise  # a bug in the component, not a shape it cannot serve
            except Exception as err:
                if not self.fallback:
                    raise
                problem = f"failed to compile: {type(err).__name__}: {err}"
            if problem is None:
                assert step is not None
                self._steps[key] = step
                return step
            self.planner.demote(specs, decision.chosen, problem)
            failed = (decision.chosen, problem)

    def _plan(self, batch: Batch, specs: tuple[AttentionSpec, ...]) -> AttentionDecision:
        with tracer().start_as_current_span(
            "seamline.plan", attributes={"seamline.batch.length": batch.length}
        ) as span:
            decision = self.planner.choose(specs)
            span.set_attributes(
                {
                    "seamline.attention.name": decision.chosen,
                    "seamline.attention.reason": decision.reason,
                }
            )
        self.monitors.emit(
            AttentionChosen(decision.signature, decision.chosen, decision.reason, decision.rejected)
        )
        # Monitors (the log monitor among them) report it; this line is for debugging.
        log.debug(
            "attention chosen",
            signature=decision.signature,
            chosen=decision.chosen,
            reason=decision.reason,
            rejected={k: list(v) for k, v in decision.rejected.items()},
        )
        return decision

    def _verification_problem(
        self, attention: Attention[Any], specs: tuple[AttentionSpec, ...], signature: str
    ) -> str | None:
        """Why ``attention`` may not serve ``specs`` by the reference's measure, or None."""
        reference = self.reference
        if not self.verify or reference is None or attention is reference:
            return None
        if (specs, attention.name) in self._verified:
            return None
        with tracer().start_as_current_span(
            "seamline.verify",
            attributes={
                **self._attention_attributes_of(attention),
                ATTENTION_NAME: attention.name,
                "seamline.signature": signature,
            },
        ) as span:
            verdict = verify(attention, reference, specs)
            span.set_attributes(
                {"seamline.max_error": verdict.max_error, "seamline.ok": verdict.ok}
            )
            self._traced(
                Verified(
                    signature,
                    attention.name,
                    reference.name,
                    verdict.max_error,
                    verdict.tolerance,
                    verdict.ok,
                )
            )
        if verdict.ok:
            self._verified.add((specs, attention.name))
            return None
        return (
            f"differs from the reference {reference.name!r} by {verdict.max_error:.3g} "
            f"(tolerance {verdict.tolerance:g})"
        )

    def _fell_back(self, failed: str, replacement: str, reason: str, signature: str) -> None:
        self._traced(Fallback("attention", failed, replacement, reason))
        log.debug(
            "attention fell back",
            failed=failed,
            replacement=replacement,
            reason=reason,
            signature=signature,
        )

    def _compile(
        self,
        params: Any,
        batch: Batch,
        attention: Attention[Any],
        decision: AttentionDecision,
        specs: tuple[AttentionSpec, ...],
    ) -> _Step:
        apply = functools.partial(self.model.apply, attention=CheckedAttention(attention))
        scope = scope_name("model", self.model.name)

        def seamline_step(params: Any, arrays: Mapping[str, Any]) -> jax.Array:
            with jax.named_scope(scope):
                return apply(params, arrays)

        shape: dict[str, Any] = {BATCH_SIZE: batch.batch_size, BATCH_LENGTH: batch.length}
        if specs:
            shape.update(
                {
                    DTYPE: specs[0].dtype,
                    PLATFORM: specs[0].platform,
                    DEVICE_KIND: specs[0].device_kind,
                }
            )
        compile_started = time.perf_counter()
        with tracer().start_as_current_span(
            "seamline.compile",
            attributes={
                **self._attention_attributes_of(attention),
                **shape,
                ATTENTION_NAME: attention.name,
            },
        ):
            compiled = jax.jit(seamline_step).lower(params, dict(batch.arrays)).compile()
        seconds = time.perf_counter() - compile_started
        self.monitors.emit(Compiled(batch.length, batch.batch_size, seconds))
        attributes = {
            **self._model_attributes,
            **shape,
            ATTENTION_NAME: decision.chosen,
            ATTENTION_REASON: decision.reason,
        }
        return _Step(lambda p, a: compiled(p, dict(a)), decision, compiled, specs, attributes)

    def _shadow(self, params: Any, batch: Batch, step: _Step, outputs: np.ndarray) -> np.ndarray:
        """Every Nth batch: run the reference too; on a breach, demote and keep its outputs."""
        reference = self.reference
        if (
            not self.shadow_every
            or reference is None
            or step.decision.chosen == reference.name
            or self.counts.batches % self.shadow_every
        ):
            return outputs
        key = (batch.batch_size, batch.length)
        shadow = self._reference_steps.get(key)
        if shadow is None:
            decision = AttentionDecision(step.decision.signature, reference.name, "shadow")
            shadow = self._compile(params, batch, reference, decision, step.specs)
            self._reference_steps[key] = shadow
        with tracer().start_as_current_span(
            "seamline.shadow", attributes={"seamline.attention.name": step.decision.chosen}
        ) as span:
            expected = np.asarray(shadow.call(params, batch.arrays))
            rows = len(batch.examples)
            error = float(np.max(np.abs(outputs[:rows] - expected[:rows]), initial=0.0))
            tolerance = min(tolerance_for(spec.dtype) for spec in step.specs)
            ok = bool(error <= tolerance)
            span.set_attributes({"seamline.max_error": error, "seamline.ok": ok})
            self._traced(
                ShadowCompared(
                    step.decision.signature,
                    step.decision.chosen,
                    reference.name,
                    self.counts.batches + 1,
                    error,
                    tolerance,
                    ok,
                )
            )
        if ok:
            return outputs
        reason = f"shadow comparison: differs from {reference.name!r} by {error:.3g}"
        self._traced(
            Alert(
                "seamline.shadow",
                f"attention {step.decision.chosen!r} demoted for {step.decision.signature}: "
                f"{reason}",
                {"max_error": error, "tolerance": tolerance},
            )
        )
        log.debug(
            "attention demoted by shadow comparison", chosen=step.decision.chosen, reason=reason
        )
        self.planner.demote(step.specs, step.decision.chosen, reason)
        del self._steps[key]
        return expected

    def _finish(self, ok: bool, seconds: float) -> None:
        try:
            self.sink.close(complete=ok)
        finally:
            counts = self.counts
            self.monitors.emit(
                RunFinished(
                    self.run_id,
                    counts.documents,
                    counts.failed,
                    counts.examples,
                    counts.tokens,
                    counts.batches,
                    len(self._steps),
                    seconds,
                    ok,
                )
            )
            self.monitors.close()
            extra = [self.reference] if self.reference not in self.planner.candidates else []
            for component in (self.loader, self.model, *self.planner.candidates, *extra):
                component.close()

    def _summary(self, seconds: float) -> RunSummary:
        counts = self.counts
        return RunSummary(
            run_id=self.run_id,
            pipeline=self.pipeline.spec.pipeline,
            documents=counts.documents,
            failed_documents=counts.failed,
            examples=counts.examples,
            tokens=counts.tokens,
            batches=counts.batches,
            compilations=len(self._steps),
            seconds=seconds,
            attention={d.signature: d.chosen for d in self.planner.decisions},
            resumed_from=self.resumed_from,
        )


def _versions() -> dict[str, str]:
    versions = {}
    for dist in ("seamline-core", "seamline-contracts", "jax", "jaxlib"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _prefetched(items: Iterator[Any], depth: int) -> Iterator[Any]:
    """Run ``items`` in a producer thread, at most ``depth`` items ahead; 0 runs it inline.

    The thread runs in a copy of the caller's context, so spans it starts have the
    run as parent. An exception in the producer is re-raised in the consumer.
    """
    if depth == 0:
        yield from items
        return
    channel: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        channel.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            channel.put(_DONE)
        except BaseException as err:
            channel.put(_Raised(err))

    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(produce,), name="seamline-host", daemon=True
    )
    thread.start()
    try:
        while True:
            item = channel.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join(timeout=5)


@dataclass(frozen=True, slots=True)
class _Raised:
    error: BaseException
