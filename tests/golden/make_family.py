"""Small random BERT-family checkpoints, and their golden embeddings from the reference.

``bert-encoder`` was proven on one checkpoint (all-MiniLM-L6-v2, ``make_golden.py``).
Users bring others: CLS pooling (bge), instruction prefixes (e5's "query: " /
"passage: ", bge's query instruction), no normalisation, other sizes, head and layer
counts, a tokenizer without ``token_type_ids``, ``type_vocab_size`` 1, other special
tokens at other ids, a plain Hugging Face checkpoint with no sentence-transformers
files. This script writes one tiny checkpoint for each kind (random weights, a real
WordPiece ``tokenizer.json``, its vocabulary counted from the golden texts), as transformers and
sentence-transformers save them, and the embeddings the reference computes from the
files as written.

Run it through ``tests/golden/make_golden.sh`` (the pinned ``.venv-golden`` venv; ``--family``
runs this script alone). Output, under ``tests/golden/family/``:

* ``<variant>/``: the checkpoint directory, what a user points ``weights:`` at;
* ``<variant>.npz``: the goldens (keys below);
* ``meta.json``: versions, the seed, every variant's architecture, files' sha256,
  the ``with:`` block a test gives ``bert-encoder``, counts and the cross-checks.

Windowing with a prefix (a reimplementation must match this exactly)
--------------------------------------------------------------------
Without a prefix the windows are ``make_golden.py``'s. With a document prefix of ``P``
tokens (the prefix tokenised alone, without special tokens), every text is cut into
windows of at most ``L - P`` tokens with stride ``S``::

    tokenizer(text, truncation=True, max_length=L - P, stride=S,
              return_overflowing_tokens=True, return_offsets_mapping=True, padding=False)

and the prefix's ``P`` token ids are inserted right after each window's first token
(``[CLS]``): every window is ``[CLS] prefix content [SEP]``, at most ``L`` tokens. The
span is the window's content tokens' span in the text itself (the prefix is not part of
the document). The first window is then exactly what sentence-transformers encodes for
``encode_document(text)`` / ``encode(text, prompt=prefix)`` at ``max_seq_length`` L:
``prefix + text`` tokenised and truncated (checked below, token for token and
embedding for embedding).

Per window one record, as in ``make_golden.py``: ``text_index``, ``window``, ``span``,
``num_tokens``, ``input_ids_flat`` and ``embedding`` = the SentenceTransformer modules on
that one window (``attention_mask`` all 1, ``token_type_ids`` all 0 where the tokenizer
returns them), float32. Query side, per text: ``query_embedding`` =
``encode_query(text)`` (the checkpoint's ``query`` prompt) or ``encode(text, prompt=...)``
for a prefix given in seamline's config, truncated at ``L``; ``query_num_tokens`` and
``query_input_ids_flat`` its tokens.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

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
from transformers import BertConfig, BertForMaskedLM, BertModel, PreTrainedTokenizerFast

HERE = Path(__file__).resolve().parent
TEXTS_PATH = HERE / "texts.jsonl"
OUT = HERE / "family"
SEED = 26
ENCODE_CHECK_ATOL = 1e-6
WEIGHT_STD = 0.1
"""Weights drawn around zero with this spread (layer-norm gains around 1): larger than
BERT's 0.02 initialisation, so that attention is far from uniform and a wrong mask or
position shows in the output."""

BGE_QUERY = "Represent this sentence for searching relevant passages: "
E5_QUERY, E5_PASSAGE = "query: ", "passage: "


@dataclass(frozen=True)
class TokenizerKind:
    """A WordPiece tokenizer whose vocabulary is counted from the golden texts and prefixes."""

    name: str
    vocab_size: int
    lowercase: bool
    specials: tuple[str, ...]
    """In id order: they get ids 0, 1, ..."""
    unk: str
    cls: str
    sep: str
    pad: str
    mask: str


STANDARD = TokenizerKind(
    "standard", 1000, True, ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    unk="[UNK]", cls="[CLS]", sep="[SEP]", pad="[PAD]", mask="[MASK]",
)  # fmt: skip
OTHER = TokenizerKind(
    "other-specials", 800, False, ("<unk>", "<mask>", "</s>", "<s>", "<pad>"),
    unk="<unk>", cls="<s>", sep="</s>", pad="<pad>", mask="<mask>",
)  # fmt: skip


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    hidden: int
    heads: int
    layers: int
    inner: int
    positions: int
    max_seq_length: int
    stride: int
    tokenizer: TokenizerKind
    pooling: str | None
    """sentence-transformers pooling mode; None: a plain Hugging Face checkpoint."""
    normalize: bool = False
    type_vocab_size: int = 2
    activation: str = "gelu"
    layer_norm_eps: float = 1e-12
    token_type_ids: bool = True
    """Whether the tokenizer returns token_type_ids (its model_input_names)."""
    prompts: dict[str, str] = field(default_factory=dict)
    """Saved in config_sentence_transformers.json: the checkpoint's own prefixes."""
    config_prefix: dict[str, str] = field(default_factory=dict)
    """Prefixes given in seamline's config instead (none in the checkpoint)."""
    masked_lm: bool = False
    """Save a BertForMaskedLM ('bert.'-prefixed names and an MLM head) rather than a BertModel."""


