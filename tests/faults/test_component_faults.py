"""A loader or sink failing midway, a changed input on resume, and the machine failing around a run.

Each ends ``seamline run`` with one line (exit 1 for a failure, 2 for a refusal), no
traceback, nothing published and the last commit intact; the failing component is
named with its distribution. The faults come from the environment
(``SEAMLINE_FAULT_RAISE``), so the pipeline file of the resume is the one that failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.components.loaders.text_files import TextFilesLoader
from seamline.components.sinks.jsonl import JsonlSink
from seamline.core.registry import Registry
from tests.faults.conftest import fault_environment, info

DOCUMENTS = 30


@pytest.fixture
def registry(fault_registry: Registry) -> Registry:
    return Registry([*fault_registry.entries(), info(TextFilesLoader), info(JsonlSink)])


@pytest.fixture
def cli(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls: registry))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    return CliRunner()


def pipeline(
    tmp_path: Path,
    *,
    loader: str | None = None,
    out: Path | None = None,
    model: str = "toy",
) -> Path:
    out = out if out is not None else tmp_path / "out" / "emb.jsonl"
    loader = loader or f"{{use: fault-loader, with: {{documents: {DOCUMENTS}}}}}"
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        "pipeline: component-faults\n"
        f"loader: {loader}\n"
        f"model: {{use: {model}}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: fault-jsonl, with: {{path: {json.dumps(str(out))}}}}}\n"
        "run: {batch_size: 4, buckets: [4, 8], checkpoint_every: 5}\n",
        encoding="utf-8",
    )
    return path


def seamline(cli: CliRunner, path: Path, *flags: str, **env: str) -> tuple[int, str]:
    """The exit code, and stdout on success or stderr (where errors go) on failure."""
    result = cli.invoke(
        app, ["run", str(path), "--no-compile-cache", *flags], env={"COLUMNS": "400", **env}
    )
    return result.exit_code, result.stdout if result.exit_code == 0 else result.stderr


def one_line(output: str) -> str:
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def published(out: Path) -> list[Any]:
    return [json.loads(line) for line in (out / "emb.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(
    ("fault", "component"),
    [
        ("read:17", "loader 'fault-loader' (read, from seamline-fixture-faults 0.1.0)"),
        ("write:4", "sink 'fault-jsonl' (write, from seamline-fixture-faults 0.1.0)"),
        ("commit:3", "sink 'fault-jsonl' (commit, from seamline-fixture-faults 0.1.0)"),
    ],
)
def test_a_component_failing_midway_stops_cleanly_and_the_resume_finishes(
    cli: CliRunner, tmp_path: Path, fault: str, component: str
) -> None:
    reference = tmp_path / "reference"
    code, output = seamline(cli, pipeline(reference))
    assert code == 0, output
    path = pipeline(tmp_path)
    code, output = seamline(cli, path, SEAMLINE_FAULT_RAISE=fault)
    assert code == 1, output
    line = " ".join(one_line(output).split())
    assert f"failed: the run failed in {component}: RuntimeError: injected" in line
    assert "nothing was published" in line
    assert "run again with --resume" in line
    out = tmp_path / "out"
    assert not (out / "emb.jsonl").exists()
    assert not (out / "emb.manifest.json").exists()
    checkpoint = json.loads((out / ".emb.jsonl.checkpoint").read_text(encoding="utf-8"))
    assert checkpoint["cursor"] is not None, "the last commit stands"
    code, output = seamline(cli, path, "--resume")
    assert code == 0, output
    assert published(out) == published(reference / "out")


def corpus(root: Path, files: int = 12) -> None:
    root.mkdir(parents=True)
    for i in range(files):
        (root / f"doc{i:02d}.txt").write_text(" ".join(["word"] * (1 + i % 6)), encoding="utf-8")


def interrupted(cli: CliRunner, tmp_path: Path) -> Path:
    """A text-files run that failed after a commit: its pipeline file."""
    corpus(tmp_path / "corpus")
    loader = f"{{use: text-files, with: {{root: {json.dumps(str(tmp_path / 'corpus'))}}}}}"
    path = pipeline(tmp_path, loader=loader)
    code, output = seamline(cli, path, SEAMLINE_FAULT_RAISE="write:4")
    assert code == 1, output
    assert (tmp_path / "out" / ".emb.jsonl.checkpoint").exists()
    return path


def test_a_resume_refuses_an_input_that_changed_and_restart_starts_over(
    cli: CliRunner, tmp_path: Path
) -> None:
    path = interrupted(cli, tmp_path)
    checkpoint = (tmp_path / "out" / ".emb.jsonl.checkpoint").read_bytes()
    (tmp_path / "corpus" / "doc03.txt").write_text("an edited document", encoding="utf-8")
    code, output = seamline(cli, path, "--resume")
    assert code == 2, output
    line = " ".join(one_line(output).split())
    assert f"the input files under {str(tmp_path / 'corpus')!r}" in line
    assert "changed since that checkpoint" in line
    assert "--restart" in line
    assert (tmp_path / "out" / ".emb.jsonl.checkpoint").read_bytes() == checkpoint, "untouched"
    code, output = seamline(cli, path, "--resume", "--restart")
    assert code == 0, output
    assert len(published(tmp_path / "out")) == 12, "started over: every document once"


def test_a_resume_refuses_a_pipeline_file_that_changed(cli: CliRunner, tmp_path: Path) -> None:
    path = interrupted(cli, tmp_path)
    path.write_text(
        path.read_text(encoding="utf-8").replace("root:", "glob: '*.txt', root:"),
        encoding="utf-8",
    )
    code, output = seamline(cli, path, "--resume")
    assert code == 2, output
    assert "the pipeline file's loader section changed" in " ".join(output.split())


def test_an_unchanged_input_resumes(cli: CliRunner, tmp_path: Path) -> None:
    path = interrupted(cli, tmp_path)
    code, output = seamline(cli, path, "--resume")
    assert code == 0, output
    assert "resumed after cursor" in output
    assert len(published(tmp_path / "out")) == 12


def test_a_missing_output_directory_is_created(cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "not" / "yet" / "there" / "emb.jsonl"
    code, output = seamline(cli, pipeline(tmp_path, out=out))
    assert code == 0, output
    assert len(published(out.parent)) == DOCUMENTS


def test_an_output_under_a_file_is_one_line(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    code, output = seamline(cli, pipeline(tmp_path, out=tmp_path / "a-file" / "emb.jsonl"))
    assert code == 1, output
    line = " ".join(one_line(output).split())
    assert line.startswith("error: ")
    assert str(tmp_path / "a-file") in line
    assert "run again with --resume" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a read-only directory anyway")
def test_an_output_that_is_not_writable_is_one_line(cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "read-only"
    out.mkdir()
    out.chmod(0o555)
    try:
        code, output = seamline(cli, pipeline(tmp_path, out=out / "emb.jsonl"))
    finally:
        out.chmod(0o755)
    assert code == 1, output
    assert "error: Permission denied" in one_line(output)


def test_a_full_disk_is_one_line(tmp_path: Path) -> None:
    # A real full disk: a 16 KiB tmpfs, mounted in a user and mount namespace of the run's own.
    namespace = ["unshare", "--map-root-user", "--mount"]
    if shutil.which("unshare") is None or subprocess.run([*namespace, "true"]).returncode:
        pytest.skip("unshare cannot make a user and mount namespace here")
    disk = tmp_path / "disk"
    disk.mkdir()
    loader = "{use: fault-loader, with: {documents: 400}}"
    path = pipeline(tmp_path, loader=loader, out=disk / "emb.jsonl", model="tiny")
    script = 'mount -t tmpfs -o size=16k tmpfs "$1" && shift && exec "$@"'
    seamline = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(path)]
    done = subprocess.run(
        [*namespace, "sh", "-c", script, "sh", str(disk), *seamline, "--no-compile-cache"],
        env=fault_environment(COLUMNS="400"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    line = " ".join(one_line(done.stderr).split())
    assert line.startswith("error: No space left on device"), line
    assert "was not published" in line
    assert "run again with --resume" in line
