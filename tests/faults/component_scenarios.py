"""A loader or sink failing midway, a changed input on resume, the machine failing around a run.

Each scenario runs ``seamline run`` (in this process through typer's runner, or as
a subprocess where the process itself matters) and records its exit code, what it
printed, and what it left in the output folder: ``tests/faults/test_component_faults.py``
asserts on that, :mod:`tests.faults.outcomes` renders it. The faults come from the
environment (``SEAMLINE_FAULT_RAISE``), so the pipeline file of the resume is the
one that failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.components.loaders.text_files import TextFilesLoader
from seamline.components.sinks.jsonl import JsonlSink
from seamline.core import commits
from seamline.core.registry import Registry
from tests.faults.fixture_plugin import fault_environment, fault_registry, info
from tests.faults.spellings import place
from tests.fresh_logging import logging_as_in_a_fresh_process

if TYPE_CHECKING:
    from collections.abc import Iterator

DOCUMENTS = 30
FILES = 12
"""Documents of the text-files corpus the resume scenarios change."""
MIDWAY = {
    "read:17": "loader 'fault-loader' (read, from seamline-fixture-faults 0.1.0)",
    "write:4": "sink 'fault-jsonl' (write, from seamline-fixture-faults 0.1.0)",
    "commit:3": "sink 'fault-jsonl' (commit, from seamline-fixture-faults 0.1.0)",
}
"""Each injected component fault (``SEAMLINE_FAULT_RAISE``), and the component it names."""
MIDWAY_SPELLINGS = {"read:17": "absolute", "write:4": "relative", "commit:3": "symlinked"}
"""How each midway fault's run spells its output path (run, and resumed, from its own folder:
see :mod:`tests.faults.spellings`)."""


def registry() -> Registry:
    """The fault registry with the real ``text-files`` loader and ``jsonl`` sink."""
    return Registry([*fault_registry().entries(), info(TextFilesLoader), info(JsonlSink)])


@contextlib.contextmanager
def in_process_cli(discovered: Registry | None = None) -> Iterator[CliRunner]:
    """``seamline run`` in this process, seeing ``discovered`` (default: :func:`registry`),
    leaving global telemetry alone and with no kill point from the environment."""
    found = discovered if discovered is not None else registry()
    with pytest.MonkeyPatch.context() as patch, logging_as_in_a_fresh_process():
        patch.setattr(Registry, "discover", classmethod(lambda cls, trust: found))
        patch.setattr(logging_setup, "configure_logging", lambda **_: None)
        patch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
        patch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
        patch.delenv("SEAMLINE_FAULT_KILL", raising=False)
        yield CliRunner()


def pipeline(
    directory: Path,
    *,
    loader: str | None = None,
    out: Path | None = None,
    model: str = "toy",
) -> Path:
    out = out if out is not None else directory / "out" / "emb.jsonl"
    loader = loader or f"{{use: fault-loader, with: {{documents: {DOCUMENTS}}}}}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pipeline.yaml"
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


@dataclass(frozen=True)
class Ran:
    """One ``seamline run``: its exit code and what it printed."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def said(self) -> str:
        """stdout on success, stderr (where errors go) on failure."""
        return self.stdout if self.exit_code == 0 else self.stderr

    @property
    def lines(self) -> list[str]:
        return [line for line in self.said.splitlines() if line.strip()]


def seamline(cli: CliRunner, path: Path, *flags: str, **env: str) -> Ran:
    result = cli.invoke(
        app, ["run", str(path), "--no-compile-cache", *flags], env={"COLUMNS": "400", **env}
    )
    return Ran(result.exit_code, result.stdout, result.stderr)


def published(out: Path) -> list[Any] | None:
    """The records of ``out/emb.jsonl``; None if it was not published."""
    path = out / "emb.jsonl"
    if not path.exists():
        return None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def checkpoint_cursor(out: Path) -> tuple[bool, str | None]:
    """Whether a checkpoint is left beside ``out/emb.jsonl``, and its cursor."""
    path = out / ".emb.jsonl.checkpoint"
    if not path.exists():
        return False, None
    return True, commits.decode(json.loads(path.read_text(encoding="utf-8"))["cursor"])[0]


def reference(cli: CliRunner, directory: Path) -> tuple[Ran, list[Any] | None]:
    """An uninterrupted run of the fault-loader pipeline, and what it published."""
    ran = seamline(cli, pipeline(directory))
    return ran, published(directory / "out")


@dataclass(frozen=True)
class Midway:
    """A component failing midway (``fault``), then ``--resume``."""

    fault: str
    failed: Ran
    published: bool
    manifest: bool
    checkpoint: bool
    cursor: str | None
    resumed: Ran
    resumed_output: list[Any] | None


def fail_midway(cli: CliRunner, workdir: Path, fault: str) -> Midway:
    """Run until ``fault``, then ``--resume``: both from ``workdir``, the output path spelled
    as :data:`MIDWAY_SPELLINGS` says."""
    placed = place(workdir, "emb.jsonl", MIDWAY_SPELLINGS[fault])
    path = pipeline(placed.cwd, out=placed.path)
    with contextlib.chdir(placed.cwd):
        failed = seamline(cli, Path(path.name), SEAMLINE_FAULT_RAISE=fault)
        out = placed.folder
        left, cursor = checkpoint_cursor(out)
        was_published = (out / "emb.jsonl").exists()
        manifest = (out / "emb.manifest.json").exists()
        resumed = seamline(cli, Path(path.name), "--resume")
    return Midway(fault, failed, was_published, manifest, left, cursor, resumed, published(out))


