"""``seamline validate``: check a pipeline file without running it."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import Report, user_errors
from seamline.adapters.cli.options import FormatOption, PipelineArg, SetOption, output_format
from seamline.adapters.otel_environment import check_otel_environment

if TYPE_CHECKING:
    from seamline.core import Registry, ResolvedPipeline


def validate(
    pipeline: PipelineArg, overrides: SetOption = None, format_: FormatOption = "text"
) -> None:
    """Check a pipeline file without running it (every error is reported with its location).

    The model is built as a run builds it, so it reads its configuration: a checkpoint
    it cannot run (another architecture, a missing file, weights that do not match their
    config.json) is refused here, without reading the weights. With --format json, one
    document on stdout (schema seamline.validate/1), errors included: a pipeline that
    does not validate still exits with code 2.
    """
    if output_format(format_) == "text":
        from seamline.adapters.cli.render.pipeline import validated

        resolved, registry = _checked(pipeline, overrides, None)
        validated(pipeline, resolved, registry)
        return
    from seamline.adapters.cli.render import pipeline_json

    failed = partial(pipeline_json.failed, pipeline_json.VALIDATE_SCHEMA, pipeline)
    resolved, registry = _checked(pipeline, overrides, failed)
    pipeline_json.validated(pipeline, resolved, registry)


def _checked(
    pipeline: Path, overrides: list[str] | None, report: Report | None
) -> tuple[ResolvedPipeline, Registry]:
    """The pipeline resolved, and its model and executor built (then dropped) to check
    what they name (the executor: whether what it needs is installed, the ray executor's Ray).

    The ``OTEL_*`` variables are checked as ``run`` checks them: a CI job that validated
    before running passed ``OTEL_TRACES_EXPORTER=bogus``, and the run then refused it.
    """
    from seamline.adapters import telemetry_setup
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core import check_executor, check_model

    # A warning the model logs as it is built (a checkpoint's default prompt) is a log
    # line, as explain and run print it, not structlog's fallback's bare event="...".
    configure_logging(level="warning")
    user_errors(lambda: check_otel_environment(os.environ), report)
    resolved, registry = loading.pipeline(pipeline, overrides, report)
    user_errors(lambda: telemetry_setup.resolve(resolved.spec.telemetry), report)
    user_errors(lambda: check_model(resolved, registry), report)
    user_errors(lambda: check_executor(resolved, registry), report)
    return resolved, registry
