"""seamline's CPU attentions against torch's ``scaled_dot_product_attention``, same inputs, one run.

The cases are the shapes the embedding model really calls attention with (all-MiniLM-L6-v2:
12 heads of 32; rows packed by the orchestrator from the benchmark corpus at the default
pipeline's 512-token budget, and the old 32 x 256 batch, packed and dense), plus one long
sequence (8192 tokens, 12 heads of 64) without a mask and with 5 % padding. For each, the
inputs are made once and saved; seamline's side times ``cpu-flash``, ``native`` and
``blockwise`` (each jitted) in this process, torch's side times SDPA (with a boolean mask
where the case has segments) in ``.venv-golden``. Repeats interleave the two sides round by
round; the table gives the median of the rounds' medians, with the fastest and slowest.

    .venv/bin/python -m benchmarks.attention.vs_torch [--repeats 5] [--calls 5] [--out DIR]

Exit codes: 0 done; 1 the torch worker failed (its log is printed); 2 ``.venv-golden`` missing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import bench_corpus, read_documents
from benchmarks.common.options import require_folder
from benchmarks.common.paths import (
    REFERENCE_MISSING,
    REFERENCE_PYTHON,
    RESULTS,
    module_command,
    reference_env,
)
from benchmarks.common.seamline_work import WEIGHTS, packed_batches
from benchmarks.common.tables import print_table
from benchmarks.common.workers import Worker, WorkerError
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread

TORCH_WORKER = "benchmarks.attention._torch_worker"
SIDES = ("seamline", "torch")
IMPLEMENTATIONS = ("cpu-flash", "native", "blockwise")
LONG = 8192


def model_cases(corpus: Path, documents: int) -> dict[str, dict[str, Any]]:
    """q, k, v and segment ids of the shapes the model calls attention with, packed for real."""
    import numpy as np

    from seamline.components.models.bert import BertEncoder

    model = BertEncoder(BertEncoder.Config(weights=WEIGHTS, max_length=256, stride=32))
    model.load()
    docs = list(read_documents(corpus))[:documents]
    rng = np.random.default_rng(0)
    cases: dict[str, dict[str, Any]] = {}

    def add(name: str, rows: int, length: int, segments: Any) -> None:
        q, k, v = (rng.standard_normal((rows, length, 12, 32)).astype(np.float32) for _ in "qkv")
        cases[name] = {"q": q, "k": k, "v": v, "segments": segments}

    for budget, label in ((512, "budget 512"), (None, "32 rows")):
        batches, _ = packed_batches(model, docs, budget)
        first: dict[int, Any] = {}
        for batch in batches:
            first.setdefault(batch.length, batch)
        for length in sorted(first):
            batch = first[length]
            if budget is None and length != 256:
                continue
            packed = len(batch.examples) / batch.batch_size
            add(f"{batch.batch_size}x{length} packed ({label}, {packed:.1f} per row)",
                batch.batch_size, length, batch.arrays["segment"])  # fmt: skip
    add("32x256 dense (no mask)", 32, 256, None)
    return cases


def long_cases() -> dict[str, dict[str, Any]]:
    import numpy as np

    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, LONG, 12, 64)).astype(np.float32) for _ in "qkv")
    padded = np.ones((1, LONG), np.int32)
    padded[:, LONG - LONG // 20 :] = 0
    return {
        f"1x{LONG} heads 12x64, no mask": {"q": q, "k": k, "v": v, "segments": None},
        f"1x{LONG} heads 12x64, 5% padding": {"q": q, "k": k, "v": v, "segments": padded},
    }


class SeamlineSide:
    """Each implementation jitted per case; one ``run_once`` times every (case, implementation)."""

    def __init__(self, cases: dict[str, dict[str, Any]], calls: int, long_calls: int) -> None:
        import jax
        import jax.numpy as jnp

        from seamline.contracts import SegmentIds
        from seamline.core import Registry, user_trust

        registry = Registry.discover(user_trust())
        self.jax = jax
        self.calls = {name: long_calls if name.startswith("1x") else calls for name in cases}
        self.timed: dict[tuple[str, str], Any] = {}
        for name, case in cases.items():
            arrays = [jnp.asarray(case[x]) for x in ("q", "k", "v")]
            masked = case["segments"] is not None
            if masked:  # an argument, as in the model: a constant would be folded into the mask
                arrays.append(jnp.asarray(case["segments"]))
            for implementation in IMPLEMENTATIONS:
                if implementation == "blockwise" and not name.startswith("1x"):
                    continue  # blockwise is the long-sequence kernel; auto never picks it here
                attention = registry.create("attention", implementation)

                def attend(q: Any, k: Any, v: Any, *segments: Any, a: Any = attention) -> Any:
                    ids = SegmentIds(segments[0], segments[0]) if segments else None
                    return a(q, k, v, segment_ids=ids)

                call = jax.jit(attend)
                call(*arrays).block_until_ready()
                self.timed[(name, implementation)] = (call, arrays)

    def run_once(self) -> dict[str, Any]:
        """Each (case, implementation)'s median call; ``seconds``, their sum."""
        seconds: dict[str, dict[str, float]] = {}
        for (name, implementation), (call, arrays) in self.timed.items():
            times = []
            for _ in range(self.calls[name]):
                started = time.perf_counter()
                call(*arrays).block_until_ready()
                times.append(time.perf_counter() - started)
            seconds.setdefault(name, {})[implementation] = statistics.median(times)
        total = sum(value for case in seconds.values() for value in case.values())
        return {"seconds": total, "cases": seconds}


