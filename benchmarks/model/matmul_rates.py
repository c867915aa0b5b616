"""Whether int8 would make the dense layers faster: int8, bfloat16 and float32 matmuls side by side.

A CPU with ``avx512_vnni`` multiplies int8 by int8 into int32 sums (four products per
32-bit lane, where a bfloat16 dot product does two), so an int8 model could in principle
run its dense layers at twice bfloat16's rate. An int8 candidate would have to pass the
precision gate (the int8 rows of ``benchmarks/model/mixed_precision.py`` say whether it
could) and be faster; this script measures the second half for the matmuls JAX compiles
here: the six matmuls of an all-MiniLM-L6-v2 layer at a batch of ``--positions``
positions (a run's token budget), and one ``--roofline``-cubed matmul, in float32 (full
precision, as seamline's float32), bfloat16 (float32 sums) and int8 (int32 sums). The
operands hold the same integers in every precision; repeats are interleaved, each cell
a loop of calls long enough for the clock.

    .venv/bin/python -m benchmarks.model.matmul_rates [--positions 512] [--repeats 15]
        [--roofline 4096] [--out DIR]

Exit codes: 0 done; 2 a bad option.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr

HIDDEN, INTERMEDIATE = 384, 1536
"""all-MiniLM-L6-v2's widths."""
CELL_SECONDS = 0.05
"""Each timed cell calls its matmul until about this long has passed."""


@dataclass(frozen=True, slots=True)
class Precision:
    """How a matmul computes: operand dtype, sum dtype and JAX's precision setting."""

    name: str
    operands: Any
    sums: Any
    precision: jax.lax.Precision


PRECISIONS = (
    Precision("float32", jnp.float32, jnp.float32, jax.lax.Precision.HIGHEST),
    Precision("bfloat16", jnp.bfloat16, jnp.float32, jax.lax.Precision.DEFAULT),
    Precision("int8", jnp.int8, jnp.int32, jax.lax.Precision.DEFAULT),
)


@dataclass(frozen=True, slots=True)
class Shape:
    """``[rows, inner] @ [inner, columns]``, ``per_layer`` times in an encoder layer."""

    name: str
    rows: int
    inner: int
    columns: int
    per_layer: int

    @property
    def label(self) -> str:
        """``rows x inner x columns``, as the table shows it."""
        return f"{self.rows}x{self.inner}x{self.columns}"

    @property
    def operations(self) -> int:
        """Multiplies and adds, two per product."""
        return 2 * self.rows * self.inner * self.columns


def shapes(positions: int, roofline: int) -> list[Shape]:
    """The layer's matmuls at ``positions`` positions, and the roofline's cube."""
    return [
        Shape("query, key, value, attention output", positions, HIDDEN, HIDDEN, 4),
        Shape("feed-forward in", positions, HIDDEN, INTERMEDIATE, 1),
        Shape("feed-forward out", positions, INTERMEDIATE, HIDDEN, 1),
        Shape("roofline", roofline, roofline, roofline, 0),
    ]


def compiled(precision: Precision) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The matmul in ``precision``, compiled on first call."""

    def product(a: jax.Array, b: jax.Array) -> jax.Array:
        return jax.lax.dot(
            a, b, precision=precision.precision, preferred_element_type=precision.sums
        )

    return jax.jit(product)


def operands(shape: Shape, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random integers in int8's symmetric range: exact in every precision here."""
    rng = np.random.default_rng(seed)
    return (
        rng.integers(-127, 128, (shape.rows, shape.inner)).astype(np.int8),
        rng.integers(-127, 128, (shape.inner, shape.columns)).astype(np.int8),
    )


def seconds_per_call(run: Callable[[], jax.Array], calls: int) -> float:
    """The mean of ``calls`` calls, each waited for."""
    started = time.perf_counter()
    for _ in range(calls):
        run().block_until_ready()
    return (time.perf_counter() - started) / calls


