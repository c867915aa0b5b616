"""all-mpnet-base-v2 in seamline against sentence-transformers, on the real weights.

Not part of ``make test`` (it needs the five weight packages, ``make mpnet``, and the
reference venv, ``bash tests/golden/make_golden.sh --setup-only``). Embeds the golden
texts (``tests/golden/texts.jsonl``: 64 texts from one word to several windows, many
scripts) through ``Embedder.from_pipeline(examples/pipelines/embed-docs-mpnet.yaml)``
(the run's own packing, kernels and checks; truncation at the model's 384 tokens)
and through sentence-transformers' ``encode`` on the same checkpoint folder, and
reports the largest absolute difference per attention implementation, and the time of
one ``encode`` of all the texts on each side (seamline's second call, compiled; torch's
only call): a steady-state comparison, not a whole-process one.

    .venv/bin/python -m benchmarks.model.mpnet_parity [--attention cpu-flash native blockwise]

Exit code 0 when every difference is within 1e-5, 1 otherwise, 2 when a venv or the
weights are missing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common.paths import REFERENCE_MISSING, REFERENCE_PYTHON
from seamline.api import Embedder
from seamline.components.models import split_zip

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "examples" / "pipelines" / "embed-docs-mpnet.yaml"
TEXTS = ROOT / "tests" / "golden" / "texts.jsonl"
REFERENCE = Path(__file__).resolve().parent / "_mpnet_reference.py"
ATOL = 1e-5


def texts() -> list[str]:
    lines = TEXTS.read_text(encoding="utf-8").split("\n")
    return [json.loads(line)["text"] for line in lines if line.strip()]


def reference(model_dir: str, inputs: list[str]) -> tuple[np.ndarray, float]:
    with tempfile.TemporaryDirectory() as scratch:
        texts_path, out_path = Path(scratch) / "texts.json", Path(scratch) / "out.npy"
        texts_path.write_text(json.dumps(inputs), encoding="utf-8")
        command = [str(REFERENCE_PYTHON), str(REFERENCE), model_dir, str(texts_path), str(out_path)]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        report = json.loads(done.stdout.strip().splitlines()[-1])
        return np.load(out_path), float(report["encode_seconds"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attention", nargs="+", default=["cpu-flash", "native", "blockwise"])
    args = parser.parse_args(argv)
    if not REFERENCE_PYTHON.exists():
        print(REFERENCE_MISSING, file=sys.stderr)
        return 2
    inputs = texts()
    # The folder the pipeline's weight source assembles (the same call: once, then cached).
    want, torch_seconds = reference(str(split_zip.resolve("all-mpnet-base-v2")), inputs)
    print(f"sentence-transformers: encode {torch_seconds:.2f} s")
    worst = 0.0
    for attention in args.attention:
        with Embedder.from_pipeline(PIPELINE, [f"attention.use={attention}"]) as embedder:
            got = np.asarray(embedder.encode(inputs))
            started = time.perf_counter()
            embedder.encode(inputs)
            seconds = time.perf_counter() - started
        diff = float(np.max(np.abs(got - want)))
        worst = max(worst, diff)
        print(
            f"{attention}: {len(inputs)} texts, max abs diff vs sentence-transformers "
            f"{diff:.3e}; encode {seconds:.2f} s ({torch_seconds / seconds:.2f}x torch's speed)"
        )
    return 0 if worst <= ATOL else 1


if __name__ == "__main__":
    sys.exit(main())
