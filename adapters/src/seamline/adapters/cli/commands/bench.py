"""``seamline bench``: benchmarks, side by side in one run."""

from __future__ import annotations

import typer

from seamline.adapters.cli.conventions import Group

app = typer.Typer(help="Benchmarks, side by side in one run.", no_args_is_help=True, cls=Group)


@app.command(
    "attention",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def attention(ctx: typer.Context) -> None:
    """Every installed attention over sequence lengths: time and peak memory, ratios to native.

    Options are the benchmark's own (see `seamline bench attention --help`). Exit code 0
    when at least one cell was measured, 1 when nothing was, 2 on a usage error.
    """
    from seamline.adapters.cli.errors import user_errors
    from seamline.contracts.workdir import working_folder

    user_errors(working_folder)  # its paths are the working folder's: a traceback if gone
    from seamline.adapters.bench_attention import main as run_benchmark

    raise typer.Exit(run_benchmark(list(ctx.args)))
