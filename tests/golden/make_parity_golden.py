"""Goldens for texts and checkpoint settings where seamline once differed from the reference.

Run through ``tests/golden/make_golden.sh --parity`` (the pinned ``.venv-golden``: torch,
transformers, sentence-transformers). Nothing is downloaded, no checkpoint is written to
the repository: each case uses a committed checkpoint (``mpnet_tiny/``, ``family/``), as
it is or with one setting changed in a temporary copy, and records what
``SentenceTransformer(...).encode`` (batched, padded by sentence-transformers) computes.

Cases, each a group of keys ``<case>_...`` in ``parity.npz``, described in ``parity.meta.json``:

* ``mpnet_pad``: MPNet texts holding a literal ``<pad>``, which the tokenizer turns into
  the pad id (1), with an attention mask of 1. transformers' MPNet numbers positions
  from the ids (``create_position_ids_from_input_ids``): such a token gets the padding
  position and the tokens after it move down one.
* ``bert_pad``: the same for BERT (``plain-hf``, a literal ``[PAD]``, id 0): BERT's
  positions are 0, 1, ... whatever the ids, so the pad token changes nothing there.
* ``lower``: ``family/cls-raw`` (a cased vocabulary) with ``"do_lower_case": true`` added
  to ``sentence_bert_config.json``: sentence-transformers puts a ``Lowercase`` normalizer
  in front of the tokenizer's own, for documents and prompts alike. Documents are the
  golden texts (truncated at the window, as ``encode`` truncates) and mixed-case extras;
  queries are the same texts with the prompt ``QUERY_PROMPT``.

Keys per case: ``texts`` (str), ``num_tokens`` (int32[n]), ``input_ids_flat`` (the
token ids ``encode`` fed the model, concatenated), ``embedding`` (float32[n, hidden]);
``lower`` has ``query_*`` keys of the same kinds for the prompt.
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
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_golden import load_texts, sha256_file  # noqa: E402  (the shared definitions)

NPZ_PATH = HERE / "parity.npz"
META_PATH = HERE / "parity.meta.json"
QUERY_PROMPT = "Query: "
LOWER_EDIT = {"sentence_bert_config.json": {"do_lower_case": True}}

MPNET_PAD_TEXTS = [
    "hello <pad> world, the padding token",
    "hello world, the padding token",
    "<pad> at the start",
    "at the end <pad>",
    "two <pad> <pad> together, and a third <pad> later",
    "<pad>",
    "no pad here at all, a control text",
]
BERT_PAD_TEXTS = [
    "hello [PAD] world, the padding token",
    "[PAD] at the start and [PAD] [PAD] later",
    "no pad here at all, a control text",
]
MIXED_CASE = [
    "HELLO World, Mixed CASE Text",
    "İstanbul, ΣΊΣΥΦΟΣ and STRASSE / Straße",
    "ǅemal Ǉubljana ÅNGSTRÖM Ωmega",
    "[CLS] <s> </s> <pad> Upper Specials",
]


@torch.no_grad()
def encode(model: SentenceTransformer, texts: list[str], prompt: str = "") -> dict[str, Any]:
    """What ``encode`` computes for ``texts`` (with ``prompt``), and the ids it fed the model."""
    features = model.tokenize([prompt + text for text in texts])
    mask = features["attention_mask"]
    ids = [
        row[row_mask.bool()].tolist()
        for row, row_mask in zip(features["input_ids"], mask, strict=True)
    ]
    embedding = model.encode(
        texts, prompt=prompt or None, batch_size=8, convert_to_numpy=True, show_progress_bar=False
    )
    assert embedding.dtype == np.float32, embedding.dtype
    return {
        "texts": np.array(texts, np.str_),
        "num_tokens": np.array([len(row) for row in ids], np.int32),
        "input_ids_flat": np.array([t for row in ids for t in row], np.int32),
        "embedding": embedding,
    }


def pad_case(path: Path, texts: list[str], pad: str, pad_id: int) -> dict[str, Any]:
    """A literal pad token in the text: the pad id, and an attention mask of 1 (checked)."""
    model = SentenceTransformer(str(path), device="cpu")
    features = model.tokenize(texts)
    for row, mask, text in zip(
        features["input_ids"], features["attention_mask"], texts, strict=True
    ):
        literal = int(((row == pad_id) & (mask == 1)).sum())
        assert literal == text.count(pad), (text, row, mask)
    return encode(model, texts)


def lower_case(texts: list[str]) -> dict[str, Any]:
    """cls-raw with do_lower_case set, documents and prompted queries."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(shutil.copytree(HERE / "family" / "cls-raw", Path(scratch) / "cls-raw"))
        for name, change in LOWER_EDIT.items():
            settings = json.loads((path / name).read_text(encoding="utf-8"))
            (path / name).write_text(json.dumps(settings | change), encoding="utf-8")
        model = SentenceTransformer(str(path), device="cpu")
        assert model[0].do_lower_case
        plain = SentenceTransformer(str(HERE / "family" / "cls-raw"), device="cpu")
        documents = encode(model, texts)
        queries = encode(model, texts, QUERY_PROMPT)
        differs = float(np.max(np.abs(encode(plain, texts)["embedding"] - documents["embedding"])))
    assert differs > 1e-2, differs  # the setting matters for these texts
    return documents | {f"query_{key}": value for key, value in queries.items() if key != "texts"}


def main() -> int:
    torch.manual_seed(0)
    golden_texts = [record["text"] for record in load_texts()]
    cases = {
        "mpnet_pad": pad_case(HERE / "mpnet_tiny", MPNET_PAD_TEXTS, "<pad>", 1),
        "bert_pad": pad_case(HERE / "family" / "plain-hf", BERT_PAD_TEXTS, "[PAD]", 0),
        "lower": lower_case(golden_texts + MIXED_CASE),
    }
    arrays = {
        f"{case}_{key}": value for case, found in cases.items() for key, value in found.items()
    }
    np.savez_compressed(NPZ_PATH, **arrays)
    meta = {
        "what": "sentence-transformers encode() of texts and settings seamline once got wrong",
        "script": "tests/golden/make_parity_golden.py",
        "cases": {
            "mpnet_pad": {"checkpoint": "tests/golden/mpnet_tiny", "pad": "<pad>", "pad_id": 1},
            "bert_pad": {"checkpoint": "tests/golden/family/plain-hf", "pad": "[PAD]", "pad_id": 0},
            "lower": {
                "checkpoint": "tests/golden/family/cls-raw",
                "edit": LOWER_EDIT,
                "query_prompt": QUERY_PROMPT,
            },
        },
        "checkpoint_sha256": {
            name: sha256_file(HERE / name / "model.safetensors")
            for name in ("mpnet_tiny", "family/plain-hf", "family/cls-raw")
        },
        "texts_jsonl_sha256": sha256_file(HERE / "texts.jsonl"),
        "versions": {
            name: metadata.version(name)
            for name in ("torch", "transformers", "sentence-transformers", "tokenizers", "numpy")
        }
        | {"python": sys.version.split()[0]},
        "npz_keys": sorted(arrays),
    }
    META_PATH.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {NPZ_PATH} and {META_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
