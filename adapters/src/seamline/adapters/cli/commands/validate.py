"""``seamline validate``: check a pipeline file without running it."""

from __future__ import annotations

from seamline.adapters.cli import loading
from seamline.adapters.cli.options import PipelineArg, SetOption


def validate(pipeline: PipelineArg, overrides: SetOption = None) -> None:
    """Check a pipeline file without running it (every error is reported with its location)."""
    from seamline.adapters.cli.render.pipeline import validated

    resolved, registry = loading.pipeline(pipeline, overrides)
    validated(pipeline, resolved, registry)
