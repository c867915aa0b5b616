"""seamline's CPU attentions against torch's ``scaled_dot_product_attention``, same inputs, one run.

The cases are the shapes the embedding model really calls attention with (all-MiniLM-L6-v2:
12 heads of 32; rows packed by the orchestrator from the benchmark corpus at the default
pipeline's 512-token budget, and the old 32 x 256 batch, packed and dense), plus one long
sequence (8192 tokens, 12 heads of 64) without a mask and with 5 % padding. For each, the
inputs are made once and saved; seamline's side times ``cpu-flash``, ``native`` and
``blockwise`` (each jitted) in this process, torch's side times SDPA (with a boolean mask
where the case has segments) in ``.venv-golden``. Repeats interleave the two sides round by
round; the table gives the median of the rounds' medians, with the fastest and slowest.

    .venv/bin/python benchmarks/attention_vs_torch.py [--repeats 5] [--calls 5] [--out DIR]

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

import _measure as measure

ROOT = measure.ROOT
REFERENCE_PYTHON = ROOT / ".venv-golden" / "bin" / "python"
IMPLEMENTATIONS = ("cpu-flash", "native", "blockwise")
LONG = 8192


def model_cases(corpus: Path, documents: int) -> dict[str, dict[str, Any]]:
    """q, k, v and segment ids of the shapes the model calls attention with, packed for real."""
    import numpy as np

    from seamline.components.models.bert import BertEncoder

    model = BertEncoder(BertEncoder.Config(weights=measure.WEIGHTS, max_length=256, stride=32))
    model.load()
    docs = list(measure.read_documents(corpus))[:documents]
    rng = np.random.default_rng(0)
    cases: dict[str, dict[str, Any]] = {}

    def add(name: str, rows: int, length: int, segments: Any) -> None:
        q, k, v = (rng.standard_normal((rows, length, 12, 32)).astype(np.float32) for _ in "qkv")
        cases[name] = {"q": q, "k": k, "v": v, "segments": segments}

    for budget, label in ((512, "budget 512"), (None, "32 rows")):
        batches, _ = measure.packed_batches(model, docs, budget)
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
        from seamline.core.registry import Registry

        registry = Registry.discover()
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

    def run_once(self) -> dict[str, dict[str, float]]:
        seconds: dict[str, dict[str, float]] = {}
        for (name, implementation), (call, arrays) in self.timed.items():
            times = []
            for _ in range(self.calls[name]):
                started = time.perf_counter()
                call(*arrays).block_until_ready()
                times.append(time.perf_counter() - started)
            seconds.setdefault(name, {})[implementation] = statistics.median(times)
        return seconds


def save_cases(cases: dict[str, dict[str, Any]], path: Path) -> None:
    import numpy as np

    arrays = {
        f"{name}/{key}": value
        for name, case in cases.items()
        for key, value in case.items()
        if value is not None
    }
    np.savez(path, **arrays)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--calls", type=int, default=5, help="calls per case per round")
    parser.add_argument("--long-calls", type=int, default=1, help="calls per long case per round")
    parser.add_argument("--no-long", action="store_true", help="leave out the 8192-token cases")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.calls < 1:
        parser.error("--repeats and --calls must be at least 1")
    if not REFERENCE_PYTHON.is_file():
        print("error: .venv-golden is missing: run `bash tests/golden/make_golden.sh "
              "--setup-only`", file=sys.stderr)  # fmt: skip
        return 2
    load = measure.LoadAverages()
    corpus_root = ROOT / "build" / "corpus-bench"
    corpus = corpus_root if corpus_root.is_dir() else measure.BUILT_CORPUS
    cases = model_cases(corpus, 400)
    if not args.no_long:
        cases.update(long_cases())
    with tempfile.TemporaryDirectory(prefix="seamline-attention-vs-torch-") as tmp:
        path = Path(tmp) / "cases.npz"
        save_cases(cases, path)
        torch_side = measure.Worker(
            "torch",
            [str(REFERENCE_PYTHON), str(ROOT / "benchmarks" / "_torch_attention_worker.py"),
             str(path), "--calls", str(args.calls), "--long-calls", str(args.long_calls)],
            Path(tmp) / "torch.log",
            env={"PYTHONPATH": str(ROOT / "benchmarks")},
        )  # fmt: skip
        try:
            ready = torch_side.receive()
            ours = SeamlineSide(cases, args.calls, args.long_calls)
            rounds: list[dict[str, dict[str, float]]] = []
            for repeat in range(args.repeats):
                time.sleep(1.0)
                seconds = ours.run_once()
                time.sleep(1.0)
                theirs = torch_side.request("run")["cases"]
                for name, value in theirs.items():
                    seconds[name]["torch-sdpa"] = value
                rounds.append(seconds)
                load.after_round()
                measure.say_to_stderr(f"  round {repeat + 1}/{args.repeats} done")
            torch_side.request("quit")
        except measure.WorkerError as failure:
            print(f"error: {failure}", file=sys.stderr)
            return 1
        finally:
            torch_side.close()
    load.finish()
    report = build_report(cases, rounds, ready, load)
    print_report(report)
    out = measure.write_json(args.out / "attention_vs_torch.json", report)
    measure.say_to_stderr(f"wrote {out}")
    return 0


def build_report(
    cases: dict[str, dict[str, Any]],
    rounds: list[dict[str, dict[str, float]]],
    torch_info: dict[str, Any],
    load: measure.LoadAverages,
) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name in cases:
        sides = {side: measure.spread([r[name][side] for r in rounds]) for side in rounds[0][name]}
        torch_median = sides["torch-sdpa"]["median_s"]
        for spread in sides.values():
            spread["torch_over_this"] = torch_median / spread["median_s"]
        table[name] = {"shape": list(cases[name]["q"].shape), "sides": sides}
    return {
        "benchmark": "attention_vs_torch",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cases": table,
        "rounds": len(rounds),
        "torch": torch_info,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": measure.host_info(),
        "versions": measure.versions("jax", "jaxlib", "seamline-cpu-flash"),
    }


def print_report(report: dict[str, Any]) -> None:
    sides = ("cpu-flash", "native", "blockwise", "torch-sdpa")
    rows = []
    for name, case in report["cases"].items():
        cells = []
        for side in sides:
            spread = case["sides"].get(side)
            cells.append(
                "-"
                if spread is None
                else f"{spread['median_s'] * 1e3:.1f} ({spread['torch_over_this']:.2f}x)"
            )
        rows.append((name, *cells))
    measure.print_table(
        "attention call, median ms (torch time / this: above 1 is faster than torch)",
        ("case", *sides),
        rows,
    )
    for line in measure.describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
