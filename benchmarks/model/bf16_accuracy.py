"""bfloat16 against float32: what the optional reduced-precision path costs in accuracy, and buys.

The pipeline's ``precision: bfloat16`` runs the ``bert-encoder``'s matmuls and attention
in bfloat16 (accumulation, norms and the output stay float32). It is never the default:
this script says how far its embeddings fall from float32's and how fast it is, on
the same documents, so that a user can decide (``precision: auto`` decides the same way
with its gate, on the run's first documents).

Two sides, each a fresh ``seamline run`` process per repeat, interleaved: the default
pipeline with ``precision`` float32 and bfloat16 (``attention: auto``, writing
JSON lines to a temporary folder). Accuracy is measured on the last repeat's outputs,
window by window: the largest absolute difference of any component, and the cosine
similarity between the two vectors of each window (all embeddings are unit length);
and, for retrieval, how many of each window's 10 nearest neighbours among all the
windows (cosine, float32's) bfloat16's vectors keep, counted as the precision gate counts
them (ties kept).

    .venv/bin/python -m benchmarks.model.bf16_accuracy [--docs 400] [--repeats 2] [--out DIR]

Exit codes: 0 done; 1 a run failed (its log is printed); 2 a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.corpus import select_corpus
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT, SEAMLINE
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread
from seamline.core import neighbours_kept

PIPELINE = ROOT / "examples" / "pipelines" / "embed-docs-jsonl.yaml"
SIDES = ("float32", "bfloat16")
NEIGHBOURS = 10


def precision_flags(dtype: str) -> list[str]:
    """``--set`` flags computing in ``dtype`` unchecked: this script measures the gap itself,
    and also where the hardware emulates bfloat16 (then it is slower: the table says so)."""
    return [
        "--set",
        f"precision.use={dtype}",
        "--set",
        "precision.verify=false",
        "--set",
        "precision.require_native=false",
    ]


def run_side(dtype: str, corpus: Path, out: Path) -> dict[str, Any]:
    """One whole ``seamline run`` with the model in ``dtype``; its wall time and outputs."""
    target = out / dtype / "embeddings.jsonl"
    command = [
        str(SEAMLINE),
        "run",
        str(PIPELINE),
        *precision_flags(dtype),
        "--set",
        f"sink.with.path={target}",
    ]
    env = {**os.environ, "SEAMLINE_CORPUS": str(corpus)}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        raise SystemExit(1)
    return {"seconds": seconds, "path": str(target)}


def read_vectors(path: Path) -> dict[tuple[str, int], np.ndarray]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {(row["id"], row["window"]): np.asarray(row["embedding"], np.float32) for row in rows}


def accuracy(reference: Path, reduced: Path) -> dict[str, Any]:
    """How far bfloat16's vectors are from float32's, window by window and for retrieval."""
    full, half = read_vectors(reference), read_vectors(reduced)
    if full.keys() != half.keys():
        raise SystemExit("the two runs embedded different windows; nothing to compare")
    keys = sorted(full)
    a = np.stack([full[k] for k in keys]).astype(np.float64)
    b = np.stack([half[k] for k in keys]).astype(np.float64)
    cosine = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    k = min(NEIGHBOURS, len(keys) - 1)
    unit_a = a / np.linalg.norm(a, axis=1, keepdims=True)
    unit_b = b / np.linalg.norm(b, axis=1, keepdims=True)
    overlap = neighbours_kept(unit_a, unit_b, k)  # as the precision gate counts them
    return {
        "windows": len(keys),
        "max_abs_difference": float(np.max(np.abs(a - b))),
        "cosine_min": float(cosine.min()),
        "cosine_median": float(np.median(cosine)),
        "neighbours": k,
        "neighbours_kept_mean": float(np.mean(overlap)),
        "neighbours_kept_min": float(np.min(overlap)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=400, help="first N documents (default 400)")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats per side")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.docs < 2 or args.repeats < 1:
        parser.error("--docs must be at least 2 and --repeats at least 1")
    require_folder(args.out)
    load = LoadAverages()
    with tempfile.TemporaryDirectory(prefix="seamline-bf16-") as work:
        workdir = Path(work)
        corpus = select_corpus(args.docs, workdir)
        say_to_stderr(f"{corpus.documents} documents ({corpus.source}); untimed warm-up")
        for dtype in SIDES:  # fill the compile cache, as on any run after the first
            run_side(dtype, corpus.path, workdir / "warm")
        runs = interleaved(
            SIDES,
            args.repeats,
            lambda dtype: run_side(dtype, corpus.path, workdir / "timed"),
            load,
            pause=1.0,
        )
        load.finish()
        found = accuracy(Path(runs["float32"][-1]["path"]), Path(runs["bfloat16"][-1]["path"]))
    times = {side: spread([r["seconds"] for r in runs[side]]) for side in SIDES}
    report = {
        "benchmark": "bf16_accuracy",
        "command": " ".join(["python -m benchmarks.model.bf16_accuracy", *(argv or sys.argv[1:])]),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "documents": corpus.documents,
        "times": times,
        "bfloat16_speed_vs_float32": times["float32"]["median_s"] / times["bfloat16"]["median_s"],
        "accuracy": found,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
        "versions": versions("jax", "jaxlib", "seamline-cpu-flash"),
    }
    print_table(
        f"{corpus.documents} documents, whole seamline run per repeat",
        ["dtype", "whole s (min-max)", "speed vs float32"],
        [
            (
                side,
                f"{times[side]['median_s']:.1f} ({times[side]['min_s']:.1f}-"
                f"{times[side]['max_s']:.1f})",
                f"{times['float32']['median_s'] / times[side]['median_s']:.2f}x",
            )
            for side in SIDES
        ],
    )
    print(
        f"bfloat16 against float32 over {found['windows']} windows: max |difference| "
        f"{found['max_abs_difference']:.2e}, cosine min {found['cosine_min']:.5f} "
        f"(median {found['cosine_median']:.6f}); of each window's {found['neighbours']} "
        f"nearest neighbours {found['neighbours_kept_mean']:.1%} kept on average "
        f"(worst window {found['neighbours_kept_min']:.0%})"
    )
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)
    print(f"wrote {write_json(args.out / 'bf16_accuracy.json', report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
