"""``Embedder.encode`` against ``seamline run`` on the same texts, in one run (goal: >= 0.90).

::

    .venv/bin/python -m benchmarks.throughput.encode_vs_run [--texts 10000] [--chars 400]
        [--repeats 3] [--out benchmarks/results]

Is the in-process door as fast as the batch job? The texts are the benchmark corpus's
documents in order (repeated past its 2,252), each cut to its first ``--chars``
characters at a space (:func:`benchmarks.common.corpus.corpus_texts`, as ``serve_load``
takes them). The default of 400 keeps every one of them in one 256-token window (the
longest makes 248 tokens; at 600 characters 5 of the 2,252 need a second window, up to
410 tokens): a run embeds every window of a text, ``encode`` (``long_text="truncate"``)
only the first, so only texts of one window give both sides the same work, and texts/s
is then as fair as tokens/s. The benchmark checks it rather than trusts it: every text
must make one window on both sides and both must count the same tokens (the tokens of
the windows computed, special tokens included, as ``RunSummary`` and ``Pending.tokens``
count them), else it stops with exit code 1 and says to lower ``--chars``.

Both sides use one pipeline, ``serve_load``'s (``texts_pipeline`` of
:mod:`benchmarks.common.seamline_work`: the ``make run`` model, ``auto`` attention and
``batch_tokens: 512``; a ``jsonl`` loader of the texts and a ``jsonl`` sink), with JAX's
persistent compile cache on and warm for both (an untimed run fills it first). Each
round runs one side after the other (run, encode, run, encode, ...), each in a fresh
process:

* ``run``: ``seamline run PIPELINE``, timed from the process's start to its exit; and
  its own printed figures: its seconds (``RunSummary.seconds``) and when it wrote its
  first output;
* ``encode``: this module as a worker (``--worker``): ``Embedder.from_pipeline(PIPELINE)``
  (the compile cache switched on as the command line does), a first encode of every text
  (``long_text="windows"``, which also counts each text's windows), then the timed
  ``encode(texts)`` (what ``encode`` does: ``submit(texts).result()``, whose ``Pending``
  counts the tokens).

Two figures per side, each measured the same way on both:

* **embedding work** (texts/s, tokens/s): the warm ``encode`` call; the run from its
  first output to its end (its seconds less its first output's, both as ``seamline run``
  prints them, to a tenth of a second). The run cannot be timed warm (one pass a
  process), so its fixed start (loading the weights, reading the first shape back from
  the compile cache, the first batch) is left out of it, as the warm call leaves it out.
  What stays in costs the run only: creating its components (its seconds start before
  that, its first output's clock after), the other shapes read back from the cache,
  writing its output and publishing it, and the tokens of its first batch (at most 512)
  counted over the shorter time;
* **whole** (texts/s): from starting the process to the vectors: the run's process to
  its exit (imports, building, all texts embedded and written); the worker's to the end
  of its first encode (imports, ``from_pipeline``, all texts embedded, not written).

**The ratio** ``encode / run`` that the goal (>= 0.90) is set on is of tokens/s over
the embedding work, medians against medians (and its spread over the rounds, each
round's two sides against each other): the goal is about what the door does with texts
once it is open, which a program that embeds from Python pays again for every call,
while start-up it pays once; and what the run's figure carries more than the call's
(above) can only lower the ratio, so meeting the goal is not an artefact of the
measurement. The whole figures' ratio is given beside it.

Results go to ``results/encode_vs_run.json`` (every round's figures, the load, the
host, versions). Exit codes: 0 done (goal met or not: the report says); 1 a side failed
or the sides did not do the same work; 2 a bad option.

The ``--worker`` option is internal: it runs the encode side as a worker.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import corpus_texts
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, SEAMLINE, module_command
from benchmarks.common.seamline_work import RUN_FORMAT, run_figures, texts_pipeline
from benchmarks.common.tables import print_table, run_context
from benchmarks.common.workers import Worker, WorkerError, serve
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread

MODULE = "benchmarks.throughput.encode_vs_run"
"""This module, which starts itself as the encode side's worker."""
SIDES = ("run", "encode")
GOAL = 0.90
"""``encode``'s tokens/s over the embedding work, as a share of the run's (issue 22)."""
PAUSE_SECONDS = 1.0
"""Quiet time before each side, so the previous side's spinning threads settle."""
CACHE_VARIABLE = "SEAMLINE_CACHE_DIR"
"""Where both sides keep JAX's persistent compile cache (``seamline.adapters.compile_cache``)."""
say = say_to_stderr


