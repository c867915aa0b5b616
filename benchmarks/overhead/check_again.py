"""What checking a component again costs: ``seamline check`` with and without its cache.

Usage::

    .venv/bin/python -m benchmarks.overhead.check_again [--target attention:native]
        [--repeats 3] [--select EXPR] [--out DIR]

A component's author runs ``seamline check KIND:NAME`` after each change. Each round
times three fresh processes of it, output piped, taking turns:

- ``no cache``: ``--no-compile-cache``, every program compiled (what each check cost
  before ``check`` kept its programs);
- ``first check``: the compile cache on, in an empty folder of its own;
- ``again``: the compile cache on, in the folder the round's ``first check`` filled: the
  component unchanged since, so every program is a hit.

Each side counts the entries it added to its folder: ``no cache`` must leave its folder
empty, and ``again`` must add fewer than its round's ``first check``. Not none: a check
may compile a program anew on purpose (attention's ``deterministic`` compiles its call
under a new name, to see that a second compilation computes the same), and that program
is kept too, one entry a check. ``JAX_COMPILATION_
CACHE_DIR`` is unset for every side, so that only the folder given is read.

Exit codes: 0 done; 1 a check failed, or a side's cache did not behave as above (said);
2 a bad option.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.options import require_folder
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.repeats import interleaved, spread

SEAMLINE = str(Path(sys.executable).with_name("seamline"))
SIDES = ("no cache", "first check", "again")


class CheckFailed(Exception):
    """A ``seamline check`` exited non-zero, or a side's cache did something else."""


def entries(folder: Path) -> int:
    """The compiled programs in ``folder`` (JAX names each entry ``...-cache``)."""
    return sum(1 for p in folder.iterdir() if p.name.endswith("-cache")) if folder.is_dir() else 0


def timed_check(command: list[str], folder: Path, work: Path) -> dict[str, Any]:
    """One fresh ``seamline check`` process with ``folder`` as its cache: seconds, and the
    entries it added there."""
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    environ["SEAMLINE_CACHE_DIR"] = str(folder)
    before = entries(folder)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=environ, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise CheckFailed(f"{' '.join(command[1:])} exited {done.returncode}: "
                          f"{(done.stdout + done.stderr).decode()[-800:]}")  # fmt: skip
    return {"seconds": seconds, "entries_added": entries(folder) - before}


class Rounds:
    """The three sides of each round, each in the folder its round gives it."""

    def __init__(self, check: list[str], work: Path) -> None:
        self.check, self.work, self.round = check, work, 0

    def __call__(self, side: str) -> dict[str, Any]:
        if side == SIDES[0]:
            self.round += 1
        folder = self.work / f"round-{self.round}"
        if side == "no cache":
            return timed_check([*self.check, "--no-compile-cache"], folder / "none", self.work)
        return timed_check(self.check, folder / "kept", self.work)


def misbehaved(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    """How each side's cache did other than the module says: [] when as said."""
    said = []
    if any(run["entries_added"] for run in runs["no cache"]):
        said.append("no cache: --no-compile-cache wrote compiled programs")
    if not all(run["entries_added"] for run in runs["first check"]):
        said.append("first check: the check kept no compiled program")
    for first, again in zip(runs["first check"], runs["again"], strict=True):
        if again["entries_added"] >= first["entries_added"]:
            said.append("again: the check found none of the programs its first check kept")
    return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="attention:native", help="KIND:NAME to check")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--select", help="only the checks matching this -k expression")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    require_folder(args.out)
    check = [SEAMLINE, "check", args.target, *(["--select", args.select] if args.select else [])]
    load = LoadAverages()
    with tempfile.TemporaryDirectory(prefix="check-again-") as work:
        try:
            runs = interleaved(SIDES, args.repeats, Rounds(check, Path(work)), load, pause=1.0)
        except CheckFailed as failed:
            print(f"error: {failed}", file=sys.stderr)
            return 1
    load.finish()
    figures = {side: spread([run["seconds"] for run in runs[side]]) for side in SIDES}
    cold = figures["no cache"]["median_s"]
    rows = [[side, f"{figures[side]['median_s']:.1f}", f"{figures[side]['min_s']:.1f}",
             f"{figures[side]['max_s']:.1f}", f"{figures[side]['median_s'] / cold:.2f}",
             str(max(run["entries_added"] for run in runs[side]))] for side in SIDES]  # fmt: skip
    title = f"seamline check {args.target}" + (f" --select {args.select!r}" if args.select else "")
    print_table(title, ["side", "median s", "min s", "max s", "x no cache", "entries added"], rows)
    for line in describe_load(load.as_json(), load.exceeded, host_info()["cpus"]):
        print(line)
    problems = misbehaved(runs)
    report = {
        "benchmark": "check_again",
        "target": args.target,
        "select": args.select,
        "repeats": args.repeats,
        "sides": {side: {**figures[side], "runs": runs[side]} for side in SIDES},
        "problems": problems,
        "load": load.as_json(),
        "host": host_info(),
        "versions": versions("seamline-adapters", "jax", "jaxlib"),
    }
    print(f"wrote {write_json(args.out / 'check_again.json', report)}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
