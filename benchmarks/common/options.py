"""The options every whole-process benchmark of a pipeline takes, defined once.

``whole_run`` and ``precision`` both time ``seamline run PIPELINE`` over the first
documents of the benchmark corpus, repeated, with overrides, and write their results
to a folder: the same five options, so that a command line reads the same in both.
"""

from __future__ import annotations

import argparse
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
