"""Does the ``lancedb`` sink's memory stay flat over many commits? Its cache bound against none.

Usage::

    .venv/bin/python -m benchmarks.memory.lancedb_cache [--commits 1000] [--rows 64] [--repeats 2]
        [--every 50] [--out benchmarks/results]

Two sides, each a fresh process per repeat, interleaved (bounded, lancedb-default,
bounded, ...): the ``lancedb`` sink itself, no model, writes ``--commits`` commits of
``--rows`` records (384-dimensional float32 vectors, ids, a line of text), then
publishes (``close()``, no index):

* **bounded** -- the sink as configured by default: ``cache_bytes`` 16 MiB, each of
  LanceDB's index and metadata caches bounded to it;
* **lancedb-default** -- ``cache_bytes: null``: LanceDB's default session, whose
  caches hold gigabytes.

Every commit adds the held rows to the staging table, a new table version. Each
process reads its own resident set size (psutil) every ``--every`` commits and
after publishing. The report gives, per side, the growth from the first reading to
the last commit (median of the repeats, with the range), the growth over the last
half of the commits (a plateau is flat there, a leak is not), the median seconds per
commit and the seconds to publish, and the ratio of the two sides' growth. Results
go to ``OUT/lancedb_cache.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT, module_command
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved

MODULE = "benchmarks.memory.lancedb_cache"
"""This module, which runs each repeat of a side as a fresh process of itself."""

SIDES = ("bounded", "lancedb-default")
CACHE_BYTES: dict[str, int | None] = {"bounded": 16 << 20, "lancedb-default": None}
DIMENSIONS = 384
MiB = 1 << 20
DISTRIBUTIONS = ("lancedb", "pylance", "pyarrow", "psutil", "seamline-components")
say = say_to_stderr


def one_side(side: str, commits: int, rows: int, every: int) -> dict[str, Any]:
    """In this process: the sink through ``commits`` commits, RSS every ``every`` of them."""
    import numpy as np
    import psutil

    from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
    from seamline.contracts import OutputRecord

    process = psutil.Process()
    rng = np.random.default_rng(0)
    text = "a sentence of the kind a corpus holds, long enough to matter. " * 2
    readings: list[tuple[int, int]] = []
    commit_seconds: list[float] = []
    with tempfile.TemporaryDirectory(prefix="seamline-lancedb-cache-") as tmp:
        config = LanceDbSinkConfig(
            path=Path(tmp) / "db" / "out.lance", cache_bytes=CACHE_BYTES[side]
        )
        sink = LanceDbSink(config)
        sink.start({"pipeline": "lancedb-cache"})
        for commit in range(1, commits + 1):
            vectors = rng.standard_normal((rows, DIMENSIONS)).astype(np.float32)
            sink.write(
                [
                    OutputRecord(f"d{commit}-{row}", 0, (0, 10), vectors[row], {}, text)
                    for row in range(rows)
                ]
            )
            started = time.perf_counter()
            sink.commit(f"cursor-{commit}")
            commit_seconds.append(time.perf_counter() - started)
            if commit == 1 or commit % every == 0:
                readings.append((commit, process.memory_info().rss))
        started = time.perf_counter()
        sink.close()
        publish_seconds = time.perf_counter() - started
        after_publish = process.memory_info().rss
    return {
        "side": side,
        "cache_bytes": CACHE_BYTES[side],
        "readings": readings,
        "after_publish_rss": after_publish,
        "median_commit_s": statistics.median(commit_seconds),
        "publish_s": publish_seconds,
    }


def growth(result: dict[str, Any]) -> dict[str, float]:
    """MiB grown from the first reading to the last, and over the last half of the commits."""
    readings = result["readings"]
    last_commit, last_rss = readings[-1]
    middle = min(readings, key=lambda reading: abs(reading[0] - last_commit / 2))
    return {
        "growth_mib": (last_rss - readings[0][1]) / MiB,
        "second_half_growth_mib": (last_rss - middle[1]) / MiB,
    }


def run_side(side: str, args: argparse.Namespace) -> dict[str, Any]:
    """One repeat of ``side`` in a fresh process; its JSON result, with the wall time."""
    command = module_command(
        MODULE,
        *("--side", side, "--commits", str(args.commits), "--rows", str(args.rows)),
        *("--every", str(args.every)),
    )
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"side {side} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = time.perf_counter() - started
    result.update(growth(result))
    return result


def build_report(
    args: argparse.Namespace, results: dict[str, list[dict[str, Any]]], context: dict[str, Any]
) -> dict[str, Any]:
    sides = {}
    for side in SIDES:
        runs = results[side]
        grown = [r["growth_mib"] for r in runs]
        sides[side] = {
            "runs": runs,
            "growth_mib": statistics.median(grown),
            "growth_min_mib": min(grown),
            "growth_max_mib": max(grown),
            "second_half_growth_mib": statistics.median(r["second_half_growth_mib"] for r in runs),
            "median_commit_ms": 1e3 * statistics.median(r["median_commit_s"] for r in runs),
            "publish_s": statistics.median(r["publish_s"] for r in runs),
        }
    bounded, default = sides["bounded"], sides["lancedb-default"]
    return {
        "benchmark": "lancedb_cache",
        **context,
        "commits": args.commits,
        "rows_per_commit": args.rows,
        "repeats": args.repeats,
        "sides": sides,
        "growth_default_over_bounded": default["growth_mib"] / max(bounded["growth_mib"], 0.1),
        "commit_time_bounded_over_default": (
            bounded["median_commit_ms"] / default["median_commit_ms"]
        ),
        "versions": versions(*DISTRIBUTIONS),
    }


def print_report(report: dict[str, Any]) -> None:
    print_table(
        f"{report['commits']} commits of {report['rows_per_commit']} rows, "
        f"{report['repeats']} repeats ({report['started']})",
        ("side", "RSS growth MiB", "min", "max", "2nd half", "per commit", "publish"),
        [
            (
                name,
                f"{side['growth_mib']:.1f}",
                f"{side['growth_min_mib']:.1f}",
                f"{side['growth_max_mib']:.1f}",
                f"{side['second_half_growth_mib']:.1f}",
                f"{side['median_commit_ms']:.2f} ms",
                f"{side['publish_s']:.2f} s",
            )
            for name, side in report["sides"].items()
        ],
    )
    print(
        f"growth, LanceDB's default caches over the bound: "
        f"{report['growth_default_over_bounded']:.1f}x; time per commit, bound over default: "
        f"{report['commit_time_bounded_over_default']:.2f}x"
    )
    for line in describe_load(
        report["load_average"], report["load_warning"], report["host"]["cpus"]
    ):
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--every", type=int, default=50, help="commits between RSS readings")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a worker process
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if min(args.commits, args.rows, args.every, args.repeats) < 1:
        parser.error("--commits, --rows, --every and --repeats must be at least 1")
    if args.side:
        print(json.dumps(one_side(args.side, args.commits, args.rows, args.every)))
        return 0
    require_folder(args.out)

    load = LoadAverages()
    started_at = datetime.datetime.now(datetime.UTC)
    started = time.perf_counter()
    results = interleaved(SIDES, args.repeats, lambda side: run_side(side, args), load, pause=0.5)
    load.finish()
    context = run_context(started_at, started, load)
    report = build_report(args, results, context)
    path = write_json(args.out / "lancedb_cache.json", report)
    print_report(report)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