class SideFailed(RuntimeError):
    """A side failed, or the two did not do the same work; the message says which."""


# -- the encode side, in its worker process ---------------------------------------------------


class EncodeSide:
    """``Embedder.from_pipeline``, a first encode of every text, then one timed encode a
    request (:func:`benchmarks.common.workers.serve` runs it)."""

    def __init__(self, pipeline: Path, texts_file: Path) -> None:
        started = time.perf_counter()
        from seamline.adapters.compile_cache import enable_compile_cache
        from seamline.api import Embedder

        enable_compile_cache()  # $SEAMLINE_CACHE_DIR, as `seamline run` switches it on
        with texts_file.open(encoding="utf-8") as lines:
            self.texts = [json.loads(line)["text"] for line in lines if line.strip()]
        imported = time.perf_counter()
        self.embedder = Embedder.from_pipeline(pipeline)
        built = time.perf_counter()
        first = self.embedder.submit(self.texts, long_text="windows")
        windows = first.result()
        done = time.perf_counter()
        self.info = {
            "texts": len(self.texts),
            "windows": sum(len(vectors) for vectors in windows),
            "tokens": first.tokens,
            "import_s": imported - started,
            "from_pipeline_s": built - imported,
            "first_encode_s": done - built,
        }

    def run_once(self) -> dict[str, Any]:
        """One timed ``encode(texts)``: ``submit(texts).result()``, as ``encode`` does."""
        started = time.perf_counter()
        pending = self.embedder.submit(self.texts)
        vectors = pending.result()
        seconds = time.perf_counter() - started
        return {"seconds": seconds, "texts": len(vectors), "tokens": pending.tokens}


# -- the driver ---------------------------------------------------------------------------------


def run_side(pipeline: Path, cache: Path) -> dict[str, Any]:
    """One ``seamline run`` of the pipeline in a fresh process: its whole wall time, its own
    figures, and ``seconds``, its embedding work (from its first output to its end)."""
    argv = [
        str(SEAMLINE),
        "run",
        str(pipeline),
        "--compile-cache",
        "--log-level",
        "warning",
        *RUN_FORMAT,
    ]
    env = {**os.environ, CACHE_VARIABLE: str(cache)}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            argv, cwd=pipeline.parent, env=env, capture_output=True, text=True, timeout=3600
        )
    except subprocess.TimeoutExpired:
        raise SideFailed("seamline run took more than an hour") from None
    whole = time.perf_counter() - started
    if done.returncode != 0:
        raise SideFailed(f"seamline run exited {done.returncode}:\n{done.stderr[-3000:]}")
    try:
        figures = run_figures(done.stdout)
    except ValueError as err:
        raise SideFailed(str(err)) from None
    first = figures["first_output_seconds"]
    if first is None or figures["seconds"] - first <= 0:
        raise SideFailed(
            f"the run took {figures['seconds']} s, its first output came at {first} s: too "
            "short to time after its first output; give more --texts"
        )
    return {"seconds": figures["seconds"] - first, "whole_seconds": whole, **figures}