def corpus(root: Path, files: int = FILES) -> None:
    root.mkdir(parents=True)
    for i in range(files):
        (root / f"doc{i:02d}.txt").write_text(" ".join(["word"] * (1 + i % 6)), encoding="utf-8")


@dataclass(frozen=True)
class Interrupted:
    """A text-files run that failed after a commit (``write:4``): what it left."""

    path: Path
    corpus: Path
    out: Path
    failed: Ran
    checkpoint: bytes | None


def interrupted(cli: CliRunner, workdir: Path) -> Interrupted:
    corpus(workdir / "corpus")
    loader = f"{{use: text-files, with: {{root: {json.dumps(str(workdir / 'corpus'))}}}}}"
    path = pipeline(workdir, loader=loader)
    failed = seamline(cli, path, SEAMLINE_FAULT_RAISE="write:4")
    checkpoint = workdir / "out" / ".emb.jsonl.checkpoint"
    left = checkpoint.read_bytes() if checkpoint.exists() else None
    return Interrupted(path, workdir / "corpus", workdir / "out", failed, left)


@dataclass(frozen=True)
class Resumed:
    """An interrupted run, something changed (or not), then ``--resume`` (and ``--restart``)."""

    first: Interrupted
    resumed: Ran
    checkpoint_untouched: bool
    restarted: Ran | None
    output: list[Any] | None


def resume_after(cli: CliRunner, workdir: Path, change: str) -> Resumed:
    """``change``: ``input`` (a document edited), ``pipeline`` (the loader's section),
    ``stray`` (files the loader's ``glob`` does not match written into its ``root``: an
    editor's swap file, a log), ``none``."""
    first = interrupted(cli, workdir)
    if change == "input":
        (first.corpus / "doc03.txt").write_text("an edited document", encoding="utf-8")
    elif change == "stray":
        (first.corpus / ".doc03.txt.swp").write_bytes(b"b0VIM 9.0")
        (first.corpus / "logs").mkdir()
        (first.corpus / "logs" / "run.log").write_text("resumed\n", encoding="utf-8")
    elif change == "pipeline":
        text = first.path.read_text(encoding="utf-8").replace("root:", "glob: '*.txt', root:")
        first.path.write_text(text, encoding="utf-8")
    resumed = seamline(cli, first.path, "--resume")
    checkpoint = first.out / ".emb.jsonl.checkpoint"
    untouched = checkpoint.exists() and checkpoint.read_bytes() == first.checkpoint
    restarted = None
    if change == "input":
        restarted = seamline(cli, first.path, "--resume", "--restart")
    return Resumed(first, resumed, untouched, restarted, published(first.out))


@dataclass(frozen=True)
class Plain:
    """One run into ``out``, nothing injected but where the output goes."""

    ran: Ran
    out: Path
    output: list[Any] | None
    not_run: str | None = None
    """Why the scenario could not run on this machine (None: it ran)."""


def missing_folder(cli: CliRunner, workdir: Path) -> Plain:
    out = workdir / "not" / "yet" / "there" / "emb.jsonl"
    ran = seamline(cli, pipeline(workdir, out=out))
    return Plain(ran, out, published(out.parent))


def under_a_file(cli: CliRunner, workdir: Path) -> Plain:
    (workdir / "a-file").write_text("", encoding="utf-8")
    out = workdir / "a-file" / "emb.jsonl"
    return Plain(seamline(cli, pipeline(workdir, out=out)), out, None)


def read_only(cli: CliRunner, workdir: Path) -> Plain:
    folder = workdir / "read-only"
    out = folder / "emb.jsonl"
    if os.geteuid() == 0:
        return Plain(Ran(-1, "", ""), out, None, "running as root")  # root writes there anyway
    folder.mkdir()
    folder.chmod(0o555)
    try:
        ran = seamline(cli, pipeline(workdir, out=out))
    finally:
        folder.chmod(0o755)
    return Plain(ran, out, published(folder))


def full_disk(workdir: Path) -> Plain:
    """A real full disk: a 16 KiB tmpfs, mounted in a user and mount namespace of the run's own."""
    disk = workdir / "disk"
    out = disk / "emb.jsonl"
    namespace = ["unshare", "--map-root-user", "--mount"]
    if shutil.which("unshare") is None or subprocess.run([*namespace, "true"]).returncode:
        reason = "unshare cannot make a user and mount namespace here"
        return Plain(Ran(-1, "", ""), out, None, reason)
    disk.mkdir()
    loader = "{use: fault-loader, with: {documents: 400}}"
    path = pipeline(workdir, loader=loader, out=out, model="tiny")
    script = 'mount -t tmpfs -o size=16k tmpfs "$1" && shift && exec "$@"'
    command = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(path)]
    done = subprocess.run(
        [*namespace, "sh", "-c", script, "sh", str(disk), *command, "--no-compile-cache"],
        env=fault_environment(COLUMNS="400"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    # The tmpfs went with the namespace: the folder is empty again, whatever was written.
    return Plain(Ran(done.returncode, done.stdout, done.stderr), out, None)
