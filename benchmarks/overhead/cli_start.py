"""How long the ``seamline`` command takes to start: help, and listing the components.

Usage::

    .venv/bin/python -m benchmarks.overhead.cli_start [--repeats 11] [--pause 0.2] [--out DIR]
        [--before SRC]

Each side is a fresh process, its output piped (as a script reads it), timed from
``Popen`` to exit; the sides take turns round by round (interleaved), so a burst of
load hits each alike. ``python`` is the interpreter alone (``python -c pass``), the
floor under every other side. The budgets are issue 23's: ``--help`` and each
``<command> --help`` under 0.3 s, ``components`` under 1.5 s, on the 2-CPU machine
the figures in docs/cli.md were measured on. Which modules each side imports is the
unit tests' business (``tests/adapters/test_cli_startup.py``); this says how long.

``--before SRC`` adds a ``before:`` side for each judged one: the same command with
``SRC`` (every ``src`` tree of another checkout copied into one folder, as docs/cli.md's
Start-up shows; ``adapters/src`` alone pairs that checkout's command line with today's
core) first on ``PYTHONPATH``, so that the command line of that checkout runs over this
environment's packages, side by side in the same rounds.

Exit codes: 0 every side's median within its budget; 1 some side over; 2 a bad option.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common.options import require_folder
from benchmarks.common.paths import BEFORE_RECIPE, before_environment, check_before
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.repeats import interleaved, spread

SEAMLINE = str(Path(sys.executable).with_name("seamline"))
SIDES: dict[str, tuple[list[str], float | None]] = {
    "python": ([sys.executable, "-c", "pass"], None),
    "--help": ([SEAMLINE, "--help"], 0.3),
    "run --help": ([SEAMLINE, "run", "--help"], 0.3),
    "serve --help": ([SEAMLINE, "serve", "--help"], 0.3),
    "components --help": ([SEAMLINE, "components", "--help"], 0.3),
    "components": ([SEAMLINE, "components"], 1.5),
}
"""Side -> (the command, its budget in seconds; None: a reference, not judged)."""


def timed(side: str, before: Path | None = None) -> dict[str, Any]:
    """One fresh process of ``side`` (``before: x``: x over ``before``), output piped."""
    command, _ = SIDES[side.removeprefix("before: ")]
    environ = dict(os.environ)
    if side.startswith("before: ") and before is not None:
        environ = before_environment(environ, before)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=False, env=environ)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{side} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return {"seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--pause", type=float, default=0.2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--before", type=Path, help=f"the checkout to compare, {BEFORE_RECIPE}")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.before is not None and (problem := check_before(str(args.before))):
        parser.error(problem)
    require_folder(args.out)
    sides = list(SIDES)
    if args.before is not None:
        sides += [f"before: {side}" for side, (_, budget) in SIDES.items() if budget]
    load = LoadAverages()
    for side in sides:  # warm the file cache: the first start of a process reads from disk
        timed(side, args.before)
    runs = interleaved(sides, args.repeats, lambda s: timed(s, args.before), load, pause=args.pause)
    load.finish()
    results, over = _table(sides, runs)
    for line in describe_load(load.as_json(), load.exceeded, host_info()["cpus"]):
        print(line)
    report = {
        "benchmark": "cli_start",
        "repeats": args.repeats,
        "sides": results,
        "over_budget": over,
        "load": load.as_json(),
        "host": host_info(),
        "versions": versions("seamline-adapters", "typer", "jax", "pydantic"),
    }
    print(f"wrote {write_json(args.out / 'cli_start.json', report)}")
    return 1 if over else 0


def _table(
    sides: list[str], runs: dict[str, list[dict[str, Any]]]
) -> tuple[dict[str, Any], list[str]]:
    """Print each side's median, spread and budget; the results and the sides over budget."""
    over = []
    print(f"{'side':<28} {'median s':>9} {'min s':>7} {'max s':>7} {'budget s':>9}")
    results = {}
    for side in sides:
        budget = None if side.startswith("before: ") else SIDES[side][1]
        figures = spread([run["seconds"] for run in runs[side]])
        results[side] = {**figures, "budget_s": budget, "runs": runs[side]}
        if budget is not None and figures["median_s"] > budget:
            over.append(side)
        shown = "-" if budget is None else f"{budget:.1f}"
        print(
            f"{side:<28} {figures['median_s']:9.3f} {figures['min_s']:7.3f} "
            f"{figures['max_s']:7.3f} {shown:>9}" + ("  OVER" if side in over else "")
        )
    return results, over


if __name__ == "__main__":
    raise SystemExit(main())
