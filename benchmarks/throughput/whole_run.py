"""seamline run against sentence-transformers, whole process, on thousands of real documents.

What a user waits for: ``seamline run examples/pipelines/embed-docs.yaml`` from the
command line to its exit, against a sentence-transformers script that embeds the
same windows from its start to its exit. Three sides, each a fresh process per
repeat, interleaved round by round:

* ``seamline`` -- the default pipeline with JAX's persistent compile cache warm, as
  on any run after the first (the cache is filled by an untimed run first);
* ``seamline-cold`` -- the same with an empty compile cache, as on a first run;
* ``sentence-transformers`` -- ``_reference_run`` in ``.venv-golden``: import,
  load, ``encode`` (batch size 32), save;
* ``seamline-before`` (with ``--before SRC``) -- ``seamline`` again, warm too, with
  ``SRC`` first on ``PYTHONPATH``: the source of an earlier checkout, every ``src`` tree
  of it copied into one folder (docs/cli.md, Start-up; one tree alone, ``core/src``, pairs
  it with today's adapters, which cannot import it), so a change is measured against what
  it replaced in the same rounds.

The model is the pipeline's (``--pipeline``): all-MiniLM-L6-v2 in ``make run``'s,
all-mpnet-base-v2 in ``examples/pipelines/embed-docs-mpnet.yaml`` (``make mpnet``
first). The reference loads the same checkpoint folder at the same maximum length,
and the work counted per token follows from its ``config.json``
(:mod:`benchmarks.common.model_under_test`).

The reference is given the text of every window seamline embedded (``text[span]``
of each output record), so both sides embed the same token sequences; the run
checks that every embedding agrees within 1e-5 -- or, where the run computed in a
lower precision (``--set precision=bfloat16`` or ``auto``; the precision it chose is read
from its log), that the embeddings pass the precision gate's defaults against the
float32 reference (min cosine 0.9999, 98 % of top-10 neighbours kept), the promise such
a run makes. Steady state is reported apart:
seamline's from its batch log (every batch but the first of each shape), the
reference's from its ``encode`` call. Useful FLOP/s count only real tokens (the
dense layers per token, attention per pair of tokens in the same window) and are
set against a large float32 matmul measured in the same run, in JAX and in torch.

    .venv/bin/python -m benchmarks.throughput.whole_run [--docs N] [--repeats 3]
        [--out benchmarks/results] [--pipeline examples/pipelines/embed-docs.yaml]
        [--set PATH=VALUE ...] [--no-cold] [--before SRC[:SRC...]]

The pipeline's sink decides where each run's output goes and how it is read back for
the comparison: a LanceDB table (the default pipeline's ``lancedb`` sink, its indexes
built at the end of every timed run), a Parquet file, or JSON lines.

Exit codes: 0 done; 1 a side failed (its log is printed) or the embeddings disagree
(beyond 1e-5 in float32, outside the gate in a lower precision); 2 ``.venv-golden``
missing or a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import first_of_bench_corpus
from benchmarks.common.model_under_test import ModelUnderTest, model_under_test
from benchmarks.common.options import add_run_options, require_folder
from benchmarks.common.paths import (
    BEFORE_RECIPE,
    REFERENCE_MISSING,
    REFERENCE_PYTHON,
    ROOT,
    before_environment,
    check_before,
    module_command,
    reference_env,
    timed_seamline_run,
)
from benchmarks.common.seamline_work import SINK_SUFFIXES
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread
from seamline.contracts.errors import UserError
from seamline.core import GateFigures, PrecisionGate, compare_precision, precision_refusals

DEFAULT_PIPELINE = ROOT / "examples" / "pipelines" / "embed-docs.yaml"
PIPELINE = [DEFAULT_PIPELINE]
"""The pipeline every seamline run runs (``--pipeline`` of this script)."""
REFERENCE_RUN = "benchmarks.throughput._reference_run"
SIDES = ("seamline", "seamline-cold", "sentence-transformers")
AGREEMENT = 1e-5
"""Largest difference allowed from the float32 reference when seamline computed in float32."""
FLOAT32 = "float32"


class SideFailed(RuntimeError):
    """A side's process exited with an error; the message carries its output's end."""


OVERRIDES: list[str] = []
"""Extra ``--set`` overrides for every seamline run (``--set`` of this script)."""


def run_seamline(corpus: Path, out: Path, cache: Path, before: str | None = None) -> dict[str, Any]:
    """One ``seamline run`` of the default pipeline, timed from start to exit; its log parsed.

    ``before``: source folders to import seamline's packages from ahead of this checkout's.
    """
    env = {**os.environ, "SEAMLINE_CORPUS": str(corpus), "SEAMLINE_CACHE_DIR": str(cache)}
    if before:
        env = before_environment(env, before)
    settings = [
        f"sink.with.path={out}",
        "monitors.0.with.every=1",  # every batch in the log, for the steady state
        *OVERRIDES,
    ]
    seconds, done = timed_seamline_run(PIPELINE[0], settings, env, failure=SideFailed)
    lines = (done.stdout + done.stderr).splitlines()  # the JSON log goes to stderr
    events = [json.loads(line) for line in lines if line.startswith("{")]
    return {"seconds": seconds, **steady_state(events)}


def steady_state(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens/s over every batch but the first of each length (compilation, first execution),
    and the precision the run computed in (float32 where it negotiated none)."""
    batches = [e for e in events if e.get("event") == "batch done"]
    finished = next(e for e in events if e.get("event") == "run finished")
    seen: set[int] = set()
    tokens = seconds = 0.0
    for batch in batches:
        if batch["length"] in seen:
            tokens += batch["tokens"]
            seconds += batch["seconds"]
        seen.add(batch["length"])
    return {
        "run_seconds": finished["seconds"],
        "tokens": finished["tokens"],
        "batches": finished["batches"],
        "compilations": finished["compilations"],
        "steady_tokens_per_s": tokens / seconds if seconds else None,
        "precision": chosen_precision(events),
    }


