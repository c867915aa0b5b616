"""``seamline explain``: which attention would serve each shape bucket, and why."""

from __future__ import annotations

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import USAGE, user_errors
from seamline.adapters.cli.options import PipelineArg, SetOption


def explain(pipeline: PipelineArg, overrides: SetOption = None) -> None:
    """Show which attention would serve each shape bucket, and why the others would not.

    Nothing runs and, for models that can describe their parameters, no weights are read.
    """
    from seamline.adapters.cli.render.pipeline import provenance, untrusted
    from seamline.adapters.cli.render.plan import plan as show_plan
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core import explain_attention, pipeline_provenance

    configure_logging(level="warning")
    resolved, registry = loading.pipeline(pipeline, overrides)
    plan = user_errors(lambda: explain_attention(resolved, registry))
    show_plan(plan)
    provenance(pipeline_provenance(resolved))
    untrusted(registry)
    if any(bucket.chosen is None for bucket in plan.buckets):
        raise typer.Exit(USAGE)  # a shape no candidate serves: a run would refuse it
