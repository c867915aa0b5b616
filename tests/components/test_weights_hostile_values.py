"""A value read from a checkpoint's configuration is repeated in an error cut short.

docs/models.md promises "the value (cut short)"; an exploratory pass found a
``model_type`` of 200,000 characters printed whole, a 200 kB error line, and the same
for ``hidden_act``, ``position_embedding_type``, ``type_vocab_size``, the module types
of ``modules.json`` and MPNet's ``relative_attention_num_buckets``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seamline.components.models.bert import BertEncoder
from seamline.components.models.mpnet import MpnetEncoder
from seamline.contracts import WeightsError

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
LONG = "x" * 200_000


def edit_json(model: Path, name: str, change: Callable[[Any], Any]) -> None:
    path = model / name
    path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))))


def another_module(modules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*modules, {"idx": 9, "name": "9", "path": "9_X", "type": LONG}]


BERT: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "model_type": ("config.json", lambda c: c | {"model_type": LONG}),
    "hidden_act": ("config.json", lambda c: c | {"hidden_act": LONG}),
    "position_embedding_type": ("config.json", lambda c: c | {"position_embedding_type": LONG}),
    "type_vocab_size": ("config.json", lambda c: c | {"type_vocab_size": LONG}),
    "a module type": ("modules.json", another_module),
}
MPNET: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "model_type": ("config.json", lambda c: c | {"model_type": LONG}),
    "relative_attention_num_buckets": (
        "config.json",
        lambda c: c | {"relative_attention_num_buckets": LONG},
    ),
    "hidden_act": ("config.json", lambda c: c | {"hidden_act": LONG}),
}


def refusal(build: Callable[[str], object], model: Path) -> str:
    with pytest.raises(WeightsError) as refused:
        build(str(model))
    return str(refused.value)


@pytest.mark.parametrize("case", BERT)
def test_bert_encoder_cuts_a_long_value_short(case: str, tmp_path: Path) -> None:
    model = Path(shutil.copytree(GOLDEN / "family" / "e5-mean", tmp_path / "model"))
    edit_json(model, *BERT[case])
    message = refusal(lambda w: BertEncoder(BertEncoder.Config(weights=w)), model)
    assert "(200,002 characters)" in message or "(200,000 characters)" in message
    assert len(message) < 1000


@pytest.mark.parametrize("case", MPNET)
def test_mpnet_encoder_cuts_a_long_value_short(case: str, tmp_path: Path) -> None:
    model = Path(shutil.copytree(GOLDEN / "mpnet_tiny", tmp_path / "model"))
    edit_json(model, *MPNET[case])
    message = refusal(lambda w: MpnetEncoder(MpnetEncoder.Config(weights=w)), model)
    assert "(200,002 characters)" in message
    assert len(message) < 1000