def save_cases(cases: dict[str, dict[str, Any]], path: Path) -> None:
    import numpy as np

    arrays = {
        f"{name}/{key}": value
        for name, case in cases.items()
        for key, value in case.items()
        if value is not None
    }
    np.savez(path, **arrays)


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--calls", type=int, default=5, help="calls per case per round")
    parser.add_argument("--long-calls", type=int, default=1, help="calls per long case per round")
    parser.add_argument("--no-long", action="store_true", help="leave out the 8192-token cases")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.calls < 1:
        parser.error("--repeats and --calls must be at least 1")
    require_folder(args.out)
    return args


def run_rounds(
    cases: dict[str, dict[str, Any]], args: argparse.Namespace, load: LoadAverages
) -> tuple[list[dict[str, dict[str, float]]], dict[str, Any]]:
    """Both sides, rounds interleaved (torch's in ``.venv-golden``): each round's seconds per
    case and side, and what the torch worker said when ready. :class:`WorkerError` if it died."""
    with tempfile.TemporaryDirectory(prefix="seamline-attention-vs-torch-") as tmp:
        path = Path(tmp) / "cases.npz"
        save_cases(cases, path)
        calls = ("--calls", str(args.calls), "--long-calls", str(args.long_calls))
        torch_side = Worker(
            "torch",
            module_command(TORCH_WORKER, str(path), *calls, python=REFERENCE_PYTHON),
            Path(tmp) / "torch.log",
            env=reference_env(),
        )
        try:
            ready = torch_side.receive()
            ours = SeamlineSide(cases, args.calls, args.long_calls)
            sides = {"seamline": ours.run_once, "torch": lambda: torch_side.request("run")}
            results = interleaved(SIDES, args.repeats, lambda side: sides[side](), load, pause=1.0)
            torch_side.request("quit")
        finally:
            torch_side.close()
    rounds = []
    for mine, theirs in zip(results["seamline"], results["torch"], strict=True):
        seconds = mine["cases"]
        for name, value in theirs["cases"].items():
            seconds[name]["torch-sdpa"] = value
        rounds.append(seconds)
    return rounds, ready


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    if not REFERENCE_PYTHON.is_file():
        print(REFERENCE_MISSING, file=sys.stderr)
        return 2
    load = LoadAverages()
    cases = model_cases(bench_corpus(), 400)
    if not args.no_long:
        cases.update(long_cases())
    try:
        rounds, ready = run_rounds(cases, args, load)
    except WorkerError as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    load.finish()
    report = build_report(cases, rounds, ready, load)
    print_report(report)
    out = write_json(args.out / "attention_vs_torch.json", report)
    say_to_stderr(f"wrote {out}")
    return 0


def build_report(
    cases: dict[str, dict[str, Any]],
    rounds: list[dict[str, dict[str, float]]],
    torch_info: dict[str, Any],
    load: LoadAverages,
) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name in cases:
        sides = {side: spread([r[name][side] for r in rounds]) for side in rounds[0][name]}
        torch_median = sides["torch-sdpa"]["median_s"]
        for times in sides.values():
            times["torch_over_this"] = torch_median / times["median_s"]
        table[name] = {"shape": list(cases[name]["q"].shape), "sides": sides}
    return {
        "benchmark": "attention_vs_torch",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cases": table,
        "rounds": len(rounds),
        "torch": torch_info,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
        "versions": versions("jax", "jaxlib", "seamline-cpu-flash"),
    }


def print_report(report: dict[str, Any]) -> None:
    sides = ("cpu-flash", "native", "blockwise", "torch-sdpa")
    rows = []
    for name, case in report["cases"].items():
        cells = []
        for side in sides:
            times = case["sides"].get(side)
            cells.append(
                "-"
                if times is None
                else f"{times['median_s'] * 1e3:.1f} ({times['torch_over_this']:.2f}x)"
            )
        rows.append((name, *cells))
    print_table(
        "attention call, median ms (torch time / this: above 1 is faster than torch)",
        ("case", *sides),
        rows,
    )
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
