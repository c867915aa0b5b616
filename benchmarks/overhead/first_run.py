"""What a first ``seamline run`` costs in each precision: empty compile cache, no gate record.

Usage::

    .venv/bin/python -m benchmarks.overhead.first_run [--docs 300] [--repeats 3]
        [--precisions float32,auto] [--before SRC[:SRC...]] [--set PATH=VALUE ...]

A user's first run of a pipeline compiles every program it uses and, below float32,
runs the precision gate (its calibration sample embedded in float32 and in the
candidate, each batch shape compiled for both) before the first batch; later runs
find both in the compile cache and the gate's record. This times that first run,
whole process, per precision: each repeat a fresh ``seamline run`` of the JSON-lines
pipeline with an empty ``SEAMLINE_CACHE_DIR`` and an empty ``SEAMLINE_PRECISION_DIR``
and ``JAX_LOG_COMPILES=1``, the sides taking turns round by round. From each run's log
it counts the programs compiled and the seconds they took, and reads the precision
chosen, so a GPU machine's ``auto`` is recorded beside its cost.

``--before SRC`` adds a ``before <precision>`` side per precision: the same run with an
earlier checkout's source first on ``PYTHONPATH`` (every ``src`` tree of it copied into
one folder, as docs/cli.md's Start-up shows), in the same rounds, the ratio printed.

Exit codes: 0 done; 1 a run failed (its log's end is printed); 2 a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import first_of_bench_corpus
from benchmarks.common.options import add_run_options, require_folder
from benchmarks.common.paths import (
    BEFORE_RECIPE,
    ROOT,
    before_environment,
    check_before,
    timed_seamline_run,
)
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.repeats import interleaved, spread

PIPELINE = ROOT / "examples" / "pipelines" / "embed-docs-jsonl.yaml"
PRECISIONS = ("float32", "auto")
BEFORE = "before "
"""The prefix of a side that runs the ``--before`` checkout's code."""
COMPILED = "Finished XLA compilation of "


class RunFailed(Exception):
    """A ``seamline run`` exited with an error (the message holds its log's end)."""


def parse_log(lines: list[str]) -> dict[str, Any]:
    """What one run's JSON log says: programs compiled (count, seconds, per program name)
    and the precision chosen (float32 when no negotiation ran)."""
    compiled: dict[str, list[float]] = {}
    chosen = "float32"
    for line in lines:
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        event = record.get("event", "")
        if isinstance(event, str) and event.startswith(COMPILED):
            # "Finished XLA compilation of jit(NAME) in S sec"
            words = event.removeprefix(COMPILED).split()
            compiled.setdefault(words[0], []).append(float(words[2]))
        if event == "precision chosen":
            chosen = str(record["precision"])
    every = [s for seconds in compiled.values() for s in seconds]
    return {
        "compilations": len(every),
        "compile_seconds": sum(every),
        "programs": {
            name: {"count": len(seconds), "seconds": sum(seconds)}
            for name, seconds in sorted(compiled.items())
        },
        "precision": chosen,
    }


