"""Documents/s of one pipeline on the ``local`` executor and on Ray actor pools, side by side.

Usage::

    .venv/bin/python -m benchmarks.throughput.scaling [--docs 200] [--repeats 3] [--max-length 128]
        [--out benchmarks/results]

One pipeline (``text-files`` over the first ``--docs`` documents of the ``make run``
corpus, all-MiniLM-L6-v2, ``auto`` attention, ``batch_tokens: 512``, the ``jsonl``
sink) runs through ``Pipeline.run()`` in this process, once per side per round,
rounds interleaved (a 1 s pause before each run) so that load on a shared machine
hits every side alike:

* ``local`` -- the whole run in this process, which may use every core;
* ``ray-1`` -- one actor of one CPU, one shard;
* ``ray-2`` -- two actors of one CPU each, two shards;
* ``ray-1x8`` -- one actor of one CPU, eight shards: the same work as ``ray-1`` cut
  in eight, to measure what a shard costs.

Every side pays what a user pays for one run: for Ray, starting the actors (a
Python process each, importing JAX and seamline), building the pipeline in each,
loading the weights and compiling each shape (no compile cache); ``local`` loads and
compiles once in this process. Ray itself is started once, before the first round
(``ray.init(num_cpus=2)``), as a cluster would already be running.

Reported: the median wall time with the fastest and slowest, documents/s; for the
Ray sides the time inside shards (the sum of the shards' own ``seconds``, on the
critical path: the busiest actor's) and the rest, *coordination*: actor start-up,
pipeline build, dispatch and publication; and the **per-shard overhead**,
``(ray-1x8 - ray-1) / 7``, what one more shard costs (its staging area, opening
and publishing its part, a flush of the partly filled buckets at its end, one task
round trip), round by round and from the medians, split into the part spent inside
shards and the part spent coordinating. The load average is sampled before, after
each round and at the end.
On a 2-CPU machine this measures correctness and overhead, not speed-up: two
actors of one core each have, together, the cores ``local`` has alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import select_corpus
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.seamline_work import bert_config
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.repeats import interleaved, spread

SIDES: dict[str, dict[str, Any]] = {
    "local": {"use": "local"},
    "ray-1": {"use": "ray", "with": {"actors": 1, "cpus_per_actor": 1, "shards": 1}},
    "ray-2": {"use": "ray", "with": {"actors": 2, "cpus_per_actor": 1, "shards": 2}},
    "ray-1x8": {"use": "ray", "with": {"actors": 1, "cpus_per_actor": 1, "shards": 8}},
}


def pipeline_file(workdir: Path, corpus: Path, max_length: int, side: str) -> Path:
    spec = {
        "pipeline": f"scaling-{side}",
        "loader": {"use": "text-files", "with": {"root": str(corpus), "glob": "*.txt"}},
        "model": {"use": "bert-encoder", "with": bert_config(max_length)},
        "attention": {"use": "auto"},
        "sink": {"use": "jsonl", "with": {"path": str(workdir / "out" / side / "emb.jsonl")}},
        "run": {"batch_tokens": 512, "executor": SIDES[side]},
    }
    path = workdir / f"{side}.yaml"
    path.write_text(json.dumps(spec), encoding="utf-8")  # JSON is YAML
    return path


def run_side(workdir: Path, corpus: Path, max_length: int, side: str) -> dict[str, Any]:
    from seamline.core import Pipeline

    shutil.rmtree(workdir / "out" / side, ignore_errors=True)
    pipeline = Pipeline.from_yaml(pipeline_file(workdir, corpus, max_length, side))
    started = time.perf_counter()
    summary = pipeline.run()
    seconds = time.perf_counter() - started
    busiest: dict[str, float] = {}
    for shard in summary.shards:
        busiest[shard.worker] = busiest.get(shard.worker, 0.0) + shard.seconds
    inside = max(busiest.values(), default=0.0)
    return {
        "seconds": seconds,
        "documents": summary.counts.documents,
        "tokens": summary.counts.tokens,
        "shards": len(summary.shards),
        "workers": summary.workers,
        "inside_shards_s": inside,
        "coordination_s": seconds - inside,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.docs < 1 or args.repeats < 1:
        parser.error("--docs and --repeats must be at least 1")
    require_folder(args.out)
    import ray

    from seamline.adapters.logging_setup import configure_logging

    configure_logging(json=False, level="warning")
    load = LoadAverages()
    with tempfile.TemporaryDirectory(prefix="seamline-scaling-") as tmp:
        workdir = Path(tmp)
        corpus = select_corpus(args.docs, workdir)
        ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
        try:
            results = interleaved(
                list(SIDES),
                args.repeats,
                lambda side: run_side(workdir, corpus.path, args.max_length, side),
                load,
                pause=1.0,
            )
        finally:
            ray.shutdown()
    load.finish()
    report = summarise(results, args, corpus.documents, corpus.source, load)
    print_report(report)
    path = write_json(args.out / "scaling.json", report)
    print(f"wrote {path}")
    return 0


def summarise(
    results: dict[str, list[dict[str, Any]]],
    args: argparse.Namespace,
    documents: int,
    source: str,
    load: LoadAverages,
) -> dict[str, Any]:
    sides: dict[str, Any] = {}
    for side, runs in results.items():
        seconds = spread([run["seconds"] for run in runs])
        sides[side] = {
            **seconds,
            "documents_per_s": documents / seconds["median_s"],
            "inside_shards": spread([run["inside_shards_s"] for run in runs]),
            "coordination": spread([run["coordination_s"] for run in runs]),
            "shards": runs[0]["shards"],
            "workers": runs[0]["workers"],
            "runs": runs,
        }
    per_shard = [
        (eight["seconds"] - one["seconds"]) / 7
        for one, eight in zip(results["ray-1"], results["ray-1x8"], strict=True)
    ]
    one, eight = sides["ray-1"], sides["ray-1x8"]
    from_medians = {
        "wall_s": (eight["median_s"] - one["median_s"]) / 7,
        "inside_shards_s": (eight["inside_shards"]["median_s"] - one["inside_shards"]["median_s"])
        / 7,
        "coordination_s": (eight["coordination"]["median_s"] - one["coordination"]["median_s"]) / 7,
    }
    return {
        "benchmark": "scaling",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
        "documents": documents,
        "corpus": source,
        "max_length": args.max_length,
        "repeats": args.repeats,
        "sides": sides,
        "per_shard_overhead": spread(per_shard),
        "per_shard_overhead_from_medians": from_medians,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
        "versions": versions("seamline-core", "jax", "jaxlib", "ray"),
    }


def print_report(report: dict[str, Any]) -> None:
    rows = []
    local = report["sides"]["local"]["median_s"]
    for side, result in report["sides"].items():
        coordination = result["coordination"]
        rows.append(
            (
                side,
                f"{result['shards']} / {result['workers']}",
                f"{result['median_s']:.2f} ({result['min_s']:.2f}-{result['max_s']:.2f})",
                f"{result['documents_per_s']:.1f}",
                f"{local / result['median_s']:.2f}x",
                "-" if side == "local" else f"{result['inside_shards']['median_s']:.2f}",
                "-" if side == "local" else f"{coordination['median_s']:.2f}",
            )
        )
    print_table(
        f"{report['documents']} documents, max_length {report['max_length']}, median of "
        f"{report['repeats']} interleaved repeats",
        (
            "side",
            "shards / workers",
            "wall s (min-max)",
            "docs/s",
            "vs local",
            "in shards s",
            "coordination s",
        ),
        rows,
    )
    overhead = report["per_shard_overhead"]
    medians = report["per_shard_overhead_from_medians"]
    print(
        f"per-shard overhead ((ray-1x8 - ray-1) / 7), round by round: {overhead['median_s']:.3f} s "
        f"(min {overhead['min_s']:.3f}, max {overhead['max_s']:.3f}); from the medians: "
        f"{medians['wall_s']:.3f} s = {medians['inside_shards_s']:.3f} s inside shards "
        f"+ {medians['coordination_s']:.3f} s coordination"
    )
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
