"""A default spelled out is no change: a resume goes on, and ``spec_sha256`` stays.

``--set attention.with.isa=auto`` (the documented default) refused ``--resume`` with
"settings attention.with, attention.with.isa ... changed since that checkpoint", and
``precision: [float32]``, ``run.executor.use=local`` or a kernel's ``threads: 0`` changed
``spec_sha256``: the hashes were of the ``with:`` blocks as written. They are of the
settings as validated now, defaults left out; a checkpoint of an older seamline (without
them) is compared as written, as before. The run fails in the ``fault-loader`` at a chosen
document (the pipeline commits every 5 documents), through ``seamline run`` in this
process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from seamline.adapters.cli.main import app
from tests.faults.component_scenarios import DOCUMENTS, in_process_cli, pipeline, seamline

if TYPE_CHECKING:
    from typer.testing import CliRunner

DEFAULT = "sink.with.text=true"
"""The ``fault-jsonl`` sink's ``text`` setting, spelled out as its default."""


def interrupted(cli: CliRunner, tmp_path: Path) -> Path:
    path = pipeline(tmp_path)
    assert seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17").exit_code == 1
    assert (tmp_path / "out" / ".emb.jsonl.checkpoint").exists()
    return path


def test_a_resume_that_spells_out_a_default_goes_on(tmp_path: Path) -> None:
    with in_process_cli() as cli:
        path = interrupted(cli, tmp_path)
        again = seamline(cli, path, "--resume", "--set", DEFAULT)
    assert again.exit_code == 0, again.stderr
    assert (tmp_path / "out" / "emb.jsonl").exists()


def test_a_resume_that_changes_a_setting_is_still_refused_naming_it(tmp_path: Path) -> None:
    with in_process_cli() as cli:
        path = interrupted(cli, tmp_path)
        again = seamline(cli, path, "--resume", "--set", "sink.with.text=false")
    assert again.exit_code == 2, again.stderr
    assert "sink.with.text" in again.stderr
    assert "attention.with" not in again.stderr


NUMBER_AS_TEXT = (
    f"loader.with.documents='{DOCUMENTS}'",
    f"loader.with.documents={DOCUMENTS}.0",
)
"""The fault loader's integer ``documents`` as the file gives it, typed otherwise: as text
(what a ``"${DOCS:-30}"`` becomes), as a float."""


@pytest.mark.parametrize("typed", NUMBER_AS_TEXT)
def test_a_resume_with_a_number_typed_otherwise_goes_on(tmp_path: Path, typed: str) -> None:
    """One value is one setting however it is typed: a resume of a run started with the
    literal, given ``"${MAXLEN:-64}"``, was refused ("model.with.max_length ... changed")."""
    with in_process_cli() as cli:
        path = interrupted(cli, tmp_path)
        again = seamline(cli, path, "--resume", "--set", typed)
    assert again.exit_code == 0, again.stderr


def test_spec_sha256_is_of_a_number_as_validated_however_it_is_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = pipeline(tmp_path)
    with in_process_cli() as cli:
        plain = spec_sha256(cli, path)
        for typed in NUMBER_AS_TEXT:
            assert spec_sha256(cli, path, typed) == plain, typed
        text = path.read_text(encoding="utf-8")
        variable = '"${DOCS:-' + str(DOCUMENTS) + '}"}'
        path.write_text(text.replace(f"{DOCUMENTS}}}", variable), encoding="utf-8")
        assert "${DOCS" in path.read_text(encoding="utf-8")
        assert spec_sha256(cli, path) == plain
        monkeypatch.setenv("DOCS", str(DOCUMENTS))
        assert spec_sha256(cli, path) == plain
        monkeypatch.setenv("DOCS", str(DOCUMENTS + 1))
        assert spec_sha256(cli, path) != plain


