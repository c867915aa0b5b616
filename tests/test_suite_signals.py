"""The suite passes however it was started: from a terminal, with nohup, or in the
background of a script (root conftest.py, ``stops_as_a_terminal_sends_them``).

``make test`` run in the background of a shell without job control starts with SIGINT
ignored, and under ``nohup`` with SIGHUP ignored too; every process after inherits it,
and the 14 tests that stop a run with those signals failed on a checkout that passes in
a terminal.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STOPPED = (
    "tests/adapters/test_cli_stopping.py::test_sighup_is_taken_as_sigterm_is_with_its_own_exit_code"
)


def _ignoring_stops() -> None:
    """As a script's ``nohup make test &`` starts the suite."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
def test_a_suite_started_with_stops_ignored_still_stops_its_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", STOPPED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_ignoring_stops,  # signal dispositions only: safe before exec
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
