"""What the ``memory`` monitor costs a run: none, sampling per batch, sampling around every call.

Usage::

    .venv/bin/python -m benchmarks.overhead.monitor_cost [--docs 120] [--repeats 5] [--batch-size 8]
        [--max-length 128] [--out benchmarks/results]

Three sides run the same pipeline file in this one process, alternately (none,
memory-batch, memory, none, ...), on the same documents (the first ``--docs`` of the
``make run`` corpus, sorted by name): ``text-files`` -> ``bert-encoder``
(all-MiniLM-L6-v2, windows of ``--max-length``, stride 32) -> ``native`` attention ->
``npy`` sink, batches of ``--batch-size``; the sides differ in the monitor added to
the run (``Pipeline.run(extra_monitors=...)``):

* **none** -- no ``memory`` monitor;
* **memory-batch** -- ``memory`` with ``attribute_seams: false``: RSS and
  ``jax.live_arrays()`` sampled once per batch, growth not charged to seams;
* **memory** -- ``memory`` with its defaults: sampled also at the start
  (``SeamStarted``, monitor contract 1.4) and end (``SeamCall``) of every seam call,
  so that growth is charged to the call it happened in.

The ``memory`` monitor added is the real one with its ``observe`` timed, per event
type, so each run also says how long the monitor itself took: a figure the noise
of a whole run (the model's seconds dwarf it) does not blur. Every side also
carries the benchmarks' timer monitor (the ``Compiled`` and ``BatchDone`` seconds,
and a count of ``SeamCall`` events). A run's time is the wall time of
``Pipeline.run()`` less the seconds its ``Compiled`` events report (each run
compiles its shapes again).
Small batches are the hard case: the monitor's cost is per batch and per seam call
(one ``prepare`` per document), the model's per token.

It prints each side's median seconds with the fastest and slowest repeat, documents
per second, the ratio to ``none``, and the monitor's own time: median seconds per
run, its share of the run, and microseconds per seam call and per batch, with the
load average. Results go to ``OUT/monitor_cost.json``.
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

from benchmarks.common.corpus import select_corpus
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.seamline_work import pipeline_spec, timer_monitor
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread

SIDES = ("none", "memory-batch", "memory")
ATTRIBUTE_SEAMS: dict[str, bool | None] = {"none": None, "memory-batch": False, "memory": True}
"""Side -> the memory monitor's ``attribute_seams`` (None: no memory monitor)."""
PAUSE_SECONDS = 0.5
DISTRIBUTIONS = ("jax", "jaxlib", "psutil", "seamline-core", "seamline-components")
say = say_to_stderr


def write_pipeline(workdir: Path, corpus: Path, args: argparse.Namespace) -> Path:
    """The pipeline file every side runs (no monitors of its own)."""
    path = workdir / "pipeline.yaml"
    spec = pipeline_spec(
        "monitor-cost", corpus, args.max_length, "npy", workdir / "out", args.batch_size
    )
    path.write_text(spec, encoding="utf-8")
    return path


def timed_memory_monitor(attribute_seams: bool) -> Any:
    """The ``memory`` monitor, unchanged but for a clock around ``observe``."""
    from seamline.components.monitors.memory import MemoryMonitor, MemoryMonitorConfig
    from seamline.contracts import Event

    class TimedMemoryMonitor(MemoryMonitor):
        def __init__(self) -> None:
            super().__init__(MemoryMonitorConfig(attribute_seams=attribute_seams))
            self.spent: dict[str, float] = {}
            self.events: dict[str, int] = {}

        def observe(self, event: Event) -> None:
            started = time.perf_counter()
            super().observe(event)
            kind = type(event).__name__
            self.spent[kind] = self.spent.get(kind, 0.0) + time.perf_counter() - started
            self.events[kind] = self.events.get(kind, 0) + 1

    return TimedMemoryMonitor()


def run_once(path: Path, side: str) -> dict[str, Any]:
    """One run of the pipeline with ``side``'s monitor, timed; its seconds exclude compiling."""
    from seamline.core import Pipeline

    timer = timer_monitor()
    monitors = [timer]
    attribute = ATTRIBUTE_SEAMS[side]
    memory = None if attribute is None else timed_memory_monitor(attribute)
    if memory is not None:
        monitors.append(memory)
    pipeline = Pipeline.from_yaml(path)
    started = time.perf_counter()
    summary = pipeline.run(extra_monitors=monitors)
    wall = time.perf_counter() - started
    return {
        "monitor_seconds": sum(memory.spent.values()) if memory else 0.0,
        "monitor_events": dict(memory.events) if memory else {},
        "monitor_seconds_by_event": dict(memory.spent) if memory else {},
        "seconds": wall - timer.compile_seconds,
        "wall_seconds": wall,
        "compile_seconds": timer.compile_seconds,
        "documents": summary.counts.documents,
        "batches": summary.counts.batches,
        "seam_calls": timer.seam_calls,
        "failed_documents": summary.counts.failed_documents,
    }


