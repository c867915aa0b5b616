"""A misspelt field name fails every document: the run publishes nothing, exit 2.

From the user's side, with relative paths from a folder of the test's own, as the docs
show: a good run, then the same pipeline with ``text_field`` misspelt on the command
line. Every line of the input then fails alike; publishing would have replaced the good
output with an empty one (``overwrite``, the default) and exited 0. Then the fixed run
goes through as if the refused one had never happened (its checkpoint is not in the way).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from tests.e2e.user_folder import copy_checkpoint, one_line

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_logging")]

PIPELINE = """\
pipeline: docs
loader: {use: jsonl, with: {path: docs.jsonl, text_field: body}}
model: {use: bert-encoder, with: {weights: my-model}}
attention: {use: native}
sink: {use: jsonl, with: {path: out/docs.jsonl}}
run: {checkpoint_every: 1, batch_size: 1}
"""


def visible_files(folder: Path) -> dict[str, bytes]:
    """What a user sees in ``folder`` (a run's staged files start with a dot)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.startswith(".")}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_checkpoint(tmp_path)
    (tmp_path / "docs.jsonl").write_text(
        '{"id": "a", "body": "Seams make parts swappable."}\n'
        '{"id": "b", "body": "Kernels are verified before they are trusted."}\n',
        encoding="utf-8",
    )
    (tmp_path / "docs.yaml").write_text(PIPELINE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_misspelt_text_field_keeps_the_last_output(folder: Path) -> None:
    cli = CliRunner()
    ran = cli.invoke(app, ["run", "docs.yaml", "--no-compile-cache"])
    assert ran.exit_code == 0, ran.output
    out = folder / "out"
    published = visible_files(out)
    assert published["docs.jsonl"].count(b"\n") == 2

    typo = cli.invoke(
        app, ["run", "docs.yaml", "--set", "loader.with.text_field=txt", "--no-compile-cache"]
    )
    assert typo.exit_code == 2, typo.output
    line = one_line(typo.output)
    assert line.startswith("error: all 2 documents read were set aside as failed")
    assert "(the first, 'a': line 1: missing text field 'txt')" in line
    assert visible_files(out) == published, "the output, its errors and manifest as they were"

    fixed = cli.invoke(app, ["run", "docs.yaml", "--no-compile-cache"])
    assert fixed.exit_code == 0, fixed.output
    assert "2 documents" in fixed.output
    assert sorted(p.name for p in out.iterdir()) == sorted(published), "nothing staged is left"
