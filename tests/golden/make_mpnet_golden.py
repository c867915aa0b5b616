"""A small random-weight MPNet checkpoint and its golden embeddings, made by the reference.

Run through ``tests/golden/make_golden.sh --mpnet`` (the pinned ``.venv-golden``:
torch, transformers, sentence-transformers). Nothing is downloaded.

What it makes, in ``tests/golden/``:

* ``mpnet_tiny/``: a sentence-transformers checkpoint (Transformer -> mean Pooling
  -> Normalize) around a transformers ``MPNetModel`` with 2 layers, hidden size 32,
  4 heads, 32 relative-position buckets and 258 position embeddings (windows of up
  to 256 tokens), and a WordPiece tokenizer of about 2,000 pieces built here from
  ``texts.jsonl`` (:func:`train_tokenizer`: in a fixed order), with MPNet's special tokens
  (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, ``<mask>`` 4) and its template
  ``<s> text </s>``. Weights are drawn so that every part matters: linear layers
  ~ N(0, 1/fan_in), embeddings ~ N(0, 1), and the relative-position bias table
  ~ N(0, 1) (transformers' own init, N(0, 0.02), would leave the bias almost
  invisible, and a test of it could not fail).
* ``mpnet_tiny.npz`` / ``mpnet_tiny.meta.json``: for each configuration (max_length
  L, stride S) in ``CONFIGS``, the windows, spans, token ids and embeddings of
  every text of ``texts.jsonl``, exactly as ``make_golden.py`` defines them (its
  docstring is the normative windowing definition; here the special tokens are
  ``<s>``/``</s>``), each window embedded alone, float32, ``torch.no_grad()``;
  plus ``relative_position_buckets``: transformers'
  ``MPNetEncoder.relative_position_bucket`` of every distance -300..300.

Cross-check: for L = the checkpoint's ``max_seq_length``, every single-window text
must give ``model.encode(text)`` (batched, padded by sentence-transformers) equal to
its window's embedding within 1e-6.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from importlib import metadata
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)
from transformers import MPNetConfig, MPNetModel, MPNetTokenizer
from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_golden import load_texts, sha256_file, windows  # noqa: E402  (the shared definitions)

CHECKPOINT = HERE / "mpnet_tiny"
NPZ_PATH = HERE / "mpnet_tiny.npz"
META_PATH = HERE / "mpnet_tiny.meta.json"
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
VOCAB_SIZE = 2000
HIDDEN = 32
MAX_SEQ_LENGTH = 256
CONFIGS = [(256, 64), (32, 8)]
ENCODE_CHECK_ATOL = 1e-6
SIZE_LIMIT = 1 << 20


def train_tokenizer(texts: list[str]) -> Tokenizer:
    """A lower-casing WordPiece tokenizer with MPNet's special tokens and template.

    Its vocabulary is built here, in an order fixed by counts and then by text, rather
    than by the library's ``WordPieceTrainer``, whose ties came out in another order on
    every run (four runs, four tokenizers, 13,361 to 13,369 tokens): the goldens must be
    byte-identical from run to run. It holds every character (alone and as ``##``
    continuation), the words seen at least twice, and then the commonest endings (2 to 4
    characters, as ``##`` pieces) of the others, so that rarer words are cut into pieces.
    """
    normalizer = normalizers.BertNormalizer(lowercase=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for text in texts:
        words.update(
            word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))
        )
    characters = sorted({c for word in words for c in word})
    vocab = [*SPECIALS, *characters, *(f"##{c}" for c in characters)]
    common = sorted((w for w, n in words.items() if n >= 2), key=lambda w: (-words[w], w))
    vocab += [w for w in common if w not in vocab]
    endings: Counter[str] = Counter()
    for word, n in words.items():
        if n < 2:
            endings.update({f"##{word[-k:]}": n for k in (2, 3, 4) if len(word) > k})
    for piece, _ in sorted(endings.items(), key=lambda item: (-item[1], item[0])):
        if len(vocab) >= VOCAB_SIZE:
            break
        if piece not in vocab:
            vocab.append(piece)
    tokenizer = Tokenizer(
        models.WordPiece(
            {piece: i for i, piece in enumerate(vocab)},
            unk_token="<unk>",
            max_input_chars_per_word=100,
        )
    )
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.add_special_tokens(SPECIALS)
    assert [tokenizer.token_to_id(t) for t in SPECIALS] == list(range(len(SPECIALS)))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tokenizer


@torch.no_grad()
def draw_weights(model: MPNetModel) -> None:
    """Weights of unit scale everywhere, so that each part (the bias above all) shows."""
    generator = torch.Generator().manual_seed(0)
    for name, tensor in model.named_parameters():
        if name.endswith("relative_attention_bias.weight") or (
            "embeddings" in name and name.endswith("_embeddings.weight")
        ):
            tensor.copy_(torch.randn(tensor.shape, generator=generator))
        elif "LayerNorm" in name:
            base = 1.0 if name.endswith("weight") else 0.0
            tensor.copy_(base + 0.1 * torch.randn(tensor.shape, generator=generator))
        elif name.endswith("weight"):
            tensor.copy_(torch.randn(tensor.shape, generator=generator) / tensor.shape[1] ** 0.5)
        else:
            tensor.copy_(0.1 * torch.randn(tensor.shape, generator=generator))


def make_checkpoint(texts: list[str]) -> None:
    tokenizer = train_tokenizer(texts)
    config = MPNetConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=2 * HIDDEN,
        max_position_embeddings=MAX_SEQ_LENGTH + 2,
        relative_attention_num_buckets=32,
        layer_norm_eps=1e-5,
        hidden_act="gelu",
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    model = MPNetModel(config, add_pooling_layer=False)
    draw_weights(model)
    model.eval()
    with tempfile.TemporaryDirectory() as scratch:
        hf_dir = Path(scratch) / "hf"
        model.save_pretrained(hf_dir, safe_serialization=True)
        tokenizer.save(str(Path(scratch) / "tokenizer.json"))
        wrapped = MPNetTokenizer(
            tokenizer_file=str(Path(scratch) / "tokenizer.json"),
            bos_token="<s>",
            eos_token="</s>",
            sep_token="</s>",
            cls_token="<s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
            model_max_length=MAX_SEQ_LENGTH,
        )
        wrapped.save_pretrained(hf_dir)
        modules = [
            Transformer(str(hf_dir), max_seq_length=MAX_SEQ_LENGTH),
            Pooling(HIDDEN, "mean"),
            Normalize(),
        ]
        if CHECKPOINT.exists():
            shutil.rmtree(CHECKPOINT)
        SentenceTransformer(modules=modules, device="cpu").save(str(CHECKPOINT))
    for extra in ("README.md",):  # a generated model card: nothing the encoder reads
        (CHECKPOINT / extra).unlink(missing_ok=True)
    size = sum(p.stat().st_size for p in CHECKPOINT.rglob("*") if p.is_file())
    assert size < SIZE_LIMIT, f"the checkpoint is {size} bytes, over {SIZE_LIMIT}"


@torch.no_grad()
def embed_window(model: SentenceTransformer, input_ids: list[int]) -> np.ndarray:
    ids = torch.tensor([input_ids], dtype=torch.long)
    emb = model({"input_ids": ids, "attention_mask": torch.ones_like(ids)})["sentence_embedding"]
    assert emb.dtype == torch.float32, emb.dtype
    return emb[0].cpu().numpy()


def main() -> int:
    torch.manual_seed(0)
    records = load_texts()
    texts = [r["text"] for r in records]
    make_checkpoint(texts)
    model = SentenceTransformer(str(CHECKPOINT), device="cpu")
    model.eval()
    tokenizer = model.tokenizer
    assert tokenizer.is_fast
    assert model.max_seq_length == MAX_SEQ_LENGTH, model.max_seq_length

    arrays: dict[str, np.ndarray] = {"text_ids": np.array([r["id"] for r in records], np.str_)}
    distances = torch.arange(-300, 301)
    arrays["relative_position_buckets"] = (
        MPNetEncoder.relative_position_bucket(distances).numpy().astype(np.int32)
    )
    summary: dict[str, dict] = {}
    for max_length, stride in CONFIGS:
        prefix = f"L{max_length}_S{stride}_"
        rows: dict[str, list] = {k: [] for k in ("text_index", "window", "span", "num_tokens")}
        flat_ids: list[int] = []
        embeddings = []
        checked, worst = 0, 0.0
        for t_index, text in enumerate(texts):
            wins = windows(tokenizer, text, max_length, stride)
            for w_index, window in enumerate(wins):
                rows["text_index"].append(t_index)
                rows["window"].append(w_index)
                rows["span"].append(window["span"])
                rows["num_tokens"].append(len(window["input_ids"]))
                flat_ids.extend(window["input_ids"])
                embeddings.append(embed_window(model, window["input_ids"]))
            if max_length == MAX_SEQ_LENGTH and len(wins) == 1:
                encoded = model.encode(text, convert_to_numpy=True, show_progress_bar=False)
                worst = max(worst, float(np.max(np.abs(encoded - embeddings[-1]))))
                checked += 1
        assert worst <= ENCODE_CHECK_ATOL, worst
        arrays[prefix + "text_index"] = np.asarray(rows["text_index"], np.int32)
        arrays[prefix + "window"] = np.asarray(rows["window"], np.int32)
        arrays[prefix + "span"] = np.asarray(rows["span"], np.int32).reshape(-1, 2)
        arrays[prefix + "num_tokens"] = np.asarray(rows["num_tokens"], np.int32)
        arrays[prefix + "input_ids_flat"] = np.asarray(flat_ids, np.int32)
        arrays[prefix + "embedding"] = np.stack(embeddings).astype(np.float32)
        summary[prefix.rstrip("_")] = {
            "max_length": max_length,
            "stride": stride,
            "num_records": len(rows["window"]),
            "num_tokens_total": len(flat_ids),
            "encode_cross_check": {"num_texts": checked, "max_abs_diff": worst}
            if max_length == MAX_SEQ_LENGTH
            else None,
        }
    np.savez_compressed(NPZ_PATH, **arrays)
    meta = {
        "model": "random-weight MPNet (tests/golden/make_mpnet_golden.py)",
        "checkpoint": "tests/golden/mpnet_tiny",
        "model_safetensors_sha256": sha256_file(CHECKPOINT / "model.safetensors"),
        "texts_jsonl_sha256": sha256_file(HERE / "texts.jsonl"),
        "num_texts": len(texts),
        "embedding_dim": HIDDEN,
        "max_seq_length": MAX_SEQ_LENGTH,
        "versions": {
            name: metadata.version(name)
            for name in ("torch", "transformers", "sentence-transformers", "tokenizers", "numpy")
        }
        | {"python": sys.version.split()[0]},
        "configs": summary,
        "npz_keys": sorted(arrays),
    }
    META_PATH.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {CHECKPOINT}, {NPZ_PATH} and {META_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
