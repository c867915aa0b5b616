"""A SIGTERM or SIGHUP stops ``seamline run`` as Ctrl-C does, seen from the user's side.

A job scheduler, ``timeout``, Kubernetes and systemd stop a process with SIGTERM; a
closed ssh session or a cancelled CI job sends SIGHUP, which ended a run with exit code
129, nothing on stderr and the destination's lock left behind. A real ``seamline run``
subprocess (slowed: the ``fault-jsonl`` sink sleeps before each write) gets one after its
first commit, and must stop cleanly: exit code 143 or 129 (128 + the signal's number,
what a shell reports for a process the signal ended), the one ``interrupted`` line that
names ``--resume``, no traceback, nothing published, the checkpoint kept and the lock
released; ``--resume`` then publishes every document exactly once (in this process:
resuming from a checkpoint is no process's behaviour, and the stop's is asserted by then).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from tests.faults.component_scenarios import published
from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import DOCUMENTS, in_process_cli, run_in_process, write_pipeline

if TYPE_CHECKING:
    from pathlib import Path

SLOW_S = "0.4"
"""Sleep before each write: the 10 writes after the first commit outlast the signal."""


def seamline_run(
    pipeline: Path, *flags: str, slow: str = "", ignored: tuple[int, ...] = ()
) -> subprocess.Popen[str]:
    """``seamline run pipeline.yaml`` started from the pipeline's folder, as a user starts it
    (with the signals ``ignored``, as ``nohup`` starts a command with SIGHUP ignored)."""
    env = fault_environment(SEAMLINE_FAULT_SLOW=slow) if slow else fault_environment()

    def ignore() -> None:
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "seamline.adapters.cli.main", "run", pipeline.name, *flags],
        cwd=pipeline.parent,
        env=env,
        preexec_fn=ignore if ignored else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


COMMIT_DONE_S = 0.5
"""Waited after the checkpoint appears: the sink renames it into place inside its commit,
which then syncs the folder and returns before the run counts the commit as made, and a
signal in between is (rightly) reported as one inside the first commit. Under two loaded
CPUs that took long enough for the 20 ms poll to land there once; the 10 slowed writes
after the commit (4 s) leave the signal well inside the run."""


def wait_for(path: Path, process: subprocess.Popen[str], timeout_s: float = 120) -> None:
    """Until ``path`` exists (the run's first commit) and the commit has returned, while
    ``process`` runs."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"no first commit: {process.communicate()}")
        time.sleep(0.02)
    time.sleep(COMMIT_DONE_S)


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_after_the_first_commit_stops_cleanly_and_resume_finishes(
    tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    out = tmp_path / "out"
    running = seamline_run(pipeline, "--log-level", "warning", slow=SLOW_S)
    wait_for(out / ".emb.jsonl.checkpoint", running)
    running.send_signal(sent)
    _, stderr = running.communicate(timeout=120)

    assert running.returncode == code, (running.returncode, stderr)
    assert "Traceback" not in stderr, stderr
    line = " ".join(stderr.split())
    assert (
        f"interrupted ({sent.name}): nothing was published; what the sink last committed is "
        "kept: run again with --resume to go on from it"
    ) in line, stderr
    assert published(out) is None, "a stopped run published"
    assert (out / ".emb.jsonl.checkpoint").exists(), "the checkpoint was not kept"
    assert not (out / ".emb.jsonl.lock").exists(), "the lock was left behind"

    with in_process_cli() as cli:
        resumed = run_in_process(cli, pipeline, "--resume", "--log-level", "warning")
    assert resumed.exit_code == 0, resumed.stderr
    assert "resumed after cursor" in resumed.stdout, resumed.stdout
    records = published(out)
    assert records is not None
    ids = [record["id"] for record in records]
    assert sorted(ids) == sorted(f"d{i}" for i in range(DOCUMENTS)), "not each exactly once"


def test_a_run_started_under_nohup_outlives_the_sighup_and_publishes(tmp_path: Path) -> None:
    """``nohup seamline run ...`` (docs/cli.md's advice for exit code 129) starts the run
    with SIGHUP ignored: the closed session's SIGHUP stopped it all the same ("interrupted
    (SIGHUP): nothing was published"), its work lost. An ignored signal stays ignored."""
    pipeline = write_pipeline(tmp_path, "relative")
    out = tmp_path / "out"
    running = seamline_run(
        pipeline, "--log-level", "warning", slow=SLOW_S, ignored=(signal.SIGHUP,)
    )
    wait_for(out / ".emb.jsonl.checkpoint", running)
    running.send_signal(signal.SIGHUP)
    _, stderr = running.communicate(timeout=120)

    assert running.returncode == 0, (running.returncode, stderr)
    assert "interrupted" not in stderr, stderr
    records = published(out)
    assert records is not None, "the run under nohup did not publish"
    ids = [record["id"] for record in records]
    assert sorted(ids) == sorted(f"d{i}" for i in range(DOCUMENTS)), "not each exactly once"


def test_under_json_logs_the_stop_is_a_record_that_keeps_the_resume_advice(
    tmp_path: Path,
) -> None:
    """``--log-format json``: a collector read every line but the one that said why the
    run ended (plain text, ``jq`` exit 4); the run's last record was ``run finished``,
    ``ok: false``, with no reason. Now that line is a record too."""
    pipeline = write_pipeline(tmp_path, "relative")
    out = tmp_path / "out"
    running = seamline_run(pipeline, "--log-format", "json", slow=SLOW_S)
    wait_for(out / ".emb.jsonl.checkpoint", running)
    running.send_signal(signal.SIGTERM)
    _, stderr = running.communicate(timeout=120)

    assert running.returncode == 143, (running.returncode, stderr)
    records = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    stop = records[-1]
    assert stop["event"] == "interrupted", stop
    assert (stop["level"], stop["signal"], stop["exit_code"]) == ("warning", "SIGTERM", 143)
    assert stop["kept"].endswith("run again with --resume to go on from it"), stop
