"""The model alone over the default pipeline's batches: which token budget, which attention.

Two questions the pipeline's defaults rest on, answered by timing ``jax.jit(model.apply)``
(all-MiniLM-L6-v2, windows of 256, stride 32) over the batches the orchestrator's own
``Packer`` makes from the first ``--docs`` documents of the benchmark corpus, every shape
compiled and run once first, then ``--repeats`` interleaved passes over all batches:

* ``--budgets 0,256,512,1024,2048`` (the default): one pass per token budget
  (``run.batch_tokens``; 0 means the old 32 rows per batch), with ``--attention``;
* ``--attentions native,cpu-flash``: one pass per attention at the budget ``--budget``.

    .venv/bin/python -m benchmarks.model.batches [--docs 600] [--budgets ...] [--attentions ...]

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

from benchmarks.common.corpus import bench_corpus, read_documents
from benchmarks.common.options import int_list, require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.seamline_work import WEIGHTS, packed_batches
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.repeats import interleaved, spread

Side = tuple[Any, list[Any], int]
"""An attention, the arrays of every batch, and the real tokens they hold."""


def batch_arrays(model: Any, documents: list[Any], budget: int) -> tuple[list[Any], int]:
    """The arrays of every batch a run with ``batch_tokens: budget`` makes (0: 32 rows)."""
    batches, tokens = packed_batches(model, documents, budget or None)
    return [dict(batch.arrays) for batch in batches], tokens


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--budgets",
        type=int_list(0),
        metavar="N[,N...]",
        default=[0, 256, 512, 1024, 2048],
        help="0: 32 rows",
    )
    parser.add_argument("--attention", default="cpu-flash", help="for the budget sweep")
    parser.add_argument("--attentions", help="compare these at --budget instead of budgets")
    parser.add_argument("--budget", type=int, default=512)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.docs < 1 or args.repeats < 1:
        parser.error("--docs and --repeats must be at least 1")
    require_folder(args.out)
    return args


def make_sides(args: argparse.Namespace, model: Any, documents: list[Any]) -> dict[str, Side]:
    """One side per attention at ``--budget`` (``--attentions``), else one per budget."""
    from seamline.core import Registry, user_trust

    registry = Registry.discover(user_trust())
    sides: dict[str, Side] = {}
    if args.attentions:
        batches, tokens = batch_arrays(model, documents, args.budget)
        for name in args.attentions.split(","):
            sides[name] = (registry.create("attention", name), batches, tokens)
    else:
        attention = registry.create("attention", args.attention)
        for budget in args.budgets:
            batches, tokens = batch_arrays(model, documents, budget)
            sides[f"budget {budget or '32 rows'}"] = (attention, batches, tokens)
    return sides


def time_sides(
    model: Any, params: Any, sides: dict[str, Side], repeats: int, load: LoadAverages
) -> dict[str, list[dict[str, Any]]]:
    """Every side's batches through its jitted ``model.apply``, every shape compiled and run
    once first; then ``repeats`` interleaved passes, each timed whole."""
    import jax

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

    return interleaved(list(sides), repeats, run, load, pause=1.0)


def build_report(
    args: argparse.Namespace,
    sides: dict[str, Side],
    results: dict[str, list[dict[str, Any]]],
    load: LoadAverages,
) -> dict[str, Any]:
    """Each side's spread of a pass, its tokens and batches; the load and the host."""
    report: dict[str, Any] = {"benchmark": "model_batches", "docs": args.docs, "sides": {}}
    for name, runs in results.items():
        times = spread([r["seconds"] for r in runs])
        report["sides"][name] = {**times, "tokens": sides[name][2], "batches": len(sides[name][1])}
    report.update(load=load.as_json(), load_warning=load.exceeded, host=host_info())
    report["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return report


def print_report(report: dict[str, Any]) -> None:
    rows = []
    for name, side in report["sides"].items():
        seconds = f"{side['median_s']:.2f} ({side['min_s']:.2f}-{side['max_s']:.2f})"
        rows.append(
            (name, str(side["batches"]), seconds, f"{side['tokens'] / side['median_s']:,.0f}")
        )
    print_table(
        f"model.apply over {report['docs']} documents' batches",
        ("side", "batches", "median s (min-max)", "tokens/s"),
        rows,
    )
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    from seamline.components.models.bert import BertEncoder

    load = LoadAverages()
    documents = list(read_documents(bench_corpus()))[: args.docs]
    model = BertEncoder(BertEncoder.Config(weights=WEIGHTS, max_length=256, stride=32))
    params = model.load()
    sides = make_sides(args, model, documents)
    results = time_sides(model, params, sides, args.repeats, load)
    load.finish()
    report = build_report(args, sides, results, load)
    print_report(report)
    write_json(args.out / "model_batches.json", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