def build_report(
    args: argparse.Namespace, results: dict[str, list[dict[str, Any]]], context: dict[str, Any]
) -> dict[str, Any]:
    """Each side's spread, documents per second, ratio to ``none`` and cost per seam call."""
    baseline = spread([r["seconds"] for r in results["none"]])["median_s"]
    first = results["none"][0]
    sides = {}
    for side in SIDES:
        runs = results[side]
        if any(
            (r["documents"], r["batches"]) != (first["documents"], first["batches"]) for r in runs
        ):
            say(f"warning: {side} did not do the same work as none in every repeat")
        stats = spread([r["seconds"] for r in runs])
        calls = runs[0]["seam_calls"]
        monitor_s = statistics.median(r["monitor_seconds"] for r in runs)
        sides[side] = {
            "runs": runs,
            **stats,
            "documents_per_s": first["documents"] / stats["median_s"],
            "ratio_to_none": baseline / stats["median_s"],
            "seam_calls": calls,
            "monitor_median_s": monitor_s,
            "monitor_share_of_run": monitor_s / stats["median_s"],
            "monitor_per_seam_call_us": 1e6 * monitor_s / calls,
            "monitor_per_batch_us": 1e6 * monitor_s / first["batches"],
        }
    return {
        "benchmark": "monitor_cost",
        **context,
        "documents": first["documents"],
        "batches": first["batches"],
        "repeats": args.repeats,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "sides": sides,
        "versions": versions(*DISTRIBUTIONS),
    }


def print_report(report: dict[str, Any]) -> None:
    print_table(
        f"{report['documents']} documents, {report['batches']} batches of "
        f"{report['batch_size']}, {report['repeats']} repeats ({report['started']})",
        ("side", "median s", "min s", "max s", "docs/s", "x none", "monitor", "of run"),
        [
            (
                name,
                f"{side['median_s']:.3f}",
                f"{side['min_s']:.3f}",
                f"{side['max_s']:.3f}",
                f"{side['documents_per_s']:.1f}",
                f"{side['ratio_to_none']:.3f}",
                f"{side['monitor_median_s']:.3f} s",
                f"{100 * side['monitor_share_of_run']:.2f} %",
            )
            for name, side in report["sides"].items()
        ],
    )
    for name, side in report["sides"].items():
        if side["monitor_median_s"]:
            print(
                f"{name}: the monitor took {side['monitor_per_seam_call_us']:,.0f} us per seam "
                f"call, {side['monitor_per_batch_us'] / 1e3:,.2f} ms per batch; events "
                f"{side['runs'][0]['monitor_events']}"
            )
    print(f"seam calls per run: {report['sides']['none']['seam_calls']}")
    for line in describe_load(
        report["load_average"], report["load_warning"], report["host"]["cpus"]
    ):
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per side (5)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.docs < 1 or args.repeats < 1 or args.batch_size < 1:
        parser.error("--docs, --repeats and --batch-size must be at least 1")
    require_folder(args.out)
    if args.repeats < 3:
        say("fewer than 3 repeats: the medians are single runs, fit for a smoke test only")

    load = LoadAverages()
    started_at = datetime.datetime.now(datetime.UTC)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seamline-monitor-cost-") as tmp:
        workdir = Path(tmp)
        corpus = select_corpus(args.docs, workdir)
        say(f"{corpus.documents} documents ({corpus.source})")
        path = write_pipeline(workdir, corpus.path, args)
        say("warming up (one untimed run of each side)...")
        for side in SIDES:
            run_once(path, side)
        results = interleaved(
            SIDES, args.repeats, lambda side: run_once(path, side), load, pause=PAUSE_SECONDS
        )
    load.finish()
    corpus_info = {"documents": corpus.documents, "source": corpus.source}
    context = run_context(started_at, started, load, corpus=corpus_info)
    report = build_report(args, results, context)
    path = write_json(args.out / "monitor_cost.json", report)
    print_report(report)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