def encode_side(pipeline: Path, texts_file: Path, cache: Path, log: Path) -> dict[str, Any]:
    """A fresh worker: its whole time to the end of its first encode, then one timed encode."""
    argv = module_command(
        MODULE, "--worker", "--pipeline", str(pipeline), "--texts-file", str(texts_file)
    )
    started = time.perf_counter()
    worker = Worker("encode", argv, log, env={CACHE_VARIABLE: str(cache)})
    try:
        first = worker.receive()
        whole = time.perf_counter() - started
        timed = worker.request("run")
        done = worker.request("quit")
    finally:
        worker.close()
    return {
        **timed,
        "whole_seconds": whole,
        "first_pass": first,
        "peak_rss_kib": done.get("peak_rss_kib"),
    }


def check_run(result: dict[str, Any], texts: int, tokens: int | None = None) -> None:
    """A run embedded one window of each text (and ``tokens`` tokens, when given)."""
    made = (result["documents"], result["set_aside"], result["outputs"])
    if made != (texts, 0, texts):
        raise SideFailed(
            f"the run read {made[0]} of the {texts} texts, set {made[1]} aside and made "
            f"{made[2]} windows: a run embeds every window of a text and encode only the "
            "first, so the sides would not do the same work; lower --chars"
        )
    if tokens is not None and result["tokens"] != tokens:
        raise SideFailed(f"this run counted {result['tokens']} tokens, the first {tokens}")


def check_encode(result: dict[str, Any], texts: int, tokens: int) -> None:
    """The worker found one window per text and its timed encode counted the run's tokens."""
    first = result["first_pass"]
    if (first["texts"], first["windows"], result["texts"]) != (texts, texts, texts):
        raise SideFailed(
            f"encode read {first['texts']} of the {texts} texts and found {first['windows']} "
            "windows in them: they must make one window each; lower --chars"
        )
    if (first["tokens"], result["tokens"]) != (tokens, tokens):
        raise SideFailed(
            f"encode counted {first['tokens']} tokens over every window and {result['tokens']} "
            f"over the first windows; the run counted {tokens}: not the same work"
        )


def measure(args: argparse.Namespace, texts: list[str], load: LoadAverages) -> dict[str, Any]:
    """The untimed run, the interleaved rounds, and the report's figures."""
    with tempfile.TemporaryDirectory(prefix="seamline-encode-vs-run-") as work:
        folder = Path(work)
        texts_file = folder / "texts.jsonl"
        texts_file.write_text(
            "".join(json.dumps({"id": f"t{k}", "text": t}) + "\n" for k, t in enumerate(texts)),
            encoding="utf-8",
        )
        pipeline = folder / "pipeline.yaml"
        pipeline.write_text(
            texts_pipeline("encode-vs-run", texts_file, folder / "out" / "emb.jsonl"),
            encoding="utf-8",
        )
        cache = folder / "compile-cache"
        say(f"{len(texts)} texts; filling the compile cache (an untimed run)...")
        first = run_side(pipeline, cache)
        check_run(first, len(texts))
        tokens = first["tokens"]
        logs = iter(range(1, args.repeats + 1))

        def one(side: str) -> dict[str, Any]:
            if side == "run":
                result = run_side(pipeline, cache)
                check_run(result, len(texts), tokens)
            else:
                result = encode_side(
                    pipeline, texts_file, cache, folder / f"encode-{next(logs)}.log"
                )
                check_encode(result, len(texts), tokens)
            return result

        rounds = interleaved(SIDES, args.repeats, one, load, pause=PAUSE_SECONDS)
    return figures(len(texts), tokens, first, rounds)