def chosen_precision(events: list[dict[str, Any]]) -> str:
    """The precision named by the run's ``precision chosen`` event, float32 without one.

    The event's text starts with the precision (``bfloat16 (checked against float32:
    ...)``); a run of a pipeline that asks for no precision logs none.
    """
    for event in events:
        if event.get("event") == "precision chosen":
            return str(event.get("precision", FLOAT32)).split(" ", 1)[0] or FLOAT32
    return FLOAT32


def disagreement(precision: str, figures: GateFigures) -> str | None:
    """Why seamline's vectors fail the promise of the precision they were computed in.

    Float32 promises parity with sentence-transformers (every value within 1e-5); a
    lower precision promises what its gate checked (the gate's defaults: min cosine and
    neighbours kept against float32). None: the promise holds.
    """
    if precision == FLOAT32:
        if not figures.max_abs <= AGREEMENT:  # NaN fails too
            return f"embeddings differ by {figures.max_abs:.3g} (> {AGREEMENT})"
        return None
    failed = precision_refusals(figures, PrecisionGate())
    if failed:
        return f"{precision} embeddings fail the precision gate's defaults: " + "; ".join(failed)
    return None


def run_reference(texts: Path, out: Path, model: ModelUnderTest) -> dict[str, Any]:
    """One whole sentence-transformers process, timed from start to exit; what it reported."""
    started = time.perf_counter()
    arguments = (str(texts), str(out), "--model-dir", str(model.checkpoint),
                 "--max-seq-length", str(model.max_length))  # fmt: skip
    done = subprocess.run(
        module_command(REFERENCE_RUN, *arguments, python=REFERENCE_PYTHON),
        cwd=ROOT,
        env={**os.environ, **reference_env()},
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SideFailed(f"the reference exited {done.returncode}:\n{done.stderr[-3000:]}")
    return {"seconds": seconds, **json.loads(done.stdout.strip().splitlines()[-1])}


def output_suffix(pipeline: Path) -> str:
    """The file suffix the pipeline's sink writes, so its output can be named and read back."""
    import yaml

    sink = (yaml.safe_load(pipeline.read_text(encoding="utf-8")).get("sink") or {}).get("use")
    if sink not in SINK_SUFFIXES:
        raise SideFailed(
            f"{pipeline}: its sink {sink!r} cannot be read back here; use a pipeline whose "
            f"sink is one of {', '.join(SINK_SUFFIXES)}"
        )
    return SINK_SUFFIXES[sink]


def records(path: Path) -> list[dict[str, Any]]:
    """A run's output as ``{id, window, embedding}`` rows, whichever sink wrote it."""
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as lines:
            return [json.loads(line) for line in lines if line.strip()]
    if path.suffix == ".lance":
        import lancedb

        table = lancedb.connect(str(path.parent)).open_table(path.stem).to_arrow()
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
    columns = table.select(["id", "window_index", "embedding"]).to_pydict()
    return [
        {"id": doc_id, "window": window, "embedding": vector}
        for doc_id, window, vector in zip(
            columns["id"], columns["window_index"], columns["embedding"], strict=True
        )
    ]


def seamline_windows(
    corpus: Path, output: list[dict[str, Any]], model: ModelUnderTest
) -> tuple[list[str], list[int], list[bool]]:
    """Per output window, in the output's order: its text, its token count, and whether
    the text re-tokenizes to its tokens (each document is read and prepared once).

    The reference embeds ``text[span]``; where a window starts inside a word (its
    first token a ``##`` continuation), that text tokenizes differently, so the two
    sides embed different inputs and such windows are left out of the comparison
    (and counted). Token counts come from the model's own ``prepare``.
    """
    from tokenizers import Tokenizer

    from seamline.contracts import Document

    tokenizer = Tokenizer.from_file(str(model.tokenizer))
    tokenizer.no_padding()
    tokenizer.enable_truncation(model.max_length)
    prepared: dict[tuple[str, int], tuple[list[int], tuple[int, int]]] = {}
    texts: dict[str, str] = {}
    for record in output:
        if record["id"] in texts:
            continue
        texts[record["id"]] = (corpus / record["id"]).read_text(encoding="utf-8")
        document = Document(id=record["id"], text=texts[record["id"]], metadata={})
        for example in model.encoder.prepare(document):
            ids = [int(x) for x in example.features["input_ids"][: example.length]]
            prepared[(record["id"], example.index)] = (ids, example.span)
    windows, lengths, same = [], [], []
    for record in output:
        ids, (start, end) = prepared[(record["id"], record["window"])]
        windows.append(texts[record["id"]][start:end])
        lengths.append(len(ids))
        same.append(tokenizer.encode(windows[-1]).ids == ids)
    return windows, lengths, same


def jax_matmul_rate(size: int = 4096, repeats: int = 5) -> float:
    """GFLOP/s of a float32 ``size``-cubed matmul in JAX, in a process of its own."""
    code = (
        "import time, jax, jax.numpy as jnp\n"
        f"a = jnp.ones(({size}, {size}), jnp.float32)\n"
        "f = jax.jit(lambda x: x @ x); f(a).block_until_ready()\n"
        "best = float('inf')\n"
        f"for _ in range({repeats}):\n"
        "    t = time.perf_counter(); f(a).block_until_ready()\n"
        "    best = min(best, time.perf_counter() - t)\n"
        f"print(2 * {size}**3 / best / 1e9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def torch_matmul_rate() -> float:
    """GFLOP/s of the same matmul in torch, in the reference side's interpreter."""
    done = subprocess.run(
        module_command(REFERENCE_RUN, "--matmul", python=REFERENCE_PYTHON),
        cwd=ROOT,
        env={**os.environ, **reference_env()},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout)["gflops"])


def compare(
    order: list[dict[str, Any]],
    comparable: list[bool],
    seamline_out: list[dict[str, Any]],
    reference_npy: Path,
) -> GateFigures:
    """seamline's vectors against the reference's, window by window: the gate's figures
    (largest difference, cosines, top-10 neighbours kept).

    The reference embedded the windows in ``order`` (the untimed run's output); a
    timed run's records are matched to them by document id and window index. Only
    windows whose two inputs are the same tokens (``comparable``) count.
    """
    import numpy as np

    theirs = np.load(reference_npy).astype(np.float64)
    ours = {(r["id"], r["window"]): r["embedding"] for r in seamline_out}
    keys = [(r["id"], r["window"]) for r in order]
    if len(ours) != len(keys) or set(ours) != set(keys) or theirs.shape[0] != len(keys):
        raise SideFailed(
            f"seamline wrote {len(ours)} windows, the reference {theirs.shape[0]}, of {len(keys)}"
        )
    mine = np.asarray([ours[key] for key in keys], np.float64)
    same = np.asarray(comparable)
    return compare_precision(theirs[same], mine[same], PrecisionGate().top_k)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(
        parser, DEFAULT_PIPELINE, "the pipeline seamline runs (default: make run's, LanceDB)"
    )
    parser.add_argument(
        "--no-cold",
        action="store_true",
        help="leave out the seamline-cold side (a first run's compiles, every repeat)",
    )
    parser.add_argument(
        "--before",
        metavar="SRC[:SRC...]",
        help="add a seamline-before side importing seamline from these source folders "
        f"first: {BEFORE_RECIPE}",
    )
    args = parser.parse_args(argv)
    if args.before and (problem := check_before(args.before)):
        parser.error(problem)
    OVERRIDES[:] = args.overrides
    PIPELINE[0] = args.pipeline
    if args.repeats < 1 or (args.docs is not None and args.docs < 1):
        parser.error("--repeats and --docs must be at least 1")
    require_folder(args.out)
    try:
        model = model_under_test(args.pipeline, args.overrides)
    except (UserError, ValueError) as failure:  # a pipeline or checkpoint it cannot use
        print(f"error: {failure}", file=sys.stderr)
        return 2
    if not REFERENCE_PYTHON.is_file():
        print(REFERENCE_MISSING, file=sys.stderr)
        return 2
    try:
        return measure_all(args, model)
    except SideFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1


def measure_all(args: argparse.Namespace, model: ModelUnderTest) -> int:
    load = LoadAverages()
    sides = tuple(side for side in SIDES if not (args.no_cold and side == "seamline-cold"))
    if args.before:
        sides = ("seamline", "seamline-before", *sides[1:])
    with tempfile.TemporaryDirectory(prefix="seamline-whole-run-") as tmp:
        workdir = Path(tmp)
        corpus, documents = first_of_bench_corpus(args.docs, workdir)
        warm_cache = workdir / "cache-warm"
        say_to_stderr(f"{documents} documents; filling the compile cache (untimed run)")
        suffix = output_suffix(PIPELINE[0])
        first = run_seamline(corpus, workdir / f"warmup{suffix}", warm_cache)
        output = records(workdir / f"warmup{suffix}")
        windows, lengths, comparable = seamline_windows(corpus, output, model)
        texts = workdir / "texts.json"
        texts.write_text(json.dumps(windows), encoding="utf-8")
        tokens, flops = sum(lengths), model.useful_flops(lengths)
        if args.before:  # its own programs into the warm cache (they may differ), untimed
            run_seamline(corpus, workdir / f"warmup-before{suffix}", warm_cache, args.before)

        def run(side: str) -> dict[str, Any]:
            out = workdir / f"{side}.out"
            if side == "seamline":
                return run_seamline(corpus, out.with_suffix(suffix), warm_cache)
            if side == "seamline-before":
                return run_seamline(corpus, out.with_suffix(suffix), warm_cache, args.before)
            if side == "seamline-cold":
                cold = workdir / f"cache-cold-{time.monotonic_ns()}"
                result = run_seamline(corpus, out.with_suffix(suffix), cold)
                shutil.rmtree(cold, ignore_errors=True)
                return result
            return run_reference(texts, out.with_suffix(".npy"), model)

        rates = {"jax": [jax_matmul_rate()], "torch": [torch_matmul_rate()]}
        results = interleaved(sides, args.repeats, run, load, pause=1.0)
        rates["jax"].append(jax_matmul_rate())
        rates["torch"].append(torch_matmul_rate())
        figures = compare(
            output,
            comparable,
            records(workdir / f"seamline{suffix}"),
            workdir / "sentence-transformers.npy",
        )
        load.finish()
    report = build_report(args, documents, len(windows), tokens, flops, results, rates,
                          figures, load, first)  # fmt: skip
    report["windows_compared"] = sum(comparable)
    report["model"] = {
        "component": model.component,
        "checkpoint": model.checkpoint.name,
        "max_length": model.max_length,
        "dense_flops_per_token": model.dense_flops_per_token,
        "attention_flops_per_pair": model.attention_flops_per_pair,
    }
    print_report(report)
    path = write_json(args.out / result_name(args.pipeline), report)
    say_to_stderr(f"wrote {path}")
    if problem := disagreement(report["precision"], figures):
        print(f"error: {problem}", file=sys.stderr)
        return 1
    return 0


def result_name(pipeline: Path) -> str:
    """``whole_run.json`` for ``make run``'s pipeline, ``whole_run-<name>.json`` for another."""
    if pipeline.resolve() == DEFAULT_PIPELINE.resolve():
        return "whole_run.json"
    return f"whole_run-{pipeline.stem}.json"


def build_report(
    args: argparse.Namespace,
    documents: int,
    windows: int,
    tokens: int,
    flops: float,
    results: dict[str, list[dict[str, Any]]],
    rates: dict[str, list[float]],
    figures: GateFigures,
    load: LoadAverages,
    first: dict[str, Any],
) -> dict[str, Any]:
    import statistics

    roofline = max(max(values) for values in rates.values())
    sides: dict[str, Any] = {}
    for side, runs in results.items():
        times = spread([r["seconds"] for r in runs])
        if side == "sentence-transformers":
            steady = [tokens / r["encode_seconds"] for r in runs]
        else:
            steady = [r["steady_tokens_per_s"] for r in runs if r["steady_tokens_per_s"]]
        sides[side] = {
            **times,
            "docs_per_s": documents / times["median_s"],
            "tokens_per_s": tokens / times["median_s"],
            "steady_tokens_per_s": statistics.median(steady) if steady else None,
            "runs": runs,
        }
    reference = sides["sentence-transformers"]
    for side in sides.values():
        side["vs_reference"] = reference["median_s"] / side["median_s"]
        if side["steady_tokens_per_s"] and reference["steady_tokens_per_s"]:
            side["steady_vs_reference"] = (
                side["steady_tokens_per_s"] / reference["steady_tokens_per_s"]
            )
        per_s = side["steady_tokens_per_s"] or 0.0
        side["useful_gflops_steady"] = per_s * flops / tokens / 1e9
        side["useful_gflops_whole"] = flops / side["median_s"] / 1e9
        side["steady_of_roofline"] = side["useful_gflops_steady"] / roofline
    if "seamline-before" in sides:  # > 1: this checkout is faster than the one before
        sides["seamline"]["vs_before"] = (
            sides["seamline-before"]["median_s"] / sides["seamline"]["median_s"]
        )
    return {
        "benchmark": "whole_run",
        "pipeline": str(PIPELINE[0]),
        "command": " ".join(
            [
                "python -m benchmarks.throughput.whole_run",
                *([f"--pipeline {args.pipeline}"] if args.pipeline != DEFAULT_PIPELINE else []),
                *([f"--docs {args.docs}"] if args.docs else []),
                f"--repeats {args.repeats}",
                *(["--no-cold"] if args.no_cold else []),
                *([f"--before {args.before}"] if args.before else []),
                *(f"--set {override}" for override in args.overrides),
            ]
        ),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "documents": documents,
        "windows": windows,
        "tokens": tokens,
        "useful_gflop": flops / 1e9,
        "precision": results["seamline"][-1]["precision"],  # the run compared
        "max_abs_difference": figures.max_abs,
        "min_cosine": figures.min_cosine,
        "neighbours_kept": figures.neighbours,
        "matmul_gflops": rates,
        "roofline_gflops": roofline,
        "first_run": first,
        "before": args.before,
        "sides": sides,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
        "versions": versions("jax", "jaxlib", "seamline-cpu-flash"),
    }


def print_report(report: dict[str, Any]) -> None:
    rows = []
    for name, side in report["sides"].items():
        steady = side["steady_tokens_per_s"]
        rows.append((
            name,
            f"{side['median_s']:.1f} ({side['min_s']:.1f}-{side['max_s']:.1f})",
            f"{side['docs_per_s']:.1f}",
            f"{side['vs_reference']:.2f}x",
            f"{steady:,.0f}" if steady else "-",
            f"{side.get('steady_vs_reference', 0):.2f}x",
            f"{side['useful_gflops_steady']:.0f} ({side['steady_of_roofline']:.0%})",
        ))  # fmt: skip
    print_table(
        f"{report['model']['checkpoint']}: {report['documents']} documents, "
        f"{report['windows']} windows, {report['tokens']:,} "
        f"tokens; roofline {report['roofline_gflops']:.0f} GFLOP/s (4096^3 float32 matmul)",
        ("side", "whole s (min-max)", "docs/s", "vs ST", "steady tok/s", "steady vs ST",
         "useful GFLOP/s steady (of roofline)"),
        rows,
    )  # fmt: skip
    if "vs_before" in report["sides"]["seamline"]:
        print(
            f"seamline against seamline-before ({report['before']}): "
            f"{report['sides']['seamline']['vs_before']:.3f}x whole process (medians)"
        )
    print(
        f"seamline in {report['precision']}: "
        f"max |seamline - sentence-transformers| = {report['max_abs_difference']:.3g}, "
        f"min cosine {report['min_cosine']:.6f} over "
        f"{report['windows_compared']} of {report['windows']} windows (the others start inside "
        "a word, so their text re-tokenizes to other tokens)"
    )
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
