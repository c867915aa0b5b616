"""A run that starts Ray itself leaves no process of that Ray behind, even killed with SIGKILL.

The driver is a real ``seamline run`` in a process group of its own, with
``run.executor.with.address`` unset, so that it starts a Ray of its own. Once its
actor works, it is killed with SIGKILL; then every process of that Ray session
(each keeps its log files open in the session's folder, and all but the workers
are in the driver's process group) must be gone within a bounded time. Before the
reaper, Ray's dashboard and runtime-env agents stayed, for minutes or for good.
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

from seamline.adapters.executors._ray_reaper import reap, session_processes
from tests.scaling.conftest import plugin_environment
from tests.scaling.test_ray_executor import pipeline_text, ray_executor

START_S = 240
"""Longest wait for the driver to start Ray and its actor to commit (a loaded 2-CPU machine)."""
GONE_S = 60
"""Longest wait, after the kill, for the last process of the session to go."""


def _wait_for(condition: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.1)
    return found


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except (OSError, ValueError):
            continue
        if entry.isdigit() and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _session_of(driver: int) -> str | None:
    """The Ray session folder the driver's children (the GCS server, the raylet) write in."""
    for child in _children(driver):
        try:
            names = os.listdir(f"/proc/{child}/fd")
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(f"/proc/{child}/fd/{name}")
            except OSError:
                continue
            head, marker, rest = target.partition("/session_")
            if marker and "/" in rest:
                return f"{head}/session_{rest.split('/')[0]}"
    return None


def _alive_in_group(group: int) -> list[int]:
    """The processes of process group ``group`` that are not zombies."""
    alive = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except (OSError, ValueError):
            continue
        if entry.isdigit() and fields[0] != "Z" and int(fields[2]) == group:
            alive.append(int(entry))
    return alive


@pytest.mark.kill
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_driver_killed_with_sigkill_leaves_no_process_of_the_ray_it_started(
    tmp_path: Path,
) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    slow = {"use": "faults", "with": {"sleep": 0.25}}
    pipeline = tmp_path / "p.yaml"
    executor = ray_executor(actors=1, shards=2, retries=0)  # no address: it starts Ray
    pipeline.write_text(pipeline_text(tmp_path, executor=executor, monitors=[slow]))
    env = {**plugin_environment(), "SEAMLINE_CACHE_DIR": str(tmp_path / "cache")}
    # Unset, the address means a Ray of the run's own: not a cluster named elsewhere.
    env["RAY_ADDRESS"] = "127.0.0.1:9"
    command = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(pipeline)]
    driver = subprocess.Popen(
        [*command, "--no-compile-cache"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: Ray's processes join it
    )
    session = None
    try:

        def working() -> bool:
            if driver.poll() is not None:
                pytest.fail(f"the driver ended on its own, exit code {driver.returncode}")
            return any(tmp_path.glob(".emb.jsonl.shards/*/part-*/.emb.jsonl.checkpoint"))

        _wait_for(working, START_S, "the actor's first commit")
        session = _wait_for(lambda: _session_of(driver.pid), 30, "the driver's Ray session")
        assert session_processes(session), "the test must see the session's processes"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(30)

        def gone() -> bool:
            return not session_processes(session) and not _alive_in_group(driver.pid)

        _wait_for(gone, GONE_S, f"the processes of {session} to end")
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(30)
        if session is not None:
            reap(session, seconds=5)  # whatever this test failed on, leave nothing behind


# -- the reaper alone, on processes of its own making (no Ray) -----------------------------

HOLD = (
    "import sys, time; handle = open(sys.argv[1], sys.argv[2]); print('ready', flush=True); "
    "time.sleep(600)"
)


def holder(path: Path, mode: str = "a") -> subprocess.Popen[str]:
    """A process that keeps ``path`` open (``mode``), in a session of its own, until killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), mode],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    return process


DRIVER = """
import sys
from seamline.adapters.executors._ray_reaper import RayReaper

session = sys.argv[1]
with open(session + "/logs/driver.log", "a"):  # a driver's own log, kept open
    reaper = RayReaper.start(session)
    reaper.release()  # as a driver does after shutting Ray down
print("alive", reaper.process.returncode)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_reaper_kills_the_sessions_processes_and_spares_the_driver(tmp_path: Path) -> None:
    session = tmp_path / "session_2026-01-01_00-00-00_000000_1"
    (session / "logs").mkdir(parents=True)
    inside = holder(session / "logs" / "agent.log")
    outside = holder(tmp_path / "elsewhere.log")
    reader = holder(session / "logs" / "agent.log", "r")  # `tail -f`: not one of Ray's
    try:
        assert inside.pid in session_processes(str(session))
        driver = subprocess.run(
            [sys.executable, "-c", DRIVER, str(session)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (driver.returncode, driver.stdout) == (0, "alive 0\n"), driver.stderr
        assert inside.wait(10) == -signal.SIGKILL
        assert outside.poll() is None, "a process outside the session is left alone"
        assert reader.poll() is None, "a process that only reads the logs is left alone"
    finally:
        for process in (inside, outside, reader):
            process.kill()
            process.wait()


def test_the_reaper_refuses_what_is_not_a_ray_session_folder(tmp_path: Path) -> None:
    from seamline.adapters.executors._ray_reaper import RayReaper, main

    for path in (str(tmp_path), "session_x", "/", ""):
        assert RayReaper.start(path) is None
        assert main(["_ray_reaper.py", path]) == 2