def figures(
    texts: int, tokens: int, first: dict[str, Any], rounds: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """Each side's medians and spreads; the ratios encode / run."""
    sides: dict[str, Any] = {}
    for side, runs in rounds.items():
        work = spread([r["seconds"] for r in runs])
        whole = spread([r["whole_seconds"] for r in runs])
        sides[side] = {
            "embedding_work": work,
            "texts_per_s": texts / work["median_s"],
            "tokens_per_s": tokens / work["median_s"],
            "whole": whole,
            "whole_texts_per_s": texts / whole["median_s"],
            "runs": runs,
        }
    run, encode = sides["run"], sides["encode"]
    by_round = [
        r["seconds"] / e["seconds"] for r, e in zip(rounds["run"], rounds["encode"], strict=True)
    ]
    ratio = encode["tokens_per_s"] / run["tokens_per_s"]
    return {
        "texts": texts,
        "tokens": tokens,
        "first_run": first,
        "sides": sides,
        "ratio": {
            "tokens_per_s": ratio,
            "by_round": by_round,
            "whole": encode["whole_texts_per_s"] / run["whole_texts_per_s"],
        },
        "goal": GOAL,
        "goal_met": ratio >= GOAL,
    }


def show(report: dict[str, Any]) -> None:
    sides, ratio = report["sides"], report["ratio"]

    def seconds(figure: dict[str, float]) -> str:
        return f"{figure['median_s']:.2f} ({figure['min_s']:.2f}-{figure['max_s']:.2f})"

    rows = [
        [
            name,
            seconds(sides[side]["embedding_work"]),
            f"{sides[side]['texts_per_s']:,.1f}",
            f"{sides[side]['tokens_per_s']:,.0f}",
            seconds(sides[side]["whole"]),
            f"{sides[side]['whole_texts_per_s']:,.1f}",
        ]
        for side, name in (("run", "seamline run"), ("encode", "Embedder.encode"))
    ]
    rows.append([
        "encode / run",
        "",
        f"{ratio['tokens_per_s']:.2f}",
        f"{ratio['tokens_per_s']:.2f} ({min(ratio['by_round']):.2f}-{max(ratio['by_round']):.2f})",
        "",
        f"{ratio['whole']:.2f}",
    ])  # fmt: skip
    print_table(
        f"Embedder.encode against seamline run: {report['texts']:,} texts "
        f"({report['distinct_texts']:,} distinct), {report['tokens']:,} tokens, one window "
        f"each; medians of {report['settings']['repeats']} (min-max)",
        ["side", "embedding work s", "texts/s", "tokens/s", "whole s", "whole texts/s"],
        rows,
    )
    verdict = "met" if report["goal_met"] else "NOT met"
    print(
        f"goal: encode / run, tokens/s over the embedding work, >= {report['goal']:.2f}: "
        f"{ratio['tokens_per_s']:.2f}, {verdict} (by round {min(ratio['by_round']):.2f}-"
        f"{max(ratio['by_round']):.2f})"
    )
    print(
        "embedding work: encode's warm call; the run from its first output to its end. "
        "whole: from the process's start to the vectors (the run's to its exit)"
    )
    context = report["context"]
    for line in describe_load(context["load_average"], context["load_warning"], os.cpu_count()):
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=10000, help="texts to embed (default 10000)")
    parser.add_argument(
        "--chars",
        type=int,
        default=400,
        help="characters kept of each text (default 400: every text one 256-token window)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results folder")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pipeline", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--texts-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve(lambda: EncodeSide(args.pipeline, args.texts_file))
        return 0
    if min(args.texts, args.chars, args.repeats) < 1:
        parser.error("--texts, --chars and --repeats must be at least 1")
    require_folder(args.out)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    texts = corpus_texts(args.texts, args.chars)
    try:
        report = measure(args, texts, load)
    except (SideFailed, WorkerError) as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    load.finish()
    report = {
        "benchmark": "encode_vs_run",
        "command": f"python -m {MODULE} --texts {args.texts} --chars {args.chars} "
        f"--repeats {args.repeats}",
        "distinct_texts": len(set(texts)),
        **report,
        "settings": {
            "texts": args.texts,
            "chars": args.chars,
            "repeats": args.repeats,
            "out": str(args.out),
        },
        "context": run_context(
            started_at, started, load, versions=versions("jax", "jaxlib", "seamline-core")
        ),
    }
    show(report)
    say(f"wrote {write_json(args.out / 'encode_vs_run.json', report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
