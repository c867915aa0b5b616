"""``seamline run``'s one-line failures: ``--resume`` with a sink that keeps no checkpoints (exit
code 2), and a disk that is full or read-only (exit code 1), without a traceback."""

from __future__ import annotations

import errno
import os
import signal
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.core.registry import Registry
from tests.core.toy import MemorySink, toy_registry

if TYPE_CHECKING:
    from pathlib import Path

PIPELINE = """\
pipeline: cli-resume
loader: {use: list, with: {texts: [one, two]}}
model: {use: toy}
attention: {use: native}
sink: {use: memory}
"""


@pytest.fixture
def toy_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sees the toy components, and leaves global logging and tracing alone."""
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    MemorySink.reset()


@pytest.mark.usefixtures("toy_cli")
def test_resume_with_a_sink_that_cannot_exits_2(tmp_path: Path) -> None:
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(pipeline), "--resume", "--no-compile-cache"])
    assert result.exit_code == 2, result.output
    assert "error: cannot resume: sink 'memory'" in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert MemorySink.records == []


@pytest.mark.usefixtures("toy_cli")
def test_run_without_resume_still_works(tmp_path: Path) -> None:
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(pipeline), "--no-compile-cache"])
    assert result.exit_code == 0, result.output
    assert "2 documents" in result.output
    assert len(MemorySink.records) == 2


@pytest.mark.parametrize(
    ("code", "said"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
)
@pytest.mark.usefixtures("toy_cli")
def test_a_full_or_read_only_disk_is_one_line_that_says_what_to_do(
    code: int, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(self: MemorySink, records: object) -> None:
        raise OSError(code, os.strerror(code), "/data/out/embeddings.jsonl.partial")

    monkeypatch.setattr(MemorySink, "write", fail)
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(pipeline), "--no-compile-cache"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    output = " ".join(result.output.split())
    assert f"error: {said} (/data/out/embeddings.jsonl.partial)" in output
    # The first write failed: nothing was committed, so --resume has nothing to go on
    # from (tests/faults/test_failure_commits.py has the case after a commit).
    assert "nothing was committed" in output
    assert "(--resume is not needed)" in output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "folder",
    ["/data/[draft]", "/data/a[/]b", "/data/ctrl\x1b[2J"],
    ids=["tag", "closing-tag", "escape"],
)
@pytest.mark.usefixtures("toy_cli")
def test_the_file_a_full_disk_names_is_shown_as_it_is_named(
    folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder's name is text: "[draft]" is not a style to apply (and drop), "[/]" not a
    # closing tag (rich raises on one that closes nothing), and a control character is
    # shown, not sent to the terminal.
    path = f"{folder}/embeddings.jsonl.partial"

    def fail(self: MemorySink, records: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(MemorySink, "write", fail)
    monkeypatch.chdir(tmp_path)
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "pipeline.yaml", "--no-compile-cache"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    output = " ".join(result.output.split())
    shown = path.replace("\x1b", "\N{REPLACEMENT CHARACTER}")
    assert f"error: No space left on device ({shown}): the output was not published" in output
    assert "Traceback" not in result.output


def _interrupt(self: MemorySink, records: object) -> None:
    raise KeyboardInterrupt  # Ctrl-C


def _terminate(self: MemorySink, records: object) -> None:
    os.kill(os.getpid(), signal.SIGTERM)  # handled: raises in this, the main, thread


@pytest.mark.usefixtures("toy_cli")
@pytest.mark.parametrize(
    ("stop", "code", "said"),
    [(_interrupt, 130, "interrupted:"), (_terminate, 143, "interrupted (SIGTERM):")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_stopped_run_is_one_line_that_says_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: object, code: int, said: str
) -> None:
    """Ctrl-C, and a SIGTERM (a scheduler's, ``timeout``'s) taking the same path."""
    monkeypatch.setattr(MemorySink, "write", stop)
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    before = signal.getsignal(signal.SIGTERM)
    result = CliRunner().invoke(app, ["run", str(pipeline), "--no-compile-cache"])
    assert result.exit_code == code, result.output
    output = " ".join(result.output.split())
    # Stopped at the first write, before any commit: it said "what the sink last committed
    # is kept: run again with --resume", and --resume started over without a word. (After
    # a commit, the line names it: tests/faults/test_sigterm.py.)
    assert f"{said} nothing was published; nothing was committed either, so a run again " in output
    assert "starts from the beginning" in output
    assert "--resume" not in output
    assert "Traceback" not in result.output
    assert signal.getsignal(signal.SIGTERM) is before, "the command left its handler behind"


@pytest.mark.usefixtures("toy_cli")
def test_a_run_stopped_inside_a_commit_does_not_say_nothing_was_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SIGTERM just after the checkpoint was on disk, before the commit returned, said
    # "nothing was committed either, so a run again starts from the beginning".
    def committed_then_stopped(self: MemorySink, cursor: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(MemorySink, "commit", committed_then_stopped, raising=False)
    monkeypatch.setattr(MemorySink, "resumable", True, raising=False)  # so it commits
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE + "run: {checkpoint_every: 1}\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(pipeline), "--no-compile-cache"])
    assert result.exit_code == 130, result.output
    output = " ".join(result.output.split())
    # Nor that what the sink committed is kept: a stop while the first commit was flushed
    # left nothing on disk. Whether it was made the sink cannot say: --resume does either.
    assert (
        "interrupted: nothing was published; the stop came while the first commit was being "
        "made, so it may not have been: run again with --resume to go on from it if it was "
        "(from the beginning if not)"
    ) in output, output
    assert "nothing was committed either" not in output
    assert "what the sink last committed is kept" not in output


@pytest.mark.usefixtures("toy_cli")
def test_a_run_stopped_inside_a_later_commit_keeps_the_one_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits: list[object] = []

    def second_stopped(self: MemorySink, cursor: object) -> None:
        commits.append(cursor)
        if len(commits) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(MemorySink, "commit", second_stopped, raising=False)
    monkeypatch.setattr(MemorySink, "resumable", True, raising=False)
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE + "run: {checkpoint_every: 1}\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(pipeline), "--no-compile-cache"])
    assert result.exit_code == 130, result.output
    output = " ".join(result.output.split())
    assert "interrupted: nothing was published; what the sink last committed is kept" in output
