"""A lone surrogate in a document's metadata sets that document aside; the run goes on.

``{"id": "a", "text": "hello", "m": "\\ud800"}`` (valid JSON, not Unicode) with
``metadata_fields: [m]`` stopped the whole run in the lancedb and parquet sinks
(``UnicodeEncodeError ... surrogates not allowed``, exit 1, nothing published, the line
not named), where the jsonl and npy sinks wrote it: the jsonl loader checked the text
and the id for lone surrogates, never the metadata (issue F2 of s30).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from seamline.components.sinks._columns import RowLayout
from seamline.contracts import OutputRecord
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.adapters.serving import SEAMLINE, environment

LINES = [
    '{"id": "a", "text": "hello", "m": "\\ud800"}',
    '{"id": "b", "text": "world", "m": "fine"}',
    '{"id": "c", "text": "again", "m": {"\\udc80": 1}}',
    '{"id": "d", "text": "more", "m": ["x", {"k": "y\\udfff"}]}',
]
REASONS = {
    "a": "line 1: metadata field 'm' holds a lone surrogate '\\ud800' at offset 0, which is "
    "not valid Unicode",
    "c": "line 3: metadata field 'm' holds a lone surrogate '\\udc80' at offset 0 in a key, "
    "which is not valid Unicode",
    "d": "line 4: metadata field 'm' holds a lone surrogate '\\udfff' at offset 1, which is "
    "not valid Unicode",
}
SINKS = {"lancedb": "out/emb.lance", "parquet": "out/emb.parquet"}


def pipeline(sink: str) -> str:
    return (
        "pipeline: surrogates\n"
        "loader: {use: jsonl, with: {path: in.jsonl, metadata_fields: [m]}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}, with: {{path: {SINKS[sink]}}}}}\n"
        "run: {batch_tokens: 64}\n"
    )


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "in.jsonl").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def errors(folder: Path, sink: str) -> dict[str, dict[str, object]]:
    path = folder / Path(SINKS[sink]).with_suffix(".errors.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


@pytest.mark.parametrize("sink", list(SINKS))
def test_the_document_is_set_aside_at_load_and_the_rest_are_written(
    folder: Path, tiny_registry: Registry, sink: str
) -> None:
    (folder / "p.yaml").write_text(pipeline(sink), encoding="utf-8")
    summary = Pipeline.from_yaml("p.yaml", [], registry=tiny_registry).run()
    assert summary.counts.documents == 1
    assert summary.counts.failed_documents == 3
    found = errors(folder, sink)
    assert {doc_id: record["reason"] for doc_id, record in found.items()} == REASONS
    assert {record["stage"] for record in found.values()} == {"load"}


def test_the_command_publishes_the_rest_and_exits_0(folder: Path) -> None:
    # From the user's side: `seamline run p.yaml` exited 1, "nothing was published".
    (folder / "p.yaml").write_text(pipeline("lancedb"), encoding="utf-8")
    done = subprocess.run(
        [str(SEAMLINE), "run", "p.yaml"],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert set(errors(folder, "lancedb")) == set(REASONS)


def test_the_arrow_sinks_escape_one_from_another_loader_as_the_jsonl_sink_does() -> None:
    # A third party's loader may hand one on: the parquet and lancedb sinks failed the run
    # in pyarrow's UTF-8 encoding; they write its escape text, as json_safe does.
    vector = np.ones(4, np.float32)
    records = [
        OutputRecord("a", 0, (0, 1), vector, {"m": "x\ud800", "n": {"\udc80": ["\udfff"]}}),
        OutputRecord("b", 0, (0, 1), vector, {"m": "fine", "n": {"\udc80": ["ok"]}}),
    ]
    batch = RowLayout("parquet", text=False, metadata_keys=None).batch(records)
    assert batch.column("metadata").to_pylist() == [
        {"m": "x\\ud800", "n": {"\\udc80": ["\\udfff"]}},
        {"m": "fine", "n": {"\\udc80": ["ok"]}},
    ]
