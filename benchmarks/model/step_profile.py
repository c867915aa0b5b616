"""What XLA spends the model step on, by kind of operation, from its own profiler.

``step_breakdown`` measures the attention's share by taking it away; this script asks
XLA instead. It compiles the real all-MiniLM-L6-v2 step on full 256-token rows with an
attention (``cpu-flash`` by default), traces a few calls with :mod:`jax.profiler`, and
sums the time of every operation the CPU runtime reports, grouped by kind:

* ``matmul`` -- XLA's fusions built around a dot (on a CPU with YNNPACK, its
  ``ynn_fusion`` operations; ``dot``/``gemm`` ones elsewhere), with the reductions the
  layer norms make of the same fusion kind where XLA runs them there;
* ``attention`` -- the attention's custom call (``cpu-flash``'s ``ffi_call``);
* ``other`` -- every other operation: fusions of element-wise work (the GELU, the
  conversions to bfloat16, the layer norms' arithmetic, the bias additions), copies.

XLA may run independent operations side by side on the two cores (the query, key and
value projections do), so the kinds' times can add up to more than the step's: the
shares are of the summed operation time, not of the wall clock. Tracing adds a little
to each call.

    .venv/bin/python -m benchmarks.model.step_profile [--precision bfloat16] [--rows 2]
        [--calls 10] [--attention cpu-flash] [--out DIR]

Exit codes: 0 done; 2 a bad option.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jax

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.tables import print_table, run_context
from benchmarks.model.step_breakdown import (
    LENGTH,
    WEIGHTS,
    attention_or_exit,
    compiled_step,
    full_rows,
)
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.components.models.bert import BertEncoder, Config

KINDS = ("matmul", "attention", "other")
MATMUL = re.compile(r"^(ynn_fusion|xnn_fusion|onednn|dot|gemm|.*_dot_|.*dot_fusion)")
ATTENTION = re.compile(r"^(ffi_call|custom_call|custom-call)")
OPERATION = re.compile(r"^[a-z][\w-]*(\.\d+)?$")
"""XLA's operations are named in lower case (``ynn_fusion.12``, ``copy.3``); the runtime's
own events (``ThunkExecutor::Execute``, ``ParseArguments``) are not."""


def kind_of(name: str) -> str | None:
    """The kind of a traced operation by its XLA name; None for runtime bookkeeping."""
    if not OPERATION.match(name):
        return None
    if ATTENTION.match(name):
        return "attention"
    if MATMUL.match(name):
        return "matmul"
    return "other"


def summed_by_kind(events: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Microseconds per kind over the trace's complete events (``ph == "X"``)."""
    totals: dict[str, float] = defaultdict(float)
    for event in events:
        if event.get("ph") != "X":
            continue
        kind = kind_of(str(event.get("name", "")))
        if kind is not None:
            totals[kind] += float(event.get("dur", 0.0))
    return {kind: totals.get(kind, 0.0) for kind in KINDS}


def traced_events(folder: Path) -> list[dict[str, Any]]:
    """The events of the trace jax.profiler wrote under ``folder``."""
    files = sorted(folder.rglob("*.trace.json.gz"))
    if not files:
        raise RuntimeError(f"jax.profiler wrote no trace under {folder}")
    with gzip.open(files[-1], "rt", encoding="utf-8") as handle:
        events: list[dict[str, Any]] = json.load(handle).get("traceEvents", [])
    return events


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--rows", type=int, default=2, help="rows of 256 tokens (1-64)")
    parser.add_argument("--calls", type=int, default=10, help="traced calls (1-100)")
    parser.add_argument("--attention", default="cpu-flash", help="NAME or NAME:KEY=VALUE[,...]")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.rows <= 64 or not 1 <= args.calls <= 100:
        parser.error("--rows must be 1 to 64 and --calls 1 to 100")
    require_folder(args.out)
    attention = attention_or_exit(parser, args.attention)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    model = BertEncoder(Config(weights=WEIGHTS, max_length=LENGTH)).with_precision(args.precision)
    params = jax.device_put(model.load())
    step = compiled_step(model, params, full_rows(model, args.rows).arrays, attention)
    say_to_stderr(f"compiling: {args.precision}, {args.rows} rows, {args.attention}")
    for _ in range(3):
        step().block_until_ready()
    with tempfile.TemporaryDirectory(prefix="seamline-step-profile-") as tmp:
        jax.profiler.start_trace(tmp)
        wall = time.perf_counter()
        for _ in range(args.calls):
            step().block_until_ready()
        wall = time.perf_counter() - wall
        jax.profiler.stop_trace()
        totals = summed_by_kind(traced_events(Path(tmp)))
    load.finish()
    summed = sum(totals.values())
    if summed == 0:
        print("the trace held no XLA operations to sum", file=sys.stderr)
        return 1
    kinds = [
        {
            "kind": kind,
            "ms_per_step": totals[kind] / args.calls / 1e3,
            "share": totals[kind] / summed,
        }
        for kind in KINDS
    ]
    print_table(
        f"the {args.precision} step on {args.rows} rows of {LENGTH} tokens, {args.attention}, "
        f"{args.calls} traced calls ({wall / args.calls * 1e3:.1f} ms a call while traced)",
        ("kind", "ms per step (summed)", "share of the summed time"),
        [(k["kind"], f"{k['ms_per_step']:.2f}", f"{k['share']:.0%}") for k in kinds],
    )
    report = {
        "benchmark": "step_profile",
        "precision": args.precision,
        "rows": args.rows,
        "attention": args.attention,
        "calls": args.calls,
        "traced_ms_per_call": wall / args.calls * 1e3,
        "kinds": kinds,
        **run_context(started_at, started, load),
    }
    path = write_json(args.out / f"step_profile_{args.precision}.json", report)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
