"""seamline search reads everything from the index's manifest: files, model and attention."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seamline.adapters.search import index_attention, open_index, search
from seamline.components.sinks.jsonl import JsonlSink
from seamline.components.sinks.npy import NpySink
from seamline.contracts import ConfigError, Document, UnsupportedError
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import ToyModel, toy_registry

TEXTS = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota kappa lambda mu nu xi"]


def registry() -> Registry:
    toys = toy_registry()
    sinks = [
        ComponentInfo(
            "sink", c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.1"
        )
        for c in (JsonlSink, NpySink)
    ]
    return Registry([*toys.entries(), *sinks])


def write_index(tmp_path: Path, sink: str, attention: str = "{use: native}") -> Path:
    reg = registry()
    text = (
        "pipeline: search\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        f"sink: {sink}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    return tmp_path


def test_npy_with_a_custom_index_path_is_found_through_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "vectors" / "emb.npy"
    elsewhere = tmp_path / "rows" / "which-row-is-what.jsonl"
    write_index(tmp_path, f"{{use: npy, with: {{path: '{out}', index_path: '{elsewhere}'}}}}")
    assert not out.with_suffix(".index.jsonl").exists()  # not where search used to look
    hits = search(registry(), out, TEXTS[1], k=3)
    assert hits[0].doc_id == "d1"
    assert {hit.doc_id for hit in hits} == {"d0", "d1", "d2"}
    # The manifest itself may be named as the index.
    by_manifest = search(registry(), out.with_name("emb.manifest.json"), TEXTS[1], k=1)
    assert by_manifest[0].doc_id == "d1"


def test_jsonl_index_lists_its_files(tmp_path: Path) -> None:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    index = open_index(out)
    assert index.sink == "jsonl"
    assert index.files == {"errors": tmp_path / "emb.errors.jsonl", "records": out}
    assert search(registry(), out, TEXTS[2], k=1)[0].doc_id == "d2"


def attention_for(tmp_path: Path, recorded: Any, use: str | None = None) -> str:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    manifest_file = out.with_name("emb.manifest.json")
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest["attention"] = recorded
    manifest_file.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    model = ToyModel(ToyModel.Config())
    params = model.load()
    batch = model.collate(list(model.prepare(Document("q", "a query of words"))), 1, 8)
    chosen = index_attention(registry(), open_index(out), model, params, batch.arrays, use)
    return chosen.name


def test_the_recorded_attention_is_negotiated_again_not_assumed(tmp_path: Path) -> None:
    # The run chose long-only for this length (its priority from 8 keys up): so does search.
    assert attention_for(tmp_path, {"use": "auto"}) == "long-only"
    assert attention_for(tmp_path, {"use": ["never", "long-only", "native"]}) == "long-only"
    assert attention_for(tmp_path, {"use": "auto"}, use="native") == "native"


def test_a_recorded_attention_that_cannot_serve_here_says_why(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"'never' cannot serve .* refuses head_dim 8"):
        attention_for(tmp_path, {"use": "never"})


def test_a_recorded_attention_not_installed_is_located_in_the_manifest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        attention_for(tmp_path, {"use": "flash-of-genius"})
    assert "emb.manifest.json:" in str(caught.value)
    assert "no attention component named 'flash-of-genius'" in str(caught.value)
