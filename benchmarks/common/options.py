"""The options the benchmarks share, defined and checked once.

``whole_run`` and ``precision`` both time ``seamline run PIPELINE`` over the first
documents of the benchmark corpus, repeated, with overrides, and write their results
to a folder: the same five options, so that a command line reads the same in both.

Every benchmark checks its results folder with :func:`require_folder` before it
measures, and parses a comma-separated list of numbers with :func:`int_list`: a bad
option is a usage error (exit 2, one line), not a traceback once the minutes of
measuring are spent.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.common.paths import RESULTS


def add_run_options(
    parser: argparse.ArgumentParser, default_pipeline: Path, pipeline_help: str
) -> None:
    """``--docs``, ``--repeats``, ``--out``, ``--pipeline`` and ``--set`` (as ``overrides``)."""
    parser.add_argument("--docs", type=int, help="first N documents of the corpus (default all)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per side")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--pipeline", type=Path, default=default_pipeline, help=pipeline_help)
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="an override for every seamline run, e.g. attention.use=cudnn (repeatable)",
    )


EXIT_USAGE = 2
"""A bad option: what argparse exits with, and what the README lists for every benchmark."""


def require_folder(path: Path, option: str = "--out") -> Path:
    """``path``, the folder ``option`` names, made and tried before anything is measured.

    A regular file there, one in its parent path or a read-only folder would otherwise
    end the benchmark in a traceback from ``write_json`` once the measuring is done, its
    numbers lost. The check and its one line are ``seamline bench attention``'s
    (``seamline.core.output_directory``), written here with the standard library alone
    because ``overhead/compile_cost.py`` runs on a GPU image where seamline is not
    installed. A problem exits with :data:`EXIT_USAGE`.
    """
    named = "".join(c if c.isprintable() else "\ufffd" for c in f"{option} names {path}")
    fix = "name a directory you can write to (it is created when missing)"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):  # O_TMPFILE where it can: nothing left behind
            pass
    except FileExistsError:  # something other than a directory is there
        what = "a regular file" if path.is_file() else "not a directory"
        problem = f"{named}, which is {what}: {fix}"
    except OSError as err:
        reason = err.strerror or type(err).__name__
        problem = f"{named}, which cannot be written to ({reason}): {fix}"
    else:
        return path
    print(f"error: {problem}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def int_list(low: int, high: int | None = None) -> Callable[[str], list[int]]:
    """An argparse ``type=`` for ``N,N,...``, each from ``low`` to ``high`` (None: no bound).

    Parsed by argparse, a bad list (``abc``, ``32,,64``, ``0``) is a usage error that says
    what is expected, where ``int()`` after parsing gave a ``ValueError`` traceback.
    """
    bounds = f"at least {low}" if high is None else f"from {low} to {high}"

    def parse(text: str) -> list[int]:
        try:
            numbers = [int(part) for part in text.split(",")]
        except ValueError:
            numbers = []
        if not numbers or not all(low <= n and (high is None or n <= high) for n in numbers):
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected comma-separated whole numbers {bounds}"
            )
        return numbers

    return parse
