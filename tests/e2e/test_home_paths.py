"""``~`` in a pipeline's paths is the home folder, as in a shell.

It used to name a folder called ``~`` in the working directory: the run created
``./~/out/notes.jsonl`` and printed ``output: ~/out/notes.jsonl``, which reads as the
home folder (and ``rm -rf ~`` is how a user would then remove the stray folder). Run
from a working directory of the test's own with ``HOME`` pointing at another folder, so
that the two cannot be confused.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.api import Pipeline, open_index
from seamline.contracts import ConfigError
from seamline.contracts.component import expand_home
from tests.e2e.user_folder import copy_checkpoint

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_logging")]

PIPELINE = """\
pipeline: notes
loader: {use: text-files, with: {root: ~/notes}}
model: {use: bert-encoder, with: {weights: ~/my-model}}
attention: {use: native}
sink: {use: jsonl, with: {path: ~/out/notes.jsonl}}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    copy_checkpoint(home)
    (home / "notes").mkdir()
    (home / "notes" / "seams.txt").write_text("Seams make parts swappable.", encoding="utf-8")
    (home / "notes.yaml").write_text(PIPELINE, encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


def test_a_run_reads_and_writes_under_the_home_folder(home: Path) -> None:
    cli = CliRunner()
    ran = cli.invoke(app, ["run", "~/notes.yaml", "--no-compile-cache"])
    assert ran.exit_code == 0, ran.output
    assert (home / "out" / "notes.jsonl").is_file()
    assert not Path("~").exists(), "no folder called '~' in the working directory"
    search = next(line for line in ran.output.splitlines() if "search it:" in line)
    command = shlex.split(search.split("search it:", 1)[1])
    assert command[2] == str(home / "out" / "notes.jsonl"), "the command names the real place"
    found = cli.invoke(app, [*command[1:3], "swappable", "-k", "1"])
    assert found.exit_code == 0, found.output
    assert "seams.txt" in found.output

    quoted = cli.invoke(app, ["search", "~/out/notes.jsonl", "swappable", "-k", "1"])
    assert quoted.exit_code == 0, quoted.output  # "index ~/out/notes.jsonl does not exist"
    assert "seams.txt" in quoted.output
    nobody = cli.invoke(app, ["search", "~nosuchuser/out/notes.jsonl", "swappable"])
    assert nobody.exit_code == 2, nobody.output
    assert "no user of this machine is called 'nosuchuser'" in nobody.output

    with open_index("~/out/notes.jsonl") as index:  # from Python too
        assert index.search("swappable", k=1)[0].doc_id == "seams.txt"
    assert Pipeline.from_yaml("~/notes.yaml").resolved.sink.config.path == (  # type: ignore[attr-defined]
        home / "out" / "notes.jsonl"
    )


def test_a_user_that_does_not_exist_is_refused_at_its_place(home: Path) -> None:
    (home / "notes.yaml").write_text(
        PIPELINE.replace("~/out/notes.jsonl", "~nosuchuser/out/notes.jsonl"), encoding="utf-8"
    )
    with pytest.raises(ConfigError) as refused:
        Pipeline.from_yaml("~/notes.yaml")
    said = str(refused.value)
    assert ":5:" in said, said  # the sink's line
    assert "no user of this machine is called 'nosuchuser'" in said


def test_a_folder_called_tilde_is_spelled_with_a_dot() -> None:
    assert expand_home("./~/x") == "./~/x"
    assert expand_home("a/~") == "a/~"