def measure(
    cases: Sequence[Shape], repeats: int, say: Callable[[str], None]
) -> dict[tuple[str, str], list[float]]:
    """Seconds per call of each (shape, precision), ``repeats`` interleaved rounds: each
    round takes the precisions in a rotated order, so none is always first or last."""
    runs: dict[tuple[str, str], Callable[[], jax.Array]] = {}
    calls: dict[tuple[str, str], int] = {}
    for shape in cases:
        a, b = operands(shape)
        for precision in PRECISIONS:
            function = compiled(precision)
            left, right = jnp.asarray(a, precision.operands), jnp.asarray(b, precision.operands)
            run = lambda f=function, x=left, y=right: f(x, y)  # noqa: E731
            seconds_per_call(run, 1)  # the first call compiles
            once = seconds_per_call(run, 1)
            runs[(shape.name, precision.name)] = run
            calls[(shape.name, precision.name)] = max(1, round(CELL_SECONDS / max(once, 1e-6)))
    times: dict[tuple[str, str], list[float]] = {key: [] for key in runs}
    for round_ in range(repeats):
        say(f"round {round_ + 1} of {repeats}")
        turn = round_ % len(PRECISIONS)
        order = PRECISIONS[turn:] + PRECISIONS[:turn]
        for shape in cases:
            for precision in order:
                key = (shape.name, precision.name)
                times[key].append(seconds_per_call(runs[key], calls[key]))
    return times


def summarise(
    cases: Sequence[Shape], times: dict[tuple[str, str], list[float]]
) -> list[dict[str, Any]]:
    """Per shape (and for a whole layer's six matmuls, round by round): each precision's
    median and spread, its rate, and its speed against bfloat16 (bfloat16's time over its
    own)."""
    layer = [shape for shape in cases if shape.per_layer]
    rows = [
        (
            shape.name,
            shape.label,
            shape.operations,
            {p.name: times[(shape.name, p.name)] for p in PRECISIONS},
        )
        for shape in cases
    ]
    a_layer = {
        p.name: [
            sum(seconds * shape.per_layer for shape, seconds in zip(layer, per_shape, strict=True))
            for per_shape in zip(*(times[(shape.name, p.name)] for shape in layer), strict=True)
        ]
        for p in PRECISIONS
    }
    operations = sum(shape.operations * shape.per_layer for shape in layer)
    rows.insert(len(layer), ("a layer's six matmuls", "the six above", operations, a_layer))
    return [
        {
            "matmul": name,
            "shape": label,
            "operations": operations,
            "precisions": {
                p: {
                    "median_ms": statistics.median(values) * 1e3,
                    "min_ms": min(values) * 1e3,
                    "max_ms": max(values) * 1e3,
                    "g_per_s": operations / statistics.median(values) / 1e9,
                    "vs_bfloat16": statistics.median(seconds["bfloat16"])
                    / statistics.median(values),
                }
                for p, values in seconds.items()
            },
        }
        for name, label, operations, seconds in rows
    ]


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--positions", type=positive, default=512, help="rows of the layer's matmuls"
    )
    parser.add_argument("--repeats", type=positive, default=15, help="interleaved rounds")
    parser.add_argument("--roofline", type=positive, default=4096, help="the cube's side")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    require_folder(args.out)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    cases = shapes(args.positions, args.roofline)
    times = measure(cases, args.repeats, say_to_stderr)
    load.after_round()
    load.finish()
    results = summarise(cases, times)
    print_table(
        f"G(FL)OP/s, median of {args.repeats} interleaved rounds (int8 against bfloat16)",
        ("matmul", "rows x inner x columns", "float32", "bfloat16", "int8", "int8 vs bfloat16"),
        [
            (
                r["matmul"],
                r["shape"],
                *(f"{r['precisions'][p.name]['g_per_s']:.0f}" for p in PRECISIONS),
                f"{r['precisions']['int8']['vs_bfloat16']:.2f}x",
            )
            for r in results
        ],
    )
    report = {
        "benchmark": "matmul_rates",
        "positions": args.positions,
        "roofline": args.roofline,
        "repeats": args.repeats,
        "results": results,
        **run_context(started_at, started, load, jax=jax.__version__),
    }
    path = write_json(args.out / "matmul_rates.json", report)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
