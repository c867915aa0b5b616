"""``seamline validate``: check pipeline files without running them."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import USAGE, Report, user_errors
from seamline.adapters.cli.options import FormatOption, PipelinesArg, SetOption, output_format
from seamline.adapters.otel_environment import check_otel_environment

if TYPE_CHECKING:
    from seamline.contracts.errors import UserError
    from seamline.core import Registry, ResolvedPipeline

FAILED = (1, USAGE)
"""The exit codes of a file that failed (a component's failure, a user's mistake): the next
file is checked all the same. Any other (a stop: 130, 143) ends the command."""


def validate(
    pipelines: PipelinesArg, overrides: SetOption = None, format_: FormatOption = "text"
) -> None:
    """Check pipeline files without running them (every error is reported with its location).

    The model is built as a run builds it, so it reads its configuration: a checkpoint
    it cannot run (another architecture, a missing file, weights that do not match their
    config.json) is refused here, without reading the weights. With --format json, one
    document on stdout per file (schema seamline.validate/1), errors included: a pipeline
    that does not validate still exits with code 2. Several files are checked in one
    process (a CI job's 20 files pay the start-up once); --set applies to each.
    """
    from seamline.adapters.logging_setup import configure_logging

    as_json = output_format(format_) == "json"
    # A warning a model logs as it is built (a checkpoint's default prompt) is a log line,
    # as explain and run print it, not structlog's fallback's bare event="...": set up
    # once, for every file.
    configure_logging(level="warning")
    # Each file is checked whole, as if it were alone: its own trust, so its own registry
    # (discovered again, cheaply: the components' modules are imported once per process).
    several = len(pipelines) > 1
    failures: dict[Path, int] = {}
    for pipeline in pipelines:
        try:
            _one(pipeline, overrides, as_json=as_json, several=several)
        except typer.Exit as failed:
            if not several or failed.exit_code not in FAILED:
                raise
            failures[pipeline] = failed.exit_code
    if failures:
        _summary(len(pipelines), failures)


def _one(pipeline: Path, overrides: list[str] | None, *, as_json: bool, several: bool) -> None:
    """Check one file and print what ``validate`` prints of it: its lines, or its document."""
    if not as_json:
        from seamline.adapters.cli.render.pipeline import validated

        # With several files, a failure is headed by its file: an error such as a --set's
        # or an OTEL_* variable's names no file of its own.
        heading = partial(_failed_file, pipeline) if several else None
        resolved, registry = _checked(pipeline, overrides, heading)
        validated(pipeline, resolved, registry)
        return
    from seamline.adapters.cli.render import pipeline_json

    document = partial(pipeline_json.failed, pipeline_json.VALIDATE_SCHEMA, pipeline)

    def failed(problem: UserError | str) -> None:
        document(problem)
        if several:
            _failed_file(pipeline, problem)

    resolved, registry = _checked(pipeline, overrides, failed)
    pipeline_json.validated(pipeline, resolved, registry)


def _failed_file(pipeline: Path, problem: UserError | str) -> None:
    """The line before a failed file's errors, when several files are checked."""
    from seamline.adapters.cli.render.console import error

    error(f"{pipeline}:", label="failed")


def _summary(checked: int, failures: dict[Path, int]) -> None:
    """The last line of several files' check, naming those that failed; exit code 2 when a
    user's mistake is among them, else 1 (a component failed)."""
    from seamline.adapters.cli.render.console import error

    names = ", ".join(str(path) for path in failures)
    error(f"{len(failures)} of {checked} pipeline files did not validate: {names}")
    raise typer.Exit(max(failures.values()))


def _checked(
    pipeline: Path, overrides: list[str] | None, report: Report | None
) -> tuple[ResolvedPipeline, Registry]:
    """The pipeline resolved, and its model and executor built (then dropped) to check
    what they name (the executor: whether what it needs is installed, the ray executor's Ray).

    The ``OTEL_*`` variables are checked as ``run`` checks them: a CI job that validated
    before running passed ``OTEL_TRACES_EXPORTER=bogus``, and the run then refused it.
    """
    from seamline.adapters import telemetry_setup
    from seamline.core import check_executor, check_model

    user_errors(lambda: check_otel_environment(os.environ), report)
    resolved, registry = loading.pipeline(pipeline, overrides, report)
    user_errors(lambda: telemetry_setup.resolve(resolved.spec.telemetry), report)
    user_errors(lambda: check_model(resolved, registry), report)
    user_errors(lambda: check_executor(resolved, registry), report)
    return resolved, registry
