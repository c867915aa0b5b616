"""seamline as a library: ``Pipeline.from_yaml(path).run()``."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import yaml

from seamline.contracts import (
    ExecutionReport,
    Executor,
    Monitor,
    MonitorLike,
    ResumeRefused,
    RunCounts,
    UserError,
)
from seamline.contracts.errors import NOTHING_COMMITTED
from seamline.contracts.executor import merge_attention
from seamline.contracts.logs import get_logger
from seamline.contracts.workdir import working_folder
from seamline.core.config import (
    ComponentChoice,
    ResolvedPipeline,
    TelemetrySettings,
    build_executor,
    load_pipeline,
    load_trusted,
    prepare_data,
    resolve_located,
    resolve_trusted,
)
from seamline.core.config.yaml12 import Yaml12Dumper
from seamline.core.devices import jax_devices
from seamline.core.forking import refuse_after_fork
from seamline.core.job import PipelineJob, check_report
from seamline.core.monitor_arguments import check_monitors
from seamline.core.monitor_hub import MonitorHub
from seamline.core.orchestrator import RunSummary
from seamline.core.pinning import KeptModel, pinned_model
from seamline.core.precision.decision import PrecisionDecision
from seamline.core.precision.negotiate import decide_precision
from seamline.core.propagators import check_propagators, inject
from seamline.core.provenance import provenance
from seamline.core.published import OlderVersions, PublishedButFailed
from seamline.core.registry import Registry
from seamline.core.run_errors import placed_loader_error
from seamline.core.seams import Seam, clipped
from seamline.core.stop_notes import add_stop_note
from seamline.core.stops import raise_kept_stop, stops_kept
from seamline.core.telemetry import EXECUTOR, owned_span, record_failure, warn_unread_telemetry

log = get_logger("seamline.core")

DICT_SOURCE = "Pipeline.from_dict"
"""How a pipeline built in code is named in messages (its places are key paths)."""


class Pipeline:
    """A validated pipeline, ready to run."""

    def __init__(self, resolved: ResolvedPipeline, registry: Registry) -> None:
        self.resolved = resolved
        self.registry = registry
        self._precision_for: tuple[ComponentChoice, PrecisionDecision] | None = None
        """The last precision negotiated, and the pinned model it was negotiated for."""
        self.validated_in = working_folder()
        """The working folder the pipeline was validated in: its sink's relative paths were
        made absolute there, and its loader's are read where it runs (:meth:`run` checks
        that the two are one folder)."""

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike[str],
        overrides: Sequence[str] = (),
        *,
        registry: Registry | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Pipeline:
        """Load and validate a pipeline file; raises a located ``ConfigError`` if it is invalid.

        Without a ``registry``, the components are discovered under the pipeline's
        ``trust`` (and the user config's): untrusted distributions are never imported.
        """
        if registry is None:
            return cls(*load_trusted(path, overrides, environ))
        return cls(load_pipeline(path, registry, overrides, environ), registry)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        overrides: Sequence[str] = (),
        *,
        registry: Registry | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Pipeline:
        """A pipeline built in code, validated exactly as a file is.

        ``data`` holds what a pipeline file holds (``pipeline``, ``loader``, ``model``,
        ``sink``...); ``${VAR}`` and ``overrides`` apply as they do to a file. A problem
        is a located ``ConfigError`` whose place is the path of keys that leads to it
        (``Pipeline.from_dict['model']['with']['max_lenght']``).
        """
        located = prepare_data(data, DICT_SOURCE, overrides, environ)
        if registry is None:
            return cls(*resolve_trusted(located, environ))
        return cls(resolve_located(located, registry, environ=environ), registry)

    def to_dict(self) -> dict[str, Any]:
        """The pipeline as plain data, as a file would hold it (settings left at their
        defaults are left out). A string that held ``${VAR}`` is written as it was
        written, never with the variable's value (it may be a secret); any other ``${``
        is a literal one (a ``--set`` value, which is not interpolated), written ``$${``
        so that reading the file back does not fill it from the environment."""
        data: dict[str, Any] = _escaped(
            self.resolved.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        )
        located = self.resolved.located
        for path, (template, filled) in (located.templates if located else {}).items():
            _restore(data, path, template, _escaped(filled))
        return data

    def to_yaml(self) -> str:
        """The pipeline as a YAML file; :meth:`from_yaml` of it is an equal pipeline."""
        return yaml.dump(self.to_dict(), Dumper=Yaml12Dumper, sort_keys=False, allow_unicode=True)

    def __eq__(self, other: object) -> bool:
        """Two pipelines are equal when they validate to the same settings."""
        if not isinstance(other, Pipeline):
            return NotImplemented
        return self.resolved.spec == other.resolved.spec

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """Short, for a notebook's ``Out[]``: its name and its loader, model and sink."""
        spec = self.resolved.spec
        parts = " -> ".join(clipped(ref.use, 40) for ref in (spec.loader, spec.model, spec.sink))
        return f"<Pipeline {clipped(spec.pipeline, 60)!r}: {parts}>"

    def run(
        self,
        extra_monitors: Sequence[Monitor[Any] | MonitorLike] = (),
        *,
        resume: bool = False,
        restart: bool = False,
    ) -> RunSummary:
        """Run to completion on the pipeline's executor and return the one summary.

        ``extra_monitors`` are observers the embedding application adds without
        registering them as components (the CLI's progress bar is one); they see the
        shards run in this process (all of them with ``local``), and the progress of
        shards run elsewhere as their executor forwards it (executor contract 1.2:
        ``ray``), as one run that ends on the summary's counts. ``resume`` continues
        an interrupted run from the sink's last checkpoint, or a staged run from its
        shards' (a sink that is not resumable raises ``UserError``). A sink refuses a
        checkpoint that the model, the pipeline or the input no longer matches
        (``ResumeRefused``, naming what changed); with ``restart`` the run starts over
        instead. The output is published only when every shard has finished.
        """
        _check_run_arguments(extra_monitors, resume=resume, restart=restart)
        self._check_working_folder()
        check_propagators()  # OpenTelemetry would raise a bare ValueError in the run
        # A forked child's model would wait for ever: the RuntimeError python.md promises,
        # raised here, not wrapped by the run into a ShardFailed advising --resume.
        refuse_after_fork("this pipeline's model")
        jax_devices()  # a platform JAX cannot start: said now, before the run begins
        self._warn_unread_telemetry()
        try:
            return self._run(extra_monitors, resume=resume)
        except ResumeRefused as refused:
            if not (resume and restart):
                raise
            log.warning("cannot resume; starting over (restart)", reason=str(refused))
        return self._run(extra_monitors, resume=False)

    def _warn_unread_telemetry(self) -> None:
        """Warn once a process that the pipeline's ``telemetry`` section is not read
        here: the ``seamline`` command sets its exporters up, a library never configures
        the application's telemetry, and a ``traces_file`` nobody writes was a silent loss."""
        spec = self.resolved.spec
        warn_unread_telemetry(spec.pipeline, spec.telemetry, TelemetrySettings(), "Pipeline.run()")

    def _check_working_folder(self) -> None:
        """Refuse a run from another working folder than the one validated in: the sink's
        relative paths would still be the first folder's, the loader's the second's, so the
        run would read one folder's input and write beside the other."""
        here = working_folder()
        if here != self.validated_in:
            raise UserError(
                f"this pipeline was validated in {self.validated_in!r} and is run in "
                f"{here!r}: its sink's relative paths are the first folder's, its loader's "
                "would be read in the second. Build the pipeline where it runs "
                "(Pipeline.from_yaml or from_dict after changing folder), or run it from "
                f"{self.validated_in!r}"
            )

    def _run(self, extra_monitors: Sequence[MonitorLike], *, resume: bool) -> RunSummary:
        """One attempt of :meth:`run`.

        The executor's calls cross a :class:`~seamline.core.seams.Seam` like every
        component call (spans ``seamline.executor.execute`` and ``.close``; an exception
        leaving them names the executor, unless a component's call inside named itself
        first). The driver runs no monitors: those seams report to spans and logs.
        """
        started = time.perf_counter()
        executor = self._executor()
        hidden = self.resolved.span_hidden(self.registry.trust.network_variables)
        seam = Seam(executor, self.registry.info_of(executor), MonitorHub(()), hidden)
        job = PipelineJob(self.resolved, self.registry, extra_monitors, resume=resume)
        attributes = {
            "seamline.pipeline": self.resolved.spec.pipeline,
            "seamline.run_id": job.run_id,
            EXECUTOR: executor.name,
        }
        with stops_kept(), owned_span("seamline.run", attributes=attributes) as root:
            inject(job.trace_context)  # the shards' parent: the run, not execute
            executing = published = False
            try:
                job.resolved = self._decided(job.kept)  # spans of the run's
                raise_kept_stop()
                executing = True
                with seam.call("execute", {"seamline.run_id": job.run_id}):
                    report = executor.execute(job)
                    check_report(report, job.tasks, job.count)  # broken: the executor named
                raise_kept_stop()  # a Ctrl-C Python dropped: nothing is published
                job.publish(report)
                published = True
                after = job.after_publishing()  # spans of the run's, like publish's
            except BaseException as err:
                if isinstance(err, KeyboardInterrupt):
                    if not executing and not resume:
                        setattr(err, NOTHING_COMMITTED, True)  # before the output was met
                    add_stop_note(err, begun=executing, published=published)  # what is kept
                record_failure(root, err)  # the error itself, frames and all
                placed = placed_loader_error(err, self.resolved)  # file:line:column, as validate's
                if placed is not err:  # the user's to fix: not 14 frames of the host's
                    raise placed from None  # (the span keeps them; __context__ too)
                raise
            finally:
                try:
                    with seam.call("close"):
                        executor.close()
                finally:
                    job.close()
            root.set_attribute("seamline.run_id", job.run_id)  # a resumed run keeps its id
            seconds = time.perf_counter() - started
            summary = summarize(job, report, seconds, after.changes, after.older_versions)
            if after.problem is not None:  # the output stands: its summary, then the problem
                failed = PublishedButFailed(after.problem, summary)
                record_failure(root, failed)
                raise failed
        return summary

    def _decided(self, keep: KeptModel | None = None) -> ResolvedPipeline:
        """The pipeline with its model's weights pinned and its precision negotiated.

        Decided at the driver, before any shard runs, so every worker computes in the
        same precision with the same weights (a worker whose weights differ refuses
        them, :mod:`seamline.core.pinning`); the gate's figures are recorded, so a later
        run reuses them. The pin comes first, every run (the files may have changed
        since the last), so that the gate's records are keyed by it and the weights are
        hashed once. The precision is negotiated once per pinned model: a second run of
        this object with the same weights keeps the decision, one whose weights changed
        in between negotiates again (its gate checked the old weights, not these).
        """
        pinned_pipeline = pinned_model(self.resolved, self.registry, keep)
        if self.resolved.precision is not None:  # decided by whoever built the pipeline
            return pinned_pipeline
        if self._precision_for is not None and self._precision_for[0] == pinned_pipeline.model:
            return replace(pinned_pipeline, precision=self._precision_for[1])
        decision = decide_precision(pinned_pipeline, self.registry)
        self._precision_for = (pinned_pipeline.model, decision)
        return replace(pinned_pipeline, precision=decision)

    def _executor(self) -> Executor[Any]:
        choice = self.resolved.executor
        if choice is None:
            installed = ", ".join(self.registry.names("executor")) or "none"
            raise UserError(
                f"{self.resolved.source}: the pipeline names no executor (run.executor) and no "
                "installed executor declares itself the default (seamline-components' 'local' "
                f"does); installed executors: {installed}"
            )
        return build_executor(choice, self.registry, self.resolved)


def _escaped(value: Any) -> Any:
    """``value`` with each ``${`` in its strings written ``$${``, as a file writes a literal
    one: ``--set 'sink.with.path=out/${TOKEN}.jsonl'`` keeps the text, and ``to_yaml``
    wrote it as it was, which reading the file back filled from ``$TOKEN``."""
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, dict):
        return {key: _escaped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_escaped(item) for item in value]
    return value


def _restore(data: Any, path: tuple[str | int, ...], template: str, filled: str) -> None:
    """Put ``template`` back at ``path`` in ``data`` if the value there is still ``filled``
    (a ``--set`` that replaced it, or a default left out, leaves it alone)."""
    *parents, last = path
    for step in parents:
        data = _child(data, step)
    if _child(data, last) == filled:
        data[last] = template


def _child(data: Any, step: str | int) -> Any:
    if isinstance(data, dict):
        return data.get(step)
    if isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data):
        return data[step]
    return None


