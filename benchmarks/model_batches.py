"""The model alone over the default pipeline's batches: which token budget, which attention.

Two questions the pipeline's defaults rest on, answered by timing ``jax.jit(model.apply)``
(all-MiniLM-L6-v2, windows of 256, stride 32) over the batches the orchestrator's own
``Packer`` makes from the first ``--docs`` documents of the benchmark corpus, every shape
compiled and run once first, then ``--repeats`` interleaved passes over all batches:

* ``--budgets 0,256,512,1024,2048`` (the default): one pass per token budget
  (``run.batch_tokens``; 0 means the old 32 rows per batch), with ``--attention``;
* ``--attentions native,cpu-flash``: one pass per attention at the budget ``--budget``.

    .venv/bin/python benchmarks/model_batches.py [--docs 600] [--budgets ...] [--attentions ...]

Prints the median seconds of a pass with the fastest and slowest, tokens/s, and the
load average; writes ``model_batches.json``. Exit codes: 0 done; 2 a bad option.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import _measure as measure

ROOT = measure.ROOT
BENCH_CORPUS = ROOT / "build" / "corpus-bench"


def batch_arrays(model: Any, documents: list[Any], budget: int) -> tuple[list[Any], int]:
    """The arrays of every batch a run with ``batch_tokens: budget`` makes (0: 32 rows)."""
    batches, tokens = measure.packed_batches(model, documents, budget or None)
    return [dict(batch.arrays) for batch in batches], tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budgets", default="0,256,512,1024,2048")
    parser.add_argument("--attention", default="cpu-flash", help="for the budget sweep")
    parser.add_argument("--attentions", help="compare these at --budget instead of budgets")
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    try:
        budgets = [int(b) for b in args.budgets.split(",")]
    except ValueError:
        parser.error("--budgets must be comma-separated integers")
    if args.docs < 1 or args.repeats < 1 or min(budgets) < 0:
        parser.error("--docs and --repeats must be at least 1, budgets at least 0")

    import jax

    from seamline.components.models.bert import BertEncoder
    from seamline.core.registry import Registry

    load = measure.LoadAverages()
    if not BENCH_CORPUS.is_dir():
        import subprocess

        subprocess.run(
            [sys.executable, str(measure.MAKE_CORPUS), "--members", "--min-chars", "100",
             str(BENCH_CORPUS)],
            check=True,
        )  # fmt: skip
    documents = list(measure.read_documents(BENCH_CORPUS))[: args.docs]
    model = BertEncoder(BertEncoder.Config(weights=measure.WEIGHTS, max_length=256, stride=32))
    params = model.load()
    registry = Registry.discover()
    sides: dict[str, tuple[Any, list[Any], int]] = {}
    if args.attentions:
        batches, tokens = batch_arrays(model, documents, args.budget)
        for name in args.attentions.split(","):
            sides[name] = (registry.create("attention", name), batches, tokens)
    else:
        attention = registry.create("attention", args.attention)
        for budget in budgets:
            batches, tokens = batch_arrays(model, documents, budget)
            sides[f"budget {budget or '32 rows'}"] = (attention, batches, tokens)

    calls = {}
    for name, (attention, batches, _) in sides.items():
        call = jax.jit(lambda p, b, a=attention: model.apply(p, b, a))
        for batch in batches:
            call(params, batch).block_until_ready()
        calls[name] = call

    def run(name: str) -> dict[str, Any]:
        _, batches, _ = sides[name]
        started = time.perf_counter()
        for batch in batches:
            calls[name](params, batch).block_until_ready()
        return {"seconds": time.perf_counter() - started}

    results = measure.interleaved(list(sides), args.repeats, run, load, pause=1.0)
    load.finish()
    report: dict[str, Any] = {"benchmark": "model_batches", "docs": args.docs, "sides": {}}
    rows = []
    for name, runs in results.items():
        spread = measure.spread([r["seconds"] for r in runs])
        tokens, batches = sides[name][2], len(sides[name][1])
        report["sides"][name] = {**spread, "tokens": tokens, "batches": batches}
        seconds = f"{spread['median_s']:.2f} ({spread['min_s']:.2f}-{spread['max_s']:.2f})"
        rows.append((name, str(batches), seconds, f"{tokens / spread['median_s']:,.0f}"))
    report.update(load=load.as_json(), load_warning=load.exceeded, host=measure.host_info())
    report["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    measure.print_table(
        f"model.apply over {args.docs} documents' batches",
        ("side", "batches", "median s (min-max)", "tokens/s"),
        rows,
    )
    for line in measure.describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)
    measure.write_json(args.out / "model_batches.json", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
