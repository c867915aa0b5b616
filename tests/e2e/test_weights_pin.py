"""Weights replaced under an index or a run, from the user's side (model contract 1.4).

A pipeline that names its weights by a folder and sets no ``sha256``: the run pins the
digest of the ``model.safetensors`` it read into the manifest, so ``seamline search``
of that index refuses weights replaced since (it embedded queries with them, silently,
and ranked the index's vectors against another model's), and a resume refuses them
(vectors of two models in one output). Run with relative paths from a folder of the
test's own, as the docs show.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from tests.e2e.user_folder import copy_checkpoint, one_line

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_logging")]

PIPELINE = """\
pipeline: pinned
loader: {use: text-files, with: {root: notes}}
model: {use: bert-encoder, with: {weights: my-model}}
attention: {use: native}
sink: {use: jsonl, with: {path: out/notes.jsonl}}
run: {checkpoint_every: 1, batch_size: 1}
"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def replace_a_weight(weights: Path) -> None:
    """Change the last byte of the file (a tensor's data, past the header): another model."""
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy_checkpoint(tmp_path)
    (tmp_path / "notes").mkdir()
    for i, text in enumerate(["Seams make parts swappable.", "Kernels are verified.", "x"]):
        (tmp_path / "notes" / f"n{i}.txt").write_text(text, encoding="utf-8")
    (tmp_path / "pinned.yaml").write_text(PIPELINE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_search_refuses_weights_replaced_under_the_index(folder: Path) -> None:
    cli = CliRunner()
    ran = cli.invoke(app, ["run", "pinned.yaml", "--no-compile-cache"])
    assert ran.exit_code == 0, ran.output
    weights = folder / "my-model" / "model.safetensors"
    manifest = json.loads((folder / "out" / "notes.manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["with"]["sha256"] == sha256(weights), "the run pinned its weights"
    assert "sha256" not in (folder / "pinned.yaml").read_text(), "the pipeline set none"

    found = cli.invoke(app, ["search", "out/notes.jsonl", "swappable parts", "-k", "1"])
    assert found.exit_code == 0, found.output
    assert "n0" in found.output

    replace_a_weight(weights)
    refused = cli.invoke(app, ["search", "out/notes.jsonl", "swappable parts", "-k", "1"])
    assert refused.exit_code == 2, refused.output
    line = one_line(refused.output)
    assert f"has sha256 {sha256(weights)}" in line
    assert f"not the {manifest['model']['with']['sha256']} that 'sha256' pins" in line
    assert "recorded in an index's manifest by the run that made it" in line


def test_a_resume_refuses_weights_replaced_since_the_checkpoint(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = CliRunner()
    # The run dies after its first commit: the sink fails on its second document.
    from seamline.components.sinks import jsonl

    written = jsonl.JsonlSink.write

    def fail_on_the_second(self: jsonl.JsonlSink, records: object) -> None:
        if getattr(self, "_wrote_once", False):
            raise RuntimeError("injected")
        self._wrote_once = True  # type: ignore[attr-defined]
        written(self, records)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(jsonl.JsonlSink, "write", fail_on_the_second)
        failed = cli.invoke(app, ["run", "pinned.yaml", "--no-compile-cache"])
    assert failed.exit_code == 1, failed.output
    assert list((folder / "out").glob(".notes.jsonl.checkpoint*")), "a commit stands"

    replace_a_weight(folder / "my-model" / "model.safetensors")
    resumed = cli.invoke(app, ["run", "pinned.yaml", "--resume", "--no-compile-cache"])
    assert resumed.exit_code == 2, resumed.output
    line = one_line(resumed.output)
    assert "cannot resume" in line
    assert "model.with.sha256 was '" in line
    assert "--restart" in line

    restarted = cli.invoke(app, ["run", "pinned.yaml", "--resume", "--restart"])
    assert restarted.exit_code == 0, restarted.output


def test_search_refuses_a_tokenizer_edited_under_the_index(folder: Path) -> None:
    """The run pins the configuration and tokenizer files too (``files_sha256``): a
    ``tokenizer.json`` edited since would cut queries into other tokens than the index's."""
    cli = CliRunner()
    ran = cli.invoke(app, ["run", "pinned.yaml", "--no-compile-cache"])
    assert ran.exit_code == 0, ran.output
    manifest = json.loads((folder / "out" / "notes.manifest.json").read_text(encoding="utf-8"))
    pin = manifest["model"]["with"]["files_sha256"]
    assert isinstance(pin, str)
    assert len(pin) == 64

    tokenizer = folder / "my-model" / "tokenizer.json"
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab["SWAPPABLE"] = vocab.pop(next(t for t in vocab if t.isalpha() and len(t) > 3))
    tokenizer.write_text(json.dumps(data), encoding="utf-8")
    refused = cli.invoke(app, ["search", "out/notes.jsonl", "swappable parts", "-k", "1"])
    assert refused.exit_code == 2, refused.output
    line = one_line(refused.output)
    assert f"not the {pin} that 'files_sha256' pins" in line
    assert "recorded in an index's manifest by the run that made it" in line
    assert "my-model" in line


def test_an_index_of_a_relative_weights_folder_is_searched_from_anywhere(
    folder: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest recorded ``weights: my-model`` as written, and search looked it up from
    its own working directory: not found there, or another ``my-model`` used instead."""
    cli = CliRunner()
    ran = cli.invoke(app, ["run", "pinned.yaml", "--no-compile-cache"])
    assert ran.exit_code == 0, ran.output
    manifest = json.loads((folder / "out" / "notes.manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["with"]["weights"] == str(folder / "my-model")

    elsewhere = tmp_path_factory.mktemp("elsewhere")
    copy_checkpoint(elsewhere)  # another folder called my-model, which must not be used
    replace_a_weight(elsewhere / "my-model" / "model.safetensors")
    monkeypatch.chdir(elsewhere)
    found = cli.invoke(app, ["search", str(folder / "out" / "notes.jsonl"), "swappable", "-k", "1"])
    assert found.exit_code == 0, found.output
    assert "n0" in found.output
