"""A model's relative paths, recorded absolute (:func:`seamline.core.provenance.recorded_config`).

``seamline search`` (``serve``, ``open_index``) rebuilds the model from the manifest, in
whatever folder it runs: a third-party model's ``weights: qwen3-st`` recorded as written
was looked up there, and read another folder of that name (other vectors, no warning).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seamline.adapters.search import search
from seamline.components.sinks.jsonl import JsonlSink
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.provenance import spec_sha256
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import FolderToy, toy_registry

TEXTS = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota kappa"]

PIPELINE = (
    "pipeline: folder\n"
    f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
    "model: {use: folder-toy, with: {weights: ckpt}}\n"
    "attention: {use: native}\n"
    "sink: {use: jsonl, with: {path: out/emb.jsonl}}\n"
    "run: {batch_size: 4, buckets: [4, 8]}\n"
)


def registry() -> Registry:
    extra = [
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, version
        )
        for c, version in ((FolderToy, "1.0"), (JsonlSink, JsonlSink.contract_version))
    ]
    return Registry([*toy_registry().entries(), *extra])


def weights(folder: Path, seed: int) -> None:
    (folder / "ckpt").mkdir(parents=True)
    (folder / "ckpt" / "seed.txt").write_text(str(seed), encoding="utf-8")


def test_an_output_is_searched_with_the_weights_it_was_made_with_from_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    weights(project, 0)
    weights(elsewhere, 1)  # another folder of the same name: other weights
    monkeypatch.chdir(project)
    reg = registry()
    pipeline = parse_pipeline(PIPELINE, "p.yaml", reg)
    Orchestrator(pipeline, reg).run()
    manifest = json.loads((project / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["with"]["weights"] == str(project / "ckpt")
    # The spec's hash is of the path as written: the same pipeline elsewhere hashes alike.
    assert manifest["provenance"]["spec_sha256"] == spec_sha256(pipeline)

    monkeypatch.chdir(elsewhere)
    assert spec_sha256(parse_pipeline(PIPELINE, "p.yaml", reg)) == spec_sha256(pipeline)
    best = search(reg, project / "out" / "emb.jsonl", TEXTS[1], k=1)[0]
    # A document's own text finds it with the weights that embedded it (not ./ckpt here).
    assert best.doc_id == "d1"
    assert best.score == pytest.approx(1.0, abs=1e-5)


def test_a_relative_path_is_refused_nowhere_the_run_made_it_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From a folder without `ckpt`, search found no weights ("No such file or directory").
    weights(tmp_path, 0)
    monkeypatch.chdir(tmp_path)
    reg = registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", reg), reg).run()
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    assert search(reg, tmp_path / "out" / "emb.jsonl", TEXTS[0], k=1)[0].doc_id == "d0"
