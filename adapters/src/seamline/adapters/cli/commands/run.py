"""``seamline run``: load, embed and write every document of a pipeline."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from functools import partial
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from seamline.adapters.cli import STARTED
from seamline.adapters.cli.errors import (
    PUBLISHED_NOTHING,
    committed_or_not,
    environment_errors,
    interrupts,
    usage_error,
    user_errors,
)
from seamline.adapters.cli.options import (
    CompileCache,
    FormatOption,
    PipelineArg,
    SetOption,
    offering,
    output_format,
)
from seamline.adapters.cli.render.console import consoles, on_a_terminal, records_on_stderr
from seamline.adapters.cli.stopping import terminate_as_interrupt
from seamline.adapters.otel_environment import check_otel_environment
from seamline.contracts.errors import NOTHING_TO_RESUME

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from seamline.adapters.cli.publication import Publication
    from seamline.core import Pipeline, PublishedButFailed, RunSummary

LOG_FORMATS = {"auto": None, "json": True, "console": False}
"""``--log-format`` → ``configure_logging(json=...)`` (None: console on a terminal)."""
LOG_LEVELS = ("debug", "info", "warning", "error")
KEPT = (
    "the output was not published, and what the sink last committed is kept: "
    "fix that, then run again with --resume"
)
"""What a failure of the machine around the run leaves, and what to do."""
NOTHING_KEPT = (
    "the output was not published, and nothing was committed, so a run again starts from "
    "the beginning: fix that, then run again (--resume is not needed)"
)
"""What such a failure before the run's first commit leaves (a read-only or full output
folder): there is no commit for ``--resume`` to go on from."""
INTERRUPTED = (
    f"{PUBLISHED_NOTHING}; what the sink last committed is kept: run again with --resume to "
    "go on from it"
)
"""What Ctrl-C or a SIGTERM leaves of a run."""
AFTER_PUBLISHING = "after the output was published"
"""Where a stop after the publication came, said after ``interrupted (SIGTERM)``."""
PUBLISHED = (
    f"{NOTHING_TO_RESUME}: a run again, with --resume or not, would start from the beginning "
    "(and a sink that appends would add every document again)"
)
"""What a stop after the run published its output leaves: the output (it said "nothing was
published ... run again with --resume", which appended a LanceDB table's rows twice)."""
NOT_BEGUN = f"{PUBLISHED_NOTHING}; the run had not begun, so its output is as it was"
"""What a stop before the run began leaves: the output untouched (it said a commit was kept
when there was none, and no output folder either)."""

LogFormat = Annotated[
    str,
    typer.Option(
        "--log-format",
        help="auto (console on a terminal), json or console.",
        metavar="[auto|json|console]",
        autocompletion=offering(*LOG_FORMATS),
    ),
]
LogLevel = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        metavar="[debug|info|warning|error]",
        autocompletion=offering(*LOG_LEVELS),
        help="debug, info, warning or error (default: warning on a terminal, where the progress "
        "bar reports, else info).",
    ),
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue an interrupted run from the sink's last checkpoint instead of "
        "starting over (the sink must be resumable, as every first-party sink is). It refuses "
        "when the model, the pipeline file or the input changed since that checkpoint.",
    ),
]
Restart = Annotated[
    bool,
    typer.Option(
        "--restart",
        help="With --resume: when the checkpoint cannot be resumed because the model, the "
        "pipeline file or the input changed, start over instead of refusing. Alone: start "
        "over (as without --resume).",
    ),
]
Verbose = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="A longer summary: the reconciliation of every item read, tokens, batches, "
        "attention per shape, and each component's distribution and the pipeline's hashes.",
    ),
]


def run(
    pipeline: PipelineArg,
    overrides: SetOption = None,
    log_format: LogFormat = "auto",
    log_level: LogLevel = None,
    compile_cache: CompileCache = True,
    resume: Resume = False,
    restart: Restart = False,
    verbose: Verbose = False,
    format_: FormatOption = "text",
) -> None:
    """Run a pipeline: load, embed and write every document."""
    from seamline.core import stdout_to_stderr, stops_kept  # the package alone: no JAX yet

    # A SIGTERM (a scheduler's, `timeout`'s) or SIGHUP stops the run as Ctrl-C does, until
    # the summary is printed: one after the output was published says so (it was killed
    # by the signal's default action while the summary printed, without a line).
    # A stop Python drops while JAX is imported (in its GC callback) is kept, and raised
    # before the run begins: it let the run go on, publish and exit 0.
    told = StopTold()
    # --log-format json: the line that says why the run ended is a record, as the logs are.
    with (
        records_on_stderr(log_format == "json"),
        terminate_as_interrupt() as block,
        stops_kept(),
        interrupts(told),
    ):
        as_json = output_format(format_) == "json"
        # What a component prints while it runs (a monitor's report) went into the middle
        # of the one JSON document on stdout: stdout is the document's alone, its
        # descriptor too (as while plugins are imported), since a C library or
        # os.write(1, ...) got past Python's own stream.
        others_to_stderr = stdout_to_stderr() if as_json else contextlib.nullcontext()
        with others_to_stderr:
            summary, loaded, run_started, problem = _run(
                pipeline, overrides, log_format, log_level, compile_cache, resume, restart, told
            )
        told.done = True  # whatever its sink: the run returned, its output published
        from seamline.adapters.cli.outputs import output_place
        from seamline.adapters.cli.render.run import run_summary
        from seamline.adapters.cli.render.run_json import run_summary_json

        place = output_place(loaded)
        if as_json:
            run_summary_json(summary, place)
        else:
            run_summary(summary, before_run=run_started - STARTED, place=place, verbose=verbose)
        block.after = told.published()  # a signal while Python exits: said too
        if problem is not None:  # published, then left something undone: said after the summary
            user_errors(partial(_raise, problem))