VARIANTS = [
    Variant(
        "bge-cls",
        "bge style: CLS pooling, normalised, the query instruction in the checkpoint's prompts",
        hidden=64, heads=4, layers=2, inner=128, positions=128, max_seq_length=64, stride=16,
        tokenizer=STANDARD, pooling="cls", normalize=True, prompts={"query": BGE_QUERY},
    ),
    Variant(
        "e5-mean",
        "e5 style: mean pooling, normalised, 'query: ' / 'passage: ' given in seamline's config",
        hidden=48, heads=3, layers=2, inner=96, positions=128, max_seq_length=64, stride=16,
        tokenizer=STANDARD, pooling="mean", normalize=True,
        config_prefix={"document": E5_PASSAGE, "query": E5_QUERY},
    ),
    Variant(
        "cls-raw",
        "CLS pooling, not normalised, type_vocab_size 1, no token_type_ids from the tokenizer, "
        "<s>/</s>/<pad> specials at other ids, cased, gelu_new, layer_norm_eps 1e-5",
        hidden=32, heads=2, layers=2, inner=64, positions=64, max_seq_length=48, stride=8,
        tokenizer=OTHER, pooling="cls", normalize=False, type_vocab_size=1,
        activation="gelu_new", layer_norm_eps=1e-5, token_type_ids=False,
    ),
    Variant(
        "plain-hf",
        "a plain Hugging Face checkpoint (BertForMaskedLM, no sentence-transformers files): "
        "mean pooling, not normalised, 3 layers of 4 heads, relu",
        hidden=32, heads=4, layers=3, inner=64, positions=96, max_seq_length=96, stride=32,
        tokenizer=STANDARD, pooling=None, activation="relu", masked_lm=True,
    ),
]  # fmt: skip


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_texts() -> list[str]:
    # Split on "\n" only (no universal-newline or U+2028 splitting), as make_golden.py.
    lines = TEXTS_PATH.read_text(encoding="utf-8").split("\n")
    return [json.loads(line)["text"] for line in lines if line.strip()]


