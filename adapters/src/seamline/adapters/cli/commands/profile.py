"""``seamline profile``: run a pipeline under the JAX profiler."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli.errors import user_errors
from seamline.adapters.cli.options import PipelineArg, SetOption

Out = Annotated[
    Path,
    typer.Option("--out", "-o", help="Directory the profiler writes its trace to.", metavar="DIR"),
]


def profile(
    pipeline: PipelineArg, overrides: SetOption = None, out: Out = Path("seamline-profile")
) -> None:
    """Run a pipeline under the JAX profiler: a trace for Perfetto or TensorBoard.

    Inside the compiled code each seam is a named scope: look for
    seamline/model/<name> and seamline/attention/<name>.
    """
    import jax

    from seamline.adapters import telemetry_setup
    from seamline.adapters.cli.render.run import profile_summary
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core import Pipeline

    configure_logging(level="warning")
    loaded = user_errors(lambda: Pipeline.from_yaml(pipeline, overrides or ()))
    user_errors(lambda: telemetry_setup.configure_telemetry(loaded.resolved.spec.telemetry))
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.rglob("*"))
    try:
        with jax.profiler.trace(str(out), create_perfetto_trace=True):
            summary = user_errors(lambda: loaded.run())
    finally:
        telemetry_setup.shutdown_telemetry()
    written = sorted(p for p in set(out.rglob("*")) - before if p.is_file())
    profile_summary(summary, out, written)