def _raise(problem: Exception) -> NoReturn:
    """``problem`` raised inside :func:`user_errors`, to be said as every user error is (its
    line, or its record under JSON logs, and exit code 2)."""
    raise problem


class StopTold:
    """What a stop of ``seamline run`` leaves, by how far the run got: not begun, under way
    (the last commit, ``--resume``), or past publishing its output (nothing to resume)."""

    def __init__(self) -> None:
        self.pipeline: Pipeline | None = None
        self.publication: Publication | None = None
        """Set just before the run begins (None: it has not)."""
        self.done = False
        """The run returned its summary: the output is published."""

    def __call__(self, stop: KeyboardInterrupt) -> tuple[str, str]:
        if self.publication is None or self.pipeline is None:
            return "", committed_or_not(stop, NOT_BEGUN)
        if not (self.done or self.publication.happened()):
            return "", committed_or_not(stop, INTERRUPTED)
        return self.published()

    def published(self) -> tuple[str, str]:
        """What a stop after the output was published says: where, and that it is complete."""
        place = None
        if self.pipeline is not None:
            from seamline.adapters.cli.outputs import output_place

            place = output_place(self.pipeline)
        output = (place.path or place.manifest) if place is not None else None
        return AFTER_PUBLISHING, PUBLISHED.format(output=output or "the output")


def _run(
    pipeline: Path,
    overrides: list[str] | None,
    log_format: str,
    log_level: str | None,
    compile_cache: bool,
    resume: bool,
    restart: bool,
    told: StopTold,
) -> tuple[RunSummary, Pipeline, float, PublishedButFailed | None]:
    """Load the pipeline and run it: its summary, the pipeline, when the run began, and
    what its sink left undone once the output was published (:class:`PublishedButFailed`,
    said after the summary: the output stands, and the summary is what it holds).

    ``told`` learns when the run begins, so that a stop is told by how far it got.
    """
    before = partial(user_errors, kept_on_interrupt=NOT_BEGUN)  # a stop says so, not bare
    before(lambda: check_otel_environment(os.environ))  # before the SDK reads it
    from seamline.adapters import telemetry_setup
    from seamline.adapters.cli.publication import Publication
    from seamline.adapters.cli.render.progress import ProgressMonitor
    from seamline.adapters.trace_parent import joined_from_environment
    from seamline.core import Pipeline, raise_kept_stop

    interactive = on_a_terminal(sys.stderr)  # not FORCE_COLOR's: a bar only for a person
    configure_logging(log_format, log_level, interactive)
    if compile_cache:
        from seamline.adapters.compile_cache import enable_compile_cache

        before(enable_compile_cache)
    loaded = before(lambda: Pipeline.from_yaml(pipeline, overrides or ()))
    # The pipeline's telemetry: section wins over the OTEL_* variables.
    before(
        lambda: telemetry_setup.configure_telemetry(
            loaded.resolved.spec.telemetry, no_metrics=_no_metrics(loaded)
        )
    )
    raise_kept_stop()  # one Python dropped so far: the run does not begin
    told.pipeline, told.publication = loaded, Publication.of(loaded)
    try:
        extra = [ProgressMonitor(consoles.err)] if interactive else []
        run_started = time.perf_counter()
        with joined_from_environment(os.environ):  # TRACEPARENT: a CI job's trace
            ran = user_errors(
                lambda: environment_errors(
                    lambda: _summary_or_problem(
                        lambda: loaded.run(extra_monitors=extra, resume=resume, restart=restart)
                    ),
                    KEPT,
                    writing=getattr(loaded.resolved.sink.config, "path", None),
                    nothing_committed=NOTHING_KEPT,
                    before_the_run=KEPT if resume else NOTHING_KEPT,
                ),
                kept_on_interrupt=told,
            )
    finally:
        telemetry_setup.shutdown_telemetry()  # a stop in it: told by the command's block
    summary, problem = ran
    return summary, loaded, run_started, problem


def _summary_or_problem(
    run: Callable[[], RunSummary],
) -> tuple[RunSummary, PublishedButFailed | None]:
    """``run``'s summary, and what the sink left undone after publishing, if it did."""
    from seamline.core import PublishedButFailed

    try:
        return run(), None
    except PublishedButFailed as failed:
        return failed.summary, failed


def _no_metrics(loaded: Pipeline) -> str | None:
    """What to do when a metric exporter is asked for and no monitor records metrics: a
    run's metrics are what its ``metrics`` monitor records, and without one
    ``OTEL_METRICS_EXPORTER=otlp`` exported nothing, without a word."""
    if any(choice.name == "metrics" for choice in loaded.resolved.monitors):
        return None
    return (
        "a run's metrics are recorded by its metrics monitor, and this pipeline has none: "
        "add `monitors: [{use: metrics}]` to it (or --set monitors='[{use: log}, "
        "{use: metrics}]')"
    )


def configure_logging(log_format: str, log_level: str | None, interactive: bool) -> None:
    """Check ``--log-format`` and ``--log-level`` (exit code 2), then set logging up.

    On a terminal the progress bar reports; per-batch lines would only scroll it away,
    so the default level there is ``warning``.
    """
    from seamline.adapters.logging_setup import configure_logging as configure

    if log_format not in LOG_FORMATS:
        usage_error("--log-format must be auto, json or console")
    if log_level is not None and log_level not in LOG_LEVELS:
        usage_error(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
    level = log_level or ("warning" if interactive else "info")
    configure(json=LOG_FORMATS[log_format], level=level)