def build_tokenizer(kind: TokenizerKind, texts: list[str]) -> Tokenizer:
    """A BERT-style WordPiece tokenizer whose vocabulary is counted from ``texts``.

    Counted, not trained: the tokenizers library's trainer breaks ties between equally
    frequent merges differently from run to run, and the checkpoints must come out the
    same every time. The vocabulary: the special tokens, the 300 most frequent
    characters alone and as word continuations (``##x``), the 150 most frequent word
    endings of two to four characters, then the most frequent words until
    ``vocab_size``; ties broken alphabetically. A word WordPiece cannot spell from it
    becomes the unknown token.
    """
    normalizer = normalizers.BertNormalizer(lowercase=kind.lowercase)
    splitter = pre_tokenizers.BertPreTokenizer()
    words: Counter[str] = Counter()
    for text in [*texts, BGE_QUERY, E5_QUERY, E5_PASSAGE]:
        for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text)):
            words[word] += 1
    chars: Counter[str] = Counter()
    endings: Counter[str] = Counter()
    for word, count in words.items():
        for char in word:
            chars[char] += count
        for size in (2, 3, 4):
            if len(word) > size:
                endings[word[-size:]] += count

    def by_count(counts: Counter[str]) -> list[str]:
        return sorted(counts, key=lambda key: (-counts[key], key))

    alphabet = by_count(chars)[:300]
    vocab: dict[str, int] = {}
    candidates = [
        *kind.specials,
        *alphabet,
        *(f"##{c}" for c in alphabet),
        *(f"##{e}" for e in by_count(endings)[:150]),
        *(w for w in by_count(words) if len(w) > 1),
    ]
    for token in candidates:
        if len(vocab) == kind.vocab_size:
            break
        vocab.setdefault(token, len(vocab))
    tokenizer = Tokenizer(
        models.WordPiece(vocab=vocab, unk_token=kind.unk, max_input_chars_per_word=100)
    )
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = splitter
    tokenizer.add_special_tokens(list(kind.specials))
    cls_id, sep_id = vocab[kind.cls], vocab[kind.sep]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{kind.cls} $A {kind.sep}",
        pair=f"{kind.cls} $A {kind.sep} $B:1 {kind.sep}:1",
        special_tokens=[(kind.cls, cls_id), (kind.sep, sep_id)],
    )
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


def randomize(model: torch.nn.Module, generator: torch.Generator) -> None:
    """Every parameter drawn anew: N(0, WEIGHT_STD), layer-norm gains N(1, WEIGHT_STD)."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator) * WEIGHT_STD
            gain = name.endswith("LayerNorm.weight")
            param.copy_(noise + 1.0 if gain else noise)


def write_checkpoint(variant: Variant, tokenizer: Tokenizer, index: int) -> Path:
    """The checkpoint directory, as transformers and sentence-transformers save it."""
    path = OUT / variant.name
    if path.exists():
        shutil.rmtree(path)
    kind = variant.tokenizer
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=variant.hidden,
        num_hidden_layers=variant.layers,
        num_attention_heads=variant.heads,
        intermediate_size=variant.inner,
        max_position_embeddings=variant.positions,
        type_vocab_size=variant.type_vocab_size,
        hidden_act=variant.activation,
        layer_norm_eps=variant.layer_norm_eps,
        pad_token_id=tokenizer.token_to_id(kind.pad),
    )
    torch.manual_seed(SEED + index)
    model = (
        BertForMaskedLM(config) if variant.masked_lm else BertModel(config, add_pooling_layer=False)
    )
    randomize(model, torch.Generator().manual_seed(SEED + index))
    model.eval()
    model.save_pretrained(path, safe_serialization=True)
    names = ["input_ids", "token_type_ids", "attention_mask"]
    if not variant.token_type_ids:
        names.remove("token_type_ids")
    hf_tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token=kind.unk,
        cls_token=kind.cls,
        sep_token=kind.sep,
        pad_token=kind.pad,
        mask_token=kind.mask,
        model_max_length=variant.positions,
        model_input_names=names,
    )
    hf_tokenizer.save_pretrained(path)
    if variant.pooling is not None:
        transformer = Transformer(str(path), max_seq_length=variant.max_seq_length)
        pooling = Pooling(variant.hidden, pooling_mode=variant.pooling)
        modules: list[torch.nn.Module] = [transformer, pooling]
        if variant.normalize:
            modules.append(Normalize())
        st = SentenceTransformer(modules=modules, device="cpu", prompts=dict(variant.prompts))
        st.save(str(path), create_model_card=False)
    return path


def windows(tokenizer: Any, text: str, length: int, stride: int, prefix: list[int]) -> list[dict]:
    """The windows of one text with ``prefix`` after [CLS] (the module docstring)."""
    enc = tokenizer(
        text,
        truncation=True,
        max_length=length - len(prefix),
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding=False,
    )
    out = []
    for i, ids in enumerate(enc["input_ids"]):
        seq_ids = enc.sequence_ids(i)
        offsets = enc["offset_mapping"][i]
        assert ids[0] == tokenizer.cls_token_id, ids
        assert ids[-1] == tokenizer.sep_token_id, ids
        content = [j for j, s in enumerate(seq_ids) if s is not None]
        assert content == list(range(1, len(ids) - 1)), (seq_ids, ids)
        span = (int(offsets[content[0]][0]), int(offsets[content[-1]][1])) if content else (0, 0)
        assert 0 <= span[0] <= span[1] <= len(text), (span, len(text))
        full = [int(ids[0]), *prefix, *(int(t) for t in ids[1:])]
        assert len(full) <= length
        out.append({"input_ids": full, "content": [int(t) for t in ids[1:-1]], "span": span})
    for a, b in itertools.pairwise(out):
        assert len(a["content"]) == length - len(prefix) - 2, "only the last window may be short"
        assert b["content"][:stride] == a["content"][-stride:], "windows overlap by `stride`"
    return out


@torch.no_grad()
def embed_window(model: SentenceTransformer, input_ids: list[int], with_types: bool) -> np.ndarray:
    ids = torch.tensor([input_ids], dtype=torch.long)
    features = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if with_types:
        features["token_type_ids"] = torch.zeros_like(ids)
    emb = model(features)["sentence_embedding"]
    assert emb.dtype == torch.float32, emb.dtype
    return emb[0].cpu().numpy()


def tokenized(model: SentenceTransformer, text: str) -> list[int]:
    """The token ids sentence-transformers' encode feeds the model for ``text``."""
    features = model.tokenize([text])
    return [int(t) for t in features["input_ids"][0]]