def summarize(
    job: PipelineJob,
    report: ExecutionReport,
    seconds: float,
    changes: Mapping[str, int] | None = None,
    older_versions: OlderVersions | None = None,
) -> RunSummary:
    """One summary of every shard: counts added up, the run's wall time.

    What the output held before is known only if it is known for every shard: a shard
    that an earlier run finished, or one resumed from a checkpoint that did not record
    it, makes it unknown (the summary then reports this run's work alone, and says so).
    """
    shards = report.shards
    firsts = [s.first_output_seconds for s in shards if s.first_output_seconds is not None]
    resumed = [s.resumed_from for s in shards if s.resumed_from is not None]
    finished_before = sorted(
        set(job.finished_before) | {s.shard.index for s in shards if s.finished_before}
    )
    befores = [s.committed_before for s in shards]
    known = not finished_before and all(before is not None for before in befores)
    return RunSummary(
        run_id=job.run_id,
        pipeline=job.pipeline,
        counts=sum((s.counts for s in shards), RunCounts()),
        committed_before=sum(filter(None, befores), RunCounts()) if known else None,
        compilations=sum(s.compilations for s in shards),
        seconds=seconds,
        attention=merge_attention(shards),
        resumed_from=resumed[0] if job.count == 1 and resumed else None,
        first_output_seconds=min(firsts) if firsts else None,
        executor=report.executor,
        shards=tuple(sorted(shards, key=lambda s: s.shard.index)),
        workers=report.workers,
        shard_count=job.count or 1,
        finished_before=tuple(finished_before),
        provenance=provenance(job.resolved),
        changes=changes,
        older_versions=older_versions,
    )


def _check_run_arguments(extra_monitors: object, **flags: object) -> None:
    """Refuse what :meth:`Pipeline.run` would misread, before any work: ``resume="no"`` is
    true to Python (it resumed), ``run("x")`` or ``run(True)`` (meaning ``resume``) is not a
    sequence of monitors (a bare AttributeError or TypeError from deep inside), and a
    monitor without a ``name`` or ``bind`` failed the run as a ``ShardFailed`` advising
    ``--resume``."""
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, not {type(flag).__name__}")
    check_monitors(
        extra_monitors,
        "extra_monitors",
        hint="; resume and restart are keywords: run(resume=True)",
    )
