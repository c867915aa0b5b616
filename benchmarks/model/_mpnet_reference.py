"""The reference side of ``mpnet_parity``: sentence-transformers' ``encode`` of all-mpnet-base-v2.

Runs in ``.venv-golden`` (torch is never installed in ``.venv``) on the checkpoint folder
seamline assembled from the split-zip packages, offline, float32 on the CPU, batch size
32, its own truncation at max_seq_length (384). Imports nothing of seamline.

    .venv-golden/bin/python benchmarks/model/_mpnet_reference.py MODEL_DIR TEXTS.json OUT.npy
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", help="the assembled checkpoint folder")
    parser.add_argument("texts_path", help="a JSON list of texts")
    parser.add_argument("out_path", help="where the .npy of vectors goes")
    args = parser.parse_args(argv)
    model_dir, texts_path, out_path = args.model_dir, args.texts_path, args.out_path
    import numpy as np
    from sentence_transformers import SentenceTransformer

    with open(texts_path, encoding="utf-8") as source:
        texts = json.load(source)
    model = SentenceTransformer(model_dir, device="cpu")
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=32, show_progress_bar=False, convert_to_numpy=True)
    seconds = time.perf_counter() - started
    np.save(out_path, vectors.astype(np.float32))
    print(json.dumps({"max_seq_length": model.max_seq_length, "encode_seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
