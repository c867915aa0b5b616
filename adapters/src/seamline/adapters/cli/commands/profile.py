"""``seamline profile``: run a pipeline under the JAX profiler."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli.errors import user_errors
from seamline.adapters.cli.options import (
    CompileCache,
    PipelineArg,
    SetOption,
    compile_cache_on,
    named_path,
)
from seamline.adapters.otel_environment import check_otel_environment

Out = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Directory the profiler writes its trace to.",
        metavar="DIR",
        parser=named_path("name the directory for the trace (it is created when missing)"),
    ),
]


METADATA_IN_KEY = "jax_compilation_cache_include_metadata_in_key"


@contextmanager
def names_in_cache_key() -> Iterator[None]:
    """Key JAX's persistent cache by the programs' op names too, while a profile runs.

    The cache keys an executable without its op names, so an executable loaded from it
    names its ops as the program that first compiled it did: the same computation
    under another model's scope would show that model in this profile. Keyed with
    the names, a hit is an executable whose names are this run's.
    """
    import jax

    before = bool(getattr(jax.config, METADATA_IN_KEY))
    jax.config.update(METADATA_IN_KEY, True)
    try:
        yield
    finally:
        jax.config.update(METADATA_IN_KEY, before)


def profile(
    pipeline: PipelineArg,
    overrides: SetOption = None,
    out: Out = Path("seamline-profile"),
    compile_cache: CompileCache = True,
) -> None:
    """Run a pipeline under the JAX profiler: a trace for Perfetto or TensorBoard.

    Inside the compiled code each seam is a named scope: look for
    seamline/model/<name> and seamline/attention/<name>. With the compile cache on (the
    default, as for run), a second profile loads its programs instead of compiling them:
    --no-compile-cache profiles the compiles too.
    """
    import jax

    user_errors(lambda: check_otel_environment(os.environ))  # before the SDK reads it
    from seamline.adapters import telemetry_setup
    from seamline.adapters.cli.render.run import profile_summary
    from seamline.adapters.logging_setup import configure_logging
    from seamline.adapters.trace_parent import joined_from_environment
    from seamline.core import Pipeline, output_directory

    configure_logging(level="warning")
    compile_cache_on(compile_cache)
    loaded = user_errors(lambda: Pipeline.from_yaml(pipeline, overrides or ()))
    user_errors(lambda: telemetry_setup.configure_telemetry(loaded.resolved.spec.telemetry))
    # Made and tried before the run: a file or a read-only place there is one line, not a
    # traceback after the run's work is done.
    user_errors(lambda: output_directory(out, "--out names"))
    before = set(out.rglob("*"))
    try:
        with (
            names_in_cache_key(),
            jax.profiler.trace(str(out), create_perfetto_trace=True),
            joined_from_environment(os.environ),  # TRACEPARENT: a CI job's trace
        ):
            summary = user_errors(lambda: loaded.run())
    finally:
        telemetry_setup.shutdown_telemetry()
    written = sorted(p for p in set(out.rglob("*")) - before if p.is_file())
    profile_summary(summary, out, written)
