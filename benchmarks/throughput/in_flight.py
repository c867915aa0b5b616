"""Batches in flight: whole ``seamline run`` processes with ``run.in_flight`` 0 (each batch
written before the next is launched) against 1 (the device computes the next batch while
the host writes this one), one run, interleaved.

Each side is ``seamline run`` of the pipeline (``embed-docs-jsonl.yaml``) with
``--set run.in_flight=N`` and ``--set precision=P``, a fresh process per repeat, after an
untimed run per side that fills the compile cache and the precision gate's records (both
in the run's temporary folder). Per side: the whole process's seconds (median, fastest,
slowest), documents/s, and the steady-state tokens/s of the batch log (every batch but
the first of each length; ``BatchDone.seconds`` tiles the run's time, so with batches in
flight it is the run's rate, not each batch's latency); each against ``in_flight: 0`` of
the same precision. The outputs of every side are compared with ``in_flight: 0``'s of
the same precision, record for record: the setting must change the speed and nothing
else.

    .venv/bin/python -m benchmarks.throughput.in_flight [--docs N] [--repeats 3]
        [--depths 0,1] [--precisions bfloat16,float32] [--pipeline PIPELINE]
        [--set PATH=VALUE ...] [--out benchmarks/results]

Exit codes: 0 done; 1 a run failed, or two depths wrote different outputs; 2 a bad option.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import first_of_bench_corpus
from benchmarks.common.options import add_run_options, require_folder
from benchmarks.common.tables import print_table, run_context
from benchmarks.throughput.precision import DEFAULT_PIPELINE, run_seamline
from benchmarks.throughput.whole_run import SideFailed, output_suffix, records
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread

PRECISIONS = ("float32", "bfloat16")


def side_name(precision: str, depth: int) -> str:
    return f"{precision}/in_flight={depth}"


def parse_list(text: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items or (allowed is not None and not set(items) <= set(allowed)):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {allowed or 'N'}")
    return items


def parse_depths(text: str) -> list[int]:
    try:
        depths = sorted({int(item) for item in parse_list(text)})
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma-separated integers, e.g. 0,1") from None
    if depths[0] != 0 or depths[-1] > 8:
        raise argparse.ArgumentTypeError("the depths must include 0 (the baseline) and be <= 8")
    return depths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser, DEFAULT_PIPELINE, "the pipeline run (its sink must be readable back)")
    parser.add_argument("--depths", type=parse_depths, default=[0, 1], help="default 0,1")
    parser.add_argument(
        "--precisions",
        type=lambda text: parse_list(text, PRECISIONS),
        default=["bfloat16", "float32"],
        help="default bfloat16,float32",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    require_folder(args.out)
    try:
        return measure(args)
    except SideFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1


def measure(args: argparse.Namespace) -> int:
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    sides = {
        side_name(precision, depth): (precision, depth)
        for precision in args.precisions
        for depth in args.depths
    }
    suffix = output_suffix(args.pipeline)
    with tempfile.TemporaryDirectory(prefix="seamline-in-flight-") as tmp:
        workdir = Path(tmp)
        corpus, documents = first_of_bench_corpus(args.docs, workdir)

        def run(side: str, name: str | None = None) -> dict[str, Any]:
            precision, depth = sides[side]
            out = workdir / f"{(name or side).replace('/', '-')}{suffix}"
            overrides = [*args.overrides, f"run.in_flight={depth}"]
            return run_seamline(
                precision,
                "precision",
                corpus,
                out,
                workdir / "compile-cache",
                args.pipeline,
                overrides,
                records=workdir / "precision-records",
            )

        say_to_stderr(f"{documents} documents; untimed runs to fill the compile cache")
        warmups = {side: run(side, f"warmup-{side}") for side in sides}
        differences = compare_outputs(warmups, sides)
        results = interleaved(list(sides), args.repeats, run, load, pause=1.0)
        load.finish()
    report = {
        "benchmark": "in_flight",
        "command": "python -m benchmarks.throughput.in_flight " + " ".join(sys.argv[1:]),
        **run_context(started_at, started, load, pipeline=str(args.pipeline)),
        "documents": documents,
        "repeats": args.repeats,
        "sides": summarise(results, sides, documents),
        "outputs_differ": differences,
    }
    print_report(report)
    path = write_json(args.out / "in_flight.json", report)
    print(f"written: {path}")
    return 1 if differences else 0


def compare_outputs(
    warmups: dict[str, dict[str, Any]], sides: dict[str, tuple[str, int]]
) -> list[str]:
    """The sides whose output is not record for record that of ``in_flight: 0`` (same
    precision): the id, window, span and vector of every record, in order."""

    def rows(side: str) -> list[tuple[Any, ...]]:
        return [
            (r["id"], r["window"], r.get("span"), tuple(r["embedding"]))
            for r in records(Path(warmups[side]["path"]))
        ]

    differ = []
    for side, (precision, depth) in sides.items():
        if depth and rows(side) != rows(side_name(precision, 0)):
            differ.append(side)
    return differ


def summarise(
    results: dict[str, list[dict[str, Any]]], sides: dict[str, tuple[str, int]], documents: int
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for side, runs in results.items():
        seconds = [r["seconds"] for r in runs]
        rates = [r["steady_tokens_per_s"] for r in runs if r["steady_tokens_per_s"]]
        summary[side] = {
            "precision": sides[side][0],
            "in_flight": sides[side][1],
            "seconds": spread(seconds),
            "docs_per_s": documents / statistics.median(seconds),
            "steady_tokens_per_s": (
                {"median": statistics.median(rates), "min": min(rates), "max": max(rates)}
                if rates
                else None
            ),
            "runs": runs,
        }
    for entry in summary.values():
        baseline = summary[side_name(entry["precision"], 0)]
        entry["speedup_whole"] = baseline["seconds"]["median_s"] / entry["seconds"]["median_s"]
        if entry["steady_tokens_per_s"] and baseline["steady_tokens_per_s"]:
            entry["speedup_steady"] = (
                entry["steady_tokens_per_s"]["median"] / baseline["steady_tokens_per_s"]["median"]
            )
    return summary


def print_report(report: dict[str, Any]) -> None:
    rows = []
    for side, entry in report["sides"].items():
        seconds, steady = entry["seconds"], entry["steady_tokens_per_s"]
        rows.append(
            (
                side,
                f"{seconds['median_s']:.2f} ({seconds['min_s']:.2f}-{seconds['max_s']:.2f})",
                f"{entry['docs_per_s']:.1f}",
                f"{steady['median']:,.0f}" if steady else "-",
                f"{entry['speedup_whole']:.3f}x",
                f"{entry.get('speedup_steady', float('nan')):.3f}x",
            )
        )
    print_table(
        f"{report['documents']} documents, {report['repeats']} interleaved repeats",
        ("side", "whole s (min-max)", "docs/s", "steady tok/s", "vs 0 whole", "vs 0 steady"),
        rows,
    )
    if report["outputs_differ"]:
        print(f"outputs differ from in_flight=0: {', '.join(report['outputs_differ'])}")


if __name__ == "__main__":
    raise SystemExit(main())
