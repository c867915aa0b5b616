"""``seamline bench``: benchmarks, side by side in one run."""

from __future__ import annotations

import typer

from seamline.adapters.cli.conventions import Group

SWEEP_STOPPED = (
    "the sweep did not finish: its results (attention.json) are written once every cell has run"
)
"""What a stopped sweep leaves: the report is written when every cell has run (a worker
under way is killed with its driver: :mod:`seamline.adapters.bench_attention.lifeline`)."""

app = typer.Typer(help="Benchmarks, side by side in one run.", no_args_is_help=True, cls=Group)


@app.command(
    "attention",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def attention(ctx: typer.Context) -> None:
    """Every installed attention over sequence lengths: time and peak memory, ratios to native.

    Options are the benchmark's own (see `seamline bench attention --help`). Exit code 0
    when at least one cell was measured, 1 when nothing was, 2 on a usage error; 130 on
    Ctrl-C and 143 on a SIGTERM, with the ``interrupted`` line every command prints (it
    was exit code 130 without a word, and SIGTERM's default: no word either).
    """
    from seamline.adapters.cli.errors import interrupts, user_errors
    from seamline.adapters.cli.stopping import terminate_as_interrupt
    from seamline.contracts.workdir import working_folder

    user_errors(working_folder)  # its paths are the working folder's: a traceback if gone
    with terminate_as_interrupt(), interrupts(SWEEP_STOPPED):
        from seamline.adapters.bench_attention import main as run_benchmark

        code = run_benchmark(list(ctx.args))
    raise typer.Exit(code)