def prefixes(model: SentenceTransformer, variant: Variant) -> tuple[str, str]:
    """The (document, query) prefixes the reference applies for this variant."""
    if variant.config_prefix:
        return variant.config_prefix.get("document", ""), variant.config_prefix.get("query", "")
    return model.prompts.get("document") or "", model.prompts.get("query") or ""


def golden(variant: Variant, path: Path, texts: list[str]) -> dict[str, Any]:
    """The goldens of one checkpoint, computed by sentence-transformers from its files."""
    model = SentenceTransformer(str(path), device="cpu")
    model.eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    tokenizer = model.tokenizer
    assert tokenizer.is_fast
    length = model.max_seq_length
    assert length == variant.max_seq_length, (length, variant.max_seq_length)
    with_types = "token_type_ids" in tokenizer.model_input_names
    assert with_types == variant.token_type_ids
    # The reference's tokenizer is the tokenizer.json seamline reads, nothing else.
    plain = Tokenizer.from_file(str(path / "tokenizer.json"))
    for text in texts:
        assert tokenizer(text)["input_ids"] == plain.encode(text).ids, text
    document, query = prefixes(model, variant)
    prefix_ids = tokenizer(document, add_special_tokens=False)["input_ids"] if document else []

    records: dict[str, list[Any]] = {k: [] for k in ("text_index", "window", "span", "num_tokens")}
    flat: list[int] = []
    embeddings = []
    encode_diff = 0.0
    for t_index, text in enumerate(texts):
        found = windows(tokenizer, text, length, variant.stride, prefix_ids)
        for w_index, window in enumerate(found):
            records["text_index"].append(t_index)
            records["window"].append(w_index)
            records["span"].append(window["span"])
            records["num_tokens"].append(len(window["input_ids"]))
            flat.extend(window["input_ids"])
            embeddings.append(embed_window(model, window["input_ids"], with_types))
        # Window 0 is what the reference's own encode gives, tokens and vector.
        first = found[0]["input_ids"]
        assert tokenized(model, document + text) == first, (variant.name, text)
        if variant.config_prefix:
            reference = model.encode(text, prompt=document, convert_to_numpy=True)
        else:
            reference = model.encode_document(text, convert_to_numpy=True)
        diff = float(np.max(np.abs(reference - embeddings[len(embeddings) - len(found)])))
        assert diff <= ENCODE_CHECK_ATOL, (variant.name, text, diff)
        encode_diff = max(encode_diff, diff)

    query_vectors, query_lengths, query_flat = [], [], []
    for text in texts:
        if variant.config_prefix:
            vector = model.encode(text, prompt=query, convert_to_numpy=True)
        else:
            vector = model.encode_query(text, convert_to_numpy=True)
        ids = tokenized(model, query + text)
        query_vectors.append(vector)
        query_lengths.append(len(ids))
        query_flat.extend(ids)

    arrays = {
        "text_index": np.asarray(records["text_index"], np.int32),
        "window": np.asarray(records["window"], np.int32),
        "span": np.asarray(records["span"], np.int32).reshape(-1, 2),
        "num_tokens": np.asarray(records["num_tokens"], np.int32),
        "input_ids_flat": np.asarray(flat, np.int32),
        "embedding": np.stack(embeddings).astype(np.float32),
        "query_embedding": np.stack(query_vectors).astype(np.float32),
        "query_num_tokens": np.asarray(query_lengths, np.int32),
        "query_input_ids_flat": np.asarray(query_flat, np.int32),
    }
    norms = np.linalg.norm(arrays["embedding"], axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5) == variant.normalize, norms[:4]
    np.savez_compressed(OUT / f"{variant.name}.npz", **arrays)

    with_block: dict[str, Any] = {"weights": f"tests/golden/family/{variant.name}"}
    with_block["stride"] = variant.stride
    if variant.config_prefix:
        with_block["prefix"] = dict(variant.config_prefix)
    pooling_file = path / "1_Pooling" / "config.json"
    return {
        "what": variant.what,
        "variant": {k: v for k, v in asdict(variant).items() if k not in ("what", "tokenizer")},
        "tokenizer": {
            "kind": variant.tokenizer.name,
            "vocab_size": plain.get_vocab_size(),
            "special_ids": {
                role: plain.token_to_id(getattr(variant.tokenizer, role))
                for role in ("cls", "sep", "pad", "unk", "mask")
            },
        },
        "files": sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()),
        "model_safetensors_sha256": sha256_file(path / "model.safetensors"),
        "pooling_config": json.loads(pooling_file.read_text()) if pooling_file.is_file() else None,
        "reference_prompts": dict(model.prompts),
        "max_length": length,
        "stride": variant.stride,
        "prefix": {"document": document, "query": query},
        "prefix_from": "seamline config" if variant.config_prefix else "checkpoint",
        "seamline_with": with_block,
        "num_records": len(records["window"]),
        "num_multi_window_texts": sum(1 for n in np.bincount(arrays["text_index"]) if n > 1),
        "encode_cross_check": {
            "what": "window 0 against the reference's encode_document / encode(prompt=...)",
            "num_texts": len(texts),
            "max_abs_diff": encode_diff,
            "atol": ENCODE_CHECK_ATOL,
        },
    }


