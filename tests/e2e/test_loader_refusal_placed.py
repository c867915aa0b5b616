"""A loader's refusal during a run is placed in the pipeline file, as validate's errors are.

``seamline validate`` does not read the input, so ``root: ${CORPUS:-build/corpus}``
pointing at nothing fails only once the run asks the loader for documents. The message
named the setting but not where it was, nor that its value came from a variable's
default: a user copying an example pipeline into a folder of their own was left to
guess why the root was ``build/corpus``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from tests.e2e.user_folder import copy_checkpoint, one_line

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_logging")]

PIPELINE = """\
pipeline: corpus
loader:
  use: text-files
  with: {root: "${CORPUS:-build/corpus}"}
model: {use: bert-encoder, with: {weights: my-model}}
attention: {use: native}
sink: {use: jsonl, with: {path: out/corpus.jsonl}}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_checkpoint(tmp_path)
    (tmp_path / "corpus.yaml").write_text(PIPELINE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CORPUS", raising=False)
    return tmp_path


def test_a_missing_root_is_placed_and_names_the_variable_it_came_from(folder: Path) -> None:
    ran = CliRunner().invoke(app, ["run", "corpus.yaml", "--no-compile-cache"])
    assert ran.exit_code == 2, ran.output
    line = one_line(ran.output)
    assert line.startswith("error: corpus.yaml:4:9: text-files loader: root 'build/corpus'")
    assert line.endswith("(loader.with.root is written ${CORPUS:-build/corpus})")


def test_a_root_given_on_the_command_line_names_the_override(folder: Path) -> None:
    ran = CliRunner().invoke(
        app, ["run", "corpus.yaml", "--set", "loader.with.root=nowhere", "--no-compile-cache"]
    )
    assert ran.exit_code == 2, ran.output
    line = one_line(ran.output)
    assert line.startswith("error: corpus.yaml:4:9: text-files loader: root 'nowhere'")
    assert line.endswith("(given --set loader.with.root=nowhere)")
