"""``seamline explain``: which attention would serve each shape bucket, and why."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import USAGE, user_errors
from seamline.adapters.cli.options import FormatOption, PipelineArg, SetOption, output_format

if TYPE_CHECKING:
    from seamline.core import Plan, Registry, ResolvedPipeline


def explain(
    pipeline: PipelineArg, overrides: SetOption = None, format_: FormatOption = "text"
) -> None:
    """Show which attention would serve each shape bucket, and why the others would not,
    and which precisions the model could compute in here.

    Nothing runs and, for models that can describe their parameters, no weights are read.
    With --format json, one document on stdout (schema seamline.explain/1).
    """
    from seamline.adapters.cli.render import pipeline_json
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core import explain_attention

    as_text = output_format(format_) == "text"
    configure_logging(level="warning")
    report = (
        None if as_text else partial(pipeline_json.failed, pipeline_json.EXPLAIN_SCHEMA, pipeline)
    )
    resolved, registry = loading.pipeline(pipeline, overrides, report)
    from seamline.core import preview_precision, serving_precision

    mode, precisions = user_errors(lambda: preview_precision(resolved, registry), report)
    # The attention is planned for the precision the run would compute in: its specs
    # carry that dtype, which decides what some kernels can serve.
    expected = user_errors(
        lambda: serving_precision(precisions),
        None
        if as_text
        else partial(pipeline_json.unservable, pipeline, resolved, registry, (mode, precisions)),
    )
    plan = user_errors(lambda: explain_attention(resolved, registry, expected), report)
    if as_text:
        _show(plan, resolved, registry)
        from seamline.adapters.cli.render.plan import precision

        if mode != "explicit" or [c.name for c in precisions] != ["float32"]:
            precision(mode, precisions)  # the default, float32 alone, goes without saying
    else:
        pipeline_json.explained(pipeline, plan, resolved, registry, (mode, precisions))
    unserved = plan.unserved()
    if unserved is not None:  # a shape no candidate serves: a run would refuse it, so
        from seamline.adapters.cli.render.console import error

        error(str(unserved))
        raise typer.Exit(USAGE)


def _show(plan: Plan, resolved: ResolvedPipeline, registry: Registry) -> None:
    """The plan's tables, then the provenance and untrusted lines ``validate`` ends with."""
    from seamline.adapters.cli.render.pipeline import provenance, untrusted
    from seamline.adapters.cli.render.plan import plan as show_plan
    from seamline.core import pipeline_provenance

    show_plan(plan)
    provenance(pipeline_provenance(resolved))
    untrusted(registry)
