"""``seamline bench attention`` and ``python -m benchmarks.attention.sweep``: options, exit code.

Exit codes, so that a script or CI can tell a sweep that measured from one that did not:

* 0 -- at least one (implementation, length) was measured. Cells that ran out of
  memory or time at long lengths are results, shown in the table, not errors.
* 1 -- nothing was measured: every worker failed, or no implementation could run
  (none registered under the names asked for, all refused), or the probe of the
  registry failed. ``attention.json`` is still written when the probe worked, with
  each cell's reason.
* 2 -- a usage error (an unknown or invalid option, a results folder that is a file or
  cannot be written).
* 130, 143, 129 -- stopped by Ctrl-C, SIGTERM or SIGHUP, as ``seamline bench attention`` (which
  prints the ``interrupted`` line); the worker under way is killed with the driver.

An output that disagrees with the float64 reference is marked in the table (``!``)
and in red below it, but does not change the exit code: the conformance suite, not
a benchmark, is what judges correctness.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seamline.adapters.bench_attention.driver import NotRegistered, console, run_benchmark
from seamline.adapters.bench_attention.report import measured_cells, print_report
from seamline.adapters.bench_attention.workload import (
    DEFAULT_DTYPE,
    DTYPES,
    MIN_LENGTH,
    SHORTEST_LENGTH,
    default_lengths,
)

EXIT_OK = 0
EXIT_NOTHING_MEASURED = 1
EXIT_USAGE = 2


def _lengths(text: str) -> list[int]:
    """``--lengths``; a word in it (``abc``) says what is wanted, as a number below
    :data:`SHORTEST_LENGTH` does, rather than argparse's ``invalid _lengths value`` (or,
    for a length of 1, a sweep whose every worker failed)."""
    try:
        lengths = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < SHORTEST_LENGTH:
        raise argparse.ArgumentTypeError(
            f"{text!r}: lengths must be comma-separated integers of at least "
            f"{SHORTEST_LENGTH} (the check reads a sequence's first two rows)"
        )
    return lengths


def _folder(text: str) -> Path:
    """``--out``'s folder; an empty one is refused (``Path("")`` is the working directory,
    which the user did not name)."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty: name the results folder")
    return Path(text)