@pytest.mark.parametrize("spelled", [DEFAULT, "sink.with.text=false"])
def test_a_checkpoint_from_before_the_settled_hashes_is_compared_as_written(
    tmp_path: Path, spelled: str
) -> None:
    """An older seamline's checkpoint has no ``inputs.resolved``: it resumes when the file is
    as it was, and a setting written anew, even a default, is refused as it was before."""
    with in_process_cli() as cli:
        path = interrupted(cli, tmp_path)
        file = tmp_path / "out" / ".emb.jsonl.checkpoint"
        checkpoint = json.loads(file.read_text(encoding="utf-8"))
        del checkpoint["inputs"]["resolved"]
        file.write_text(json.dumps(checkpoint), encoding="utf-8")
        refused = seamline(cli, path, "--resume", "--set", spelled)
        assert refused.exit_code == 2, refused.stderr
        assert "sink.with.text" in refused.stderr
        again = seamline(cli, path, "--resume")
    assert again.exit_code == 0, again.stderr


def spec_sha256(cli: CliRunner, path: Path, *sets: str) -> str:
    flags = [flag for value in sets for flag in ("--set", value)]
    ran = cli.invoke(app, ["validate", str(path), "--format", "json", *flags])
    assert ran.exit_code == 0, ran.output
    return str(json.loads(ran.stdout)["provenance"]["spec_sha256"])


def test_spec_sha256_changes_when_what_runs_changes_not_with_a_default_spelled_out(
    tmp_path: Path,
) -> None:
    path = pipeline(tmp_path)
    with in_process_cli() as cli:
        plain = spec_sha256(cli, path)
        for spelled in ([DEFAULT], ["precision=[float32]"], ["run.executor.use=local"]):
            assert spec_sha256(cli, path, *spelled) == plain, spelled
        assert spec_sha256(cli, path, "sink.with.text=false") != plain


def test_a_run_whose_folder_was_moved_still_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings are hashed as written where not defaults: a sink's relative path, which
    its configuration makes absolute, is the same setting in the moved folder."""
    first = tmp_path / "first"
    path = pipeline(first, out=Path("out/emb.jsonl"))
    monkeypatch.chdir(first)
    with in_process_cli() as cli:
        assert seamline(cli, path.relative_to(first), SEAMLINE_FAULT_RAISE="read:17").exit_code == 1
        moved = first.rename(tmp_path / "moved")
        monkeypatch.chdir(moved)
        again = seamline(cli, Path("pipeline.yaml"), "--resume")
    assert again.exit_code == 0, again.stderr
    assert (moved / "out" / "emb.jsonl").exists()


SAME_FOLDER = ("corpus", "corpus/", "./corpus", "corpus//", "./corpus/")
"""One folder, spelled as a shell's completion (``corpus/``), a habit (``./corpus``) or a
pasted join (``corpus//``) gives it."""


def test_spec_sha256_is_of_a_path_however_it_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SEAMLINE_CORPUS=corpus``, ``corpus/`` and ``./corpus`` gave three ``spec_sha256``;
    they name one folder (and ``corpus`` keeps the hash it had: its checkpoints resume)."""
    for folder in ("corpus", "other"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.txt").write_text("one document\n", encoding="utf-8")
    path = pipeline(tmp_path, loader="{use: text-files, with: {root: corpus}}")
    monkeypatch.chdir(tmp_path)
    with in_process_cli() as cli:
        plain = spec_sha256(cli, path)
        for spelled in SAME_FOLDER:
            assert spec_sha256(cli, path, f"loader.with.root={spelled}") == plain, spelled
        assert spec_sha256(cli, path, "loader.with.root=other") != plain
        assert spec_sha256(cli, path, "loader.with.root=other/../corpus") != plain


@pytest.mark.parametrize("spelled", ["./out/emb.jsonl", "out//emb.jsonl"])
def test_a_resume_with_a_path_spelled_otherwise_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelled: str
) -> None:
    """A run stopped, resumed with the same file named ``./out/emb.jsonl``: refused with
    "sink.with.path ... changed since that checkpoint" when paths were hashed as written."""
    path = pipeline(tmp_path, out=Path("out/emb.jsonl"))
    monkeypatch.chdir(tmp_path)
    with in_process_cli() as cli:
        assert seamline(cli, Path("pipeline.yaml"), SEAMLINE_FAULT_RAISE="read:17").exit_code == 1
        again = seamline(
            cli, path.relative_to(tmp_path), "--resume", "--set", f"sink.with.path={spelled}"
        )
    assert again.exit_code == 0, again.stderr
    assert (tmp_path / "out" / "emb.jsonl").exists()