def first_run(
    side: str,
    pipeline: Path,
    corpus: Path,
    workdir: Path,
    overrides: list[str],
    before: str | None,
) -> dict[str, Any]:
    """One first run of ``side`` (a precision, ``before `` first for the earlier code)."""
    precision = side.removeprefix(BEFORE)
    fresh = workdir / f"run-{time.monotonic_ns()}"
    environ = {
        **os.environ,
        "SEAMLINE_CORPUS": str(corpus),
        "SEAMLINE_CACHE_DIR": str(fresh / "cache"),
        "SEAMLINE_PRECISION_DIR": str(fresh / "precision"),
        "JAX_LOG_COMPILES": "1",
    }
    if side.startswith(BEFORE) and before:
        environ = before_environment(environ, before)
    settings = [
        f"sink.with.path={fresh / 'out' / 'embeddings.jsonl'}",
        f"precision={precision}",
        *overrides,
    ]
    seconds, done = timed_seamline_run(pipeline, settings, environ, failure=RunFailed)
    found = parse_log((done.stdout + done.stderr).splitlines())
    shutil.rmtree(fresh, ignore_errors=True)
    return {"seconds": seconds, **found}


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each side's median time with its spread, compilations, and the precisions chosen."""
    sides: dict[str, Any] = {}
    for side, results in runs.items():
        sides[side] = {
            **spread([r["seconds"] for r in results]),
            "compilations": statistics.median(r["compilations"] for r in results),
            "compile_seconds": statistics.median(r["compile_seconds"] for r in results),
            "chosen": sorted({r["precision"].split()[0] for r in results}),
            "chosen_reason": results[0]["precision"],
            "runs": results,
        }
    float32 = sides.get("float32")
    for side, figures in sides.items():
        if float32 is not None:
            figures["vs_float32"] = figures["median_s"] / float32["median_s"]
        earlier = sides.get(BEFORE + side)
        if earlier is not None:  # > 1: this checkout's first run is the faster
            figures["vs_before"] = earlier["median_s"] / figures["median_s"]
    return sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser, PIPELINE, "the pipeline run (default: the JSON-lines one)")
    parser.add_argument(
        "--precisions",
        default=",".join(PRECISIONS),
        help="the precisions to time, comma-separated (default: float32,auto)",
    )
    parser.add_argument(
        "--before",
        metavar="SRC[:SRC...]",
        help="add a 'before' side per precision importing seamline from these folders first: "
        f"{BEFORE_RECIPE}",
    )
    parser.add_argument(
        "--before-precisions",
        help="the precisions of the 'before' sides (default: those of --precisions)",
    )
    parser.set_defaults(docs=300)
    args = parser.parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    if args.repeats < 1 or args.docs < 1 or not precisions:
        parser.error("--repeats and --docs must be at least 1, and --precisions not empty")
    if args.before and (problem := check_before(args.before)):
        parser.error(problem)
    require_folder(args.out)
    earlier = [p for p in (args.before_precisions or args.precisions).split(",") if p]
    sides = [*precisions, *([BEFORE + p for p in earlier] if args.before else [])]
    load = LoadAverages()
    with tempfile.TemporaryDirectory(prefix="seamline-first-run-") as tmp:
        workdir = Path(tmp)
        corpus, documents = first_of_bench_corpus(args.docs, workdir)

        def run(side: str) -> dict[str, Any]:
            return first_run(side, args.pipeline, corpus, workdir, args.overrides, args.before)

        try:
            runs = interleaved(sides, args.repeats, run, load, pause=1.0)
        except RunFailed as failure:
            print(f"error: {failure}", file=sys.stderr)
            return 1
    load.finish()
    sides_report = summarise(runs)
    report = {
        "benchmark": "first_run",
        "command": " ".join(
            [
                "python -m benchmarks.overhead.first_run",
                f"--docs {args.docs}",
                f"--repeats {args.repeats}",
                f"--precisions {','.join(precisions)}",
                *([f"--before {args.before}"] if args.before else []),
                *(
                    [f"--before-precisions {args.before_precisions}"]
                    if args.before_precisions
                    else []
                ),
                *(f"--set {override}" for override in args.overrides),
            ]
        ),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "pipeline": str(args.pipeline),
        "documents": documents,
        "sides": sides_report,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
        "versions": versions("jax", "jaxlib", "seamline-core"),
    }
    print_report(report)
    print(f"wrote {write_json(args.out / 'first_run.json', report)}")
    return 0


def print_report(report: dict[str, Any]) -> None:
    rows = []
    for side, figures in report["sides"].items():
        rows.append(
            [
                side,
                f"{figures['median_s']:.1f} ({figures['min_s']:.1f}-{figures['max_s']:.1f})",
                f"{figures['compilations']:g}",
                f"{figures['compile_seconds']:.1f}",
                ", ".join(figures["chosen"]),
                f"{figures['vs_float32']:.2f}x" if "vs_float32" in figures else "-",
                f"{figures['vs_before']:.2f}x" if "vs_before" in figures else "-",
            ]
        )
    print_table(
        f"first run, {report['documents']} documents (empty compile cache, no gate record)",
        [
            "side",
            "median s (min-max)",
            "compiled",
            "compiling s",
            "chosen",
            "/ float32",
            "vs before",
        ],
        rows,
    )
    for line in describe_load(report["load"], report["load_warning"], report["host"]["cpus"]):
        print(line)


if __name__ == "__main__":
    raise SystemExit(main())
