"""``bench attention`` stopped: no worker outlives its driver, and the stop says so.

A SIGTERM or a Ctrl-C sent to the driver alone left its worker running, adopted by init,
with neither the driver's memory watchdog nor its timeout; and the sweep ended with exit
code 130 and no word. A worker here is a Python process that sleeps: what is checked is
whether it is still there after its driver stopped, or died.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters.bench_attention import cli, driver
from seamline.adapters.bench_attention.lifeline import dies_with_this_process
from seamline.adapters.cli.main import app
from seamline.adapters.cli.stopping import Terminated

SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
"""A worker that says its process id in a file, then sleeps for ten minutes."""


def _pid_in(path: Path, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.02)
    return int(path.read_text())


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _gone_within(pid: int, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)  # not left behind by the test either
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated])
def test_a_stop_of_the_driver_kills_the_worker_it_watches(
    stop: type[KeyboardInterrupt], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "worker.pid"

    def stopped(*args: Any) -> None:  # the signal lands while the driver watches
        _pid_in(pid_file)
        raise stop

    monkeypatch.setattr(driver, "_watchdog", stopped)
    limits = driver.Limits(timeout=600, memory_limit_gib=8)
    with pytest.raises(stop):
        driver.run_watched(
            [sys.executable, "-c", SLEEPER, str(pid_file)], limits, tmp_path / "worker.log"
        )
    assert _gone_within(int(pid_file.read_text()), timeout_s=0), "the worker outlived the stop"


DRIVER = """
import subprocess, sys, time
from seamline.adapters.bench_attention.lifeline import dies_with_this_process
worker = [sys.executable, "-c", sys.argv[1], sys.argv[2]]
subprocess.Popen(worker, preexec_fn=dies_with_this_process())
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_dies_with_a_driver_killed_outright(tmp_path: Path) -> None:
    """SIGKILL (or the out-of-memory killer) runs no code of the driver's: the kernel ends
    the worker (``PR_SET_PDEATHSIG``)."""
    assert dies_with_this_process() is not None
    pid_file = tmp_path / "worker.pid"
    driving = subprocess.Popen([sys.executable, "-c", DRIVER, SLEEPER, str(pid_file)])
    try:
        worker = _pid_in(pid_file)
    finally:
        driving.kill()
        driving.wait()
    assert _gone_within(worker), "the worker outlived its killed driver"


@pytest.mark.parametrize(
    ("stop", "code", "label"),
    [(KeyboardInterrupt, 130, "interrupted:"), (Terminated, 143, "interrupted (SIGTERM):")],
)
def test_a_stopped_sweep_says_interrupted_with_the_stop_s_exit_code(
    stop: type[KeyboardInterrupt],
    code: int,
    label: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    def stopped(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise stop

    monkeypatch.setattr(cli, "run_benchmark", stopped)
    result = CliRunner().invoke(
        app, ["bench", "attention", "--lengths", "128", "--no-plot", "-o", str(tmp_path)]
    )
    assert result.exit_code == code, result.output
    said = " ".join(result.output.split())
    assert f"{label} the sweep did not finish" in said, result.output
    assert "Traceback" not in result.output
