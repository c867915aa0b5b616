"""What the GELU formula costs in the bfloat16 step: ``erf`` (shipped) against ``erfc``.

Both compute the exact GELU in float32. ``jax.nn.gelu``'s ``erfc`` form is the more
accurate (about 4e-7 against 1e-6) and is what the float32 path keeps; the ``erf`` form
is torch's formula and what the bfloat16 path computes, because its result is rounded
to bfloat16 for the next matmul anyway (:func:`bert_math.activate`). This script
compiles the real all-MiniLM-L6-v2 step on full 256-token rows twice per precision,
once with each formula, and times them interleaved; the accuracy side of the same
choice is a row of ``benchmarks/model/mixed_precision.py``.

    .venv/bin/python -m benchmarks.model.gelu_cost [--rows 2,8] [--repeats 40]
        [--attention cpu-flash] [--out DIR]

Exit codes: 0 done; 2 a bad option.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.tables import print_table, run_context
from benchmarks.model.mixed_precision import gelu_by, patched
from benchmarks.model.step_breakdown import (
    LENGTH,
    WEIGHTS,
    attention_or_exit,
    compiled_step,
    full_rows,
    rows_or_exit,
    timed,
)
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.components.models.bert import BertEncoder, Config

PRECISIONS = ("float32", "bfloat16")
FORMULAS = ("erfc", "erf")
SHIPPED = {"float32": "erfc", "bfloat16": "erf"}


def gelu_formula(formula: str) -> contextlib.AbstractContextManager[None]:
    """While tracing, every GELU uses ``formula``, whatever the precision asks for."""
    return patched(activate=gelu_by(formula))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="2,8", help="rows per batch, comma-separated")
    parser.add_argument("--repeats", type=int, default=40, help="timed calls per cell (1-200)")
    parser.add_argument("--attention", default="cpu-flash", help="NAME or NAME:KEY=VALUE[,...]")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    row_counts = rows_or_exit(parser, args.rows)
    if not 1 <= args.repeats <= 200:
        parser.error("--repeats must be 1 to 200")
    require_folder(args.out)
    attention = attention_or_exit(parser, args.attention)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    steps: dict[tuple[str, int, str], Callable[[], jax.Array]] = {}
    for precision in PRECISIONS:
        model = BertEncoder(Config(weights=WEIGHTS, max_length=LENGTH)).with_precision(precision)
        params = jax.device_put(model.load())
        for rows in row_counts:
            arrays = full_rows(model, rows).arrays
            for formula in FORMULAS:
                step = compiled_step(model, params, arrays, attention)
                say_to_stderr(f"compiling: {precision}, {rows} rows, GELU by {formula}")
                with gelu_formula(formula):
                    step().block_until_ready()  # traced and compiled here, with the formula
                steps[(precision, rows, formula)] = step
    cells: dict[tuple[str, int, str], list[float]] = {key: [] for key in steps}
    for _ in range(args.repeats):  # interleaved: a slow moment touches every cell alike
        for key, step in steps.items():
            cells[key].append(timed(step))
        load.after_round()
    load.finish()
    results: list[dict[str, Any]] = [
        {
            "precision": precision,
            "rows": rows,
            "gelu": formula,
            "shipped": SHIPPED[precision] == formula,
            "tokens": rows * LENGTH,
            "step_ms": statistics.median(cells[(precision, rows, formula)]) * 1e3,
            "step_ms_range": [
                min(cells[(precision, rows, formula)]) * 1e3,
                max(cells[(precision, rows, formula)]) * 1e3,
            ],
            "vs_erfc": statistics.median(cells[(precision, rows, "erfc")])
            / statistics.median(cells[(precision, rows, formula)]),
        }
        for precision in PRECISIONS
        for rows in row_counts
        for formula in FORMULAS
    ]
    print_table(
        f"the model step on full {LENGTH}-token rows with each GELU formula "
        f"({args.attention}, {args.repeats} calls each, medians)",
        ("precision", "rows", "GELU", "step ms (min-max)", "tokens/s", "vs erfc"),
        [
            (
                r["precision"],
                str(r["rows"]),
                r["gelu"] + (" (shipped)" if r["shipped"] else ""),
                f"{r['step_ms']:.1f} ({r['step_ms_range'][0]:.1f}-{r['step_ms_range'][1]:.1f})",
                f"{r['tokens'] / r['step_ms'] * 1e3:,.0f}",
                f"{r['vs_erfc']:.3f}x",
            )
            for r in results
        ],
    )
    report = {
        "benchmark": "gelu_cost",
        "attention": args.attention,
        "repeats": args.repeats,
        "results": results,
        **run_context(started_at, started, load),
    }
    path = write_json(args.out / "gelu_cost.json", report)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