def main() -> int:
    torch.manual_seed(SEED)
    texts = load_texts()
    OUT.mkdir(exist_ok=True)
    tokenizers = {kind.name: build_tokenizer(kind, texts) for kind in (STANDARD, OTHER)}
    summary = {}
    for index, variant in enumerate(VARIANTS):
        path = write_checkpoint(variant, tokenizers[variant.tokenizer.name], index)
        summary[variant.name] = golden(variant, path, texts)
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        print(
            f"{variant.name}: {summary[variant.name]['num_records']} windows, {size} bytes",
            file=sys.stderr,
        )
    meta = {
        "what": "tiny random BERT-family checkpoints and sentence-transformers goldens",
        "script": "tests/golden/make_family.py",
        "seed": SEED,
        "weight_std": WEIGHT_STD,
        "texts_jsonl_sha256": sha256_file(TEXTS_PATH),
        "num_texts": len(texts),
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "transformers": metadata.version("transformers"),
            "sentence-transformers": metadata.version("sentence-transformers"),
            "tokenizers": metadata.version("tokenizers"),
            "numpy": np.__version__,
        },
        "npz_keys": [
            "text_index",
            "window",
            "span",
            "num_tokens",
            "input_ids_flat",
            "embedding",
            "query_embedding",
            "query_num_tokens",
            "query_input_ids_flat",
        ],
        "variants": summary,
    }
    with open(OUT / "meta.json", "w", encoding="utf-8") as stream:
        json.dump(meta, stream, indent=2, ensure_ascii=False)
        stream.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
