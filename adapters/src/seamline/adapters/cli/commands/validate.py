"""``seamline validate``: check a pipeline file without running it."""

from __future__ import annotations

from functools import partial

from seamline.adapters.cli import loading
from seamline.adapters.cli.options import FormatOption, PipelineArg, SetOption, output_format


def validate(
    pipeline: PipelineArg, overrides: SetOption = None, format_: FormatOption = "text"
) -> None:
    """Check a pipeline file without running it (every error is reported with its location).

    With --format json, one document on stdout (schema seamline.validate/1), errors
    included: a pipeline that does not validate still exits with code 2.
    """
    if output_format(format_) == "text":
        from seamline.adapters.cli.render.pipeline import validated

        resolved, registry = loading.pipeline(pipeline, overrides)
        validated(pipeline, resolved, registry)
        return
    from seamline.adapters.cli.render import pipeline_json

    failed = partial(pipeline_json.failed, pipeline_json.VALIDATE_SCHEMA, pipeline)
    resolved, registry = loading.pipeline(pipeline, overrides, report=failed)
    pipeline_json.validated(pipeline, resolved, registry)