class _ShowHelp(argparse.Action):
    """``--help`` that lets a failed write reach the caller.

    argparse's own help action writes through ``_print_message``, which swallows
    ``OSError``: ``seamline bench attention --help >/dev/full`` printed nothing and
    exited 0, where every other command says it could not write and exits 1. This one
    writes to ``sys.stdout`` directly, so the command line's stdout guard sees the failure.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(parser.format_help())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seamline bench attention",
        add_help=False,
        description="Attention implementations side by side: time and peak memory over "
        "sequence lengths.",
        epilog="Exit codes: 0 at least one cell measured; 1 nothing measured (every worker "
        "failed, or nothing could run); 2 usage error.",
    )
    parser.add_argument(
        "-h", "--help", action=_ShowHelp, nargs=0, help="show this help message and exit"
    )
    parser.add_argument(
        "--max-length",
        type=int,
        metavar="N",
        default=16384,
        help="longest power of two from 128 (default 16384)",
    )
    parser.add_argument(
        "--lengths",
        type=_lengths,
        metavar="N[,N...]",
        help=f"comma-separated, at least {SHORTEST_LENGTH} each; overrides",
    )
    parser.add_argument(
        "--implementations",
        metavar="NAME[,NAME...]",
        help="comma-separated names (default: every one discovered)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, metavar="N", help="timed calls per length (default 3)"
    )
    parser.add_argument(
        "--long-repeats",
        type=int,
        metavar="N",
        default=1,
        help="timed calls at 32768 tokens and more (default 1)",
    )
    parser.add_argument("--long-from", type=int, default=32768, help=argparse.SUPPRESS)
    parser.add_argument("--causal", action="store_true", help="causal=True (default False)")
    parser.add_argument(
        "--no-mask",
        action="store_true",
        help="no segment ids (default: the last 5%% of tokens are padding)",
    )
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default=DEFAULT_DTYPE,
        metavar="[" + "|".join(DTYPES) + "]",
        help=f"dtype of q, k and v (default {DEFAULT_DTYPE}; bfloat16 for the GPU kernels)",
    )
    _add_worker_options(parser)
    return parser


def _add_worker_options(parser: argparse.ArgumentParser) -> None:
    """How each worker runs and where the results go."""
    parser.add_argument(
        "--interpret", action="store_true", help='run interpret-mode kernels ({"interpret": true})'
    )
    parser.add_argument(
        "--interpret-max-length",
        type=int,
        default=1024,
        metavar="N",
        help="cap for interpret mode (1024)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=300.0,
        help="seconds per worker, start-up included (default 300)",
    )
    parser.add_argument(
        "--memory-limit-gib",
        type=float,
        metavar="GIB",
        default=20.0,
        help="watchdog: kill a worker above this RSS (default 20)",
    )
    parser.add_argument(
        "--address-limit-gib",
        type=float,
        metavar="GIB",
        default=24.0,
        help="RLIMIT_AS of each worker (default 24; 0: none)",
    )
    parser.add_argument(
        "--out",
        "-o",
        type=_folder,
        default=Path("benchmarks") / "results",
        metavar="DIR",
        help="results folder (default benchmarks/results)",
    )
    parser.add_argument("--no-plot", action="store_true", help="do not draw the PNG")


def _results_folder(out: Path) -> bool:
    """Whether ``--out`` can take the results, tried before the first worker starts (a file
    there, or a read-only disk, would otherwise end the sweep in a traceback, its
    measurements lost); if not, says so in one line on stderr, as every command does."""
    from seamline.adapters.cli.render.console import error
    from seamline.contracts import UserError
    from seamline.core import output_directory

    try:
        output_directory(out, "--out names")
    except UserError as problem:
        error(str(problem))  # its control characters shown as the other commands show them
        return False
    return True


def _names(text: str) -> list[str]:
    """The names ``--implementations`` gives: '' ran every one, and 'native,' asked for ''."""
    return [name for name in (part.strip() for part in text.split(",")) if name]


def _compile_cache_private() -> bool:
    """Refuse a JAX compile cache others can write (``$JAX_COMPILATION_CACHE_DIR``, which
    each worker inherits): a program planted there is what a worker would time and check."""
    from seamline.contracts import UserError
    from seamline.core import check_jax_compile_cache

    try:
        check_jax_compile_cache()
    except UserError as refused:
        from seamline.adapters.cli.render.console import error as say_error

        say_error(str(refused))
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the sweep the options describe, print the report; return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.repeats < 1 or args.long_repeats < 1:
            parser.error("--repeats and --long-repeats must be at least 1")
        if args.implementations is not None and not _names(args.implementations):
            parser.error("--implementations names no attention: give NAME[,NAME...]")
        if args.lengths is None and args.max_length < MIN_LENGTH:
            parser.error(
                f"--max-length must be at least {MIN_LENGTH}: the sweep's lengths are the "
                f"powers of two from {MIN_LENGTH} (or give them with --lengths)"
            )
    except SystemExit as stop:  # argparse has printed the usage, or the help (code 0)
        return EXIT_USAGE if stop.code else EXIT_OK
    lengths = args.lengths or default_lengths(args.max_length)
    wanted = None if args.implementations is None else _names(args.implementations)
    if not _results_folder(args.out) or not _compile_cache_private():
        return EXIT_USAGE
    try:
        report = run_benchmark(
            lengths,
            wanted,
            args.repeats,
            args.out,
            causal=args.causal,
            masked=not args.no_mask,
            dtype=args.dtype,
            interpret=args.interpret,
            interpret_max_length=args.interpret_max_length,
            long_repeats=args.long_repeats,
            long_from=args.long_from,
            timeout=args.timeout,
            memory_limit_gib=args.memory_limit_gib,
            address_limit_gib=args.address_limit_gib,
            plot=not args.no_plot,
        )
    except NotRegistered as problem:
        from seamline.adapters.cli.render.console import error as say_error

        say_error(str(problem))
        return EXIT_USAGE
    except RuntimeError as error:  # the probe failed: there is nothing to measure with
        console.print(f"[red]{error}")
        return EXIT_NOTHING_MEASURED
    print_report(report)
    if measured_cells(report) == 0:
        console.print(
            "[red]nothing was measured: every cell failed or was not run (reasons above); "
            f"exit code {EXIT_NOTHING_MEASURED}"
        )
        return EXIT_NOTHING_MEASURED
    return EXIT_OK
