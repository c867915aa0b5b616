"""``seamline tune``: time every attention candidate per shape bucket; fill the tuning cache."""

from __future__ import annotations

from typing import Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import user_errors
from seamline.adapters.cli.options import PipelineArg, SetOption

Again = Annotated[
    bool, typer.Option("--again", help="Measure even what the tuning cache already holds.")
]


def tune(pipeline: PipelineArg, overrides: SetOption = None, again: Again = False) -> None:
    """Time every attention candidate on every shape bucket; fill the tuning cache.

    A pipeline with `attention: {select: measure}` then picks the fastest from the
    cache on its first run instead of measuring. The shapes are those of the precision
    the run computes in (decided first, as a run decides it). No weights are read for
    models that describe their parameter shapes.
    """
    from seamline.core import stops_kept  # the package alone: no JAX yet

    # A Ctrl-C Python drops while JAX is imported or collects garbage is kept, and raised
    # before the next bucket is measured (seamline.core.stops): it let the tune go on.
    with stops_kept():
        from seamline.adapters.cli.render.plan import tuning
        from seamline.adapters.logging_setup import configure_logging
        from seamline.core import TuningCache, negotiated, tune_attention

        configure_logging(level="warning")
        resolved, registry = loading.pipeline(pipeline, overrides)
        resolved = user_errors(lambda: negotiated(resolved, registry))
        cache = user_errors(TuningCache)
        results = user_errors(lambda: tune_attention(resolved, registry, cache, again=again))
    tuning(cache.folder(), results)  # tune_attention made sure there is one
