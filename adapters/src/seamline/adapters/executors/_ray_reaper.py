"""Ends the processes of a Ray session once the driver that started it is gone, however it went.

A ``seamline run`` that starts Ray itself (``run.executor.with.address`` unset) owns
that Ray: its GCS server, raylet, dashboard and log monitor are the driver's
children and die with it, even when it is killed with SIGKILL (Ray asks the kernel
to kill them with their parent). The raylet's own children do not: Ray's dashboard
agent and runtime-env agent notice that the raylet is gone, then hang reporting it
to a GCS that is gone too (measured with Ray 2.60: still running minutes later),
and a SIGTERM does not end them either.

So a driver that starts Ray also starts this reaper: a small process of its own
session (a signal to the driver's process group does not reach it) that holds the
read end of a pipe whose write end only the driver has. The pipe reaches end of
file when the driver exits or dies, whatever the cause; the reaper then kills,
with SIGKILL, every process that still has a file open for writing in the
session's directory (``/tmp/ray/session_...``: each Ray process writes its log
files there; one that only reads them, ``tail -f``, is left alone), and exits. A
driver that ends normally shuts Ray down first and closes the pipe, so the reaper
only sweeps up what the shutdown left.

This file runs as a script (``python -I _ray_reaper.py SESSION_DIR``), not as a
module of the package, and imports only the standard library: it starts in
milliseconds and holds a few megabytes for the length of the run. It reads
``/proc``, so it works on Linux; elsewhere no reaper is started. The session
directory it is given is the one ``ray.init`` returned to the driver a moment
before, and it is checked to be one (an absolute path whose last part starts with
``session_``) before anything is killed.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SWEEP_SECONDS = 10.0
"""How long the reaper keeps sweeping after the driver is gone (new processes may still be
starting as it looks)."""

_PROC = "/proc"


def _is_session_dir(path: str) -> bool:
    name = os.path.basename(path.rstrip("/"))
    return os.path.isabs(path) and name.startswith("session_") and len(path) > len("/session_")


def _holds(pid: int, prefix: str) -> bool:
    """Whether process ``pid`` has a file under ``prefix`` open for writing.

    Ray's processes write their logs there; a process that only reads them (``tail -f``,
    a log shipper) is not Ray's and is left alone. False when ``pid`` cannot be read.
    """
    folder = f"{_PROC}/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    for name in names:
        try:
            target = os.readlink(f"{folder}/{name}")
        except OSError:
            continue
        if target.startswith(prefix) and _writing(pid, name):
            return True
    return False


def _writing(pid: int, fd: str) -> bool:
    """Whether descriptor ``fd`` of ``pid`` was opened for writing (from its ``fdinfo``)."""
    try:
        with open(f"{_PROC}/{pid}/fdinfo/{fd}") as info:
            for line in info:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY
    except (OSError, ValueError, IndexError):
        return False
    return False


def session_processes(session_dir: str, spare: frozenset[int] = frozenset()) -> list[int]:
    """The processes writing a file in ``session_dir``, but this one and those in ``spare``."""
    prefix = session_dir.rstrip("/") + "/"
    spare = spare | {os.getpid()}
    found = []
    for entry in os.listdir(_PROC):
        if entry.isdigit() and int(entry) not in spare and _holds(int(entry), prefix):
            found.append(int(entry))
    return found


def _kill(pid: int, prefix: str) -> bool:
    """SIGKILL ``pid`` if it still holds a file under ``prefix``; whether a signal was sent.

    The process is pinned by a pidfd before it is checked again, so a pid reused by
    another process in between is never signalled.
    """
    try:
        pinned = os.pidfd_open(pid)
    except OSError as err:
        if err.errno == errno.ESRCH:
            return False  # gone already
        return _kill_by_pid(pid, prefix)  # a kernel without pidfd_open (before Linux 5.3)
    try:
        if not _holds(pid, prefix):
            return False
        signal.pidfd_send_signal(pinned, signal.SIGKILL)
        return True
    except OSError:
        return False
    finally:
        os.close(pinned)


def _kill_by_pid(pid: int, prefix: str) -> bool:
    if not _holds(pid, prefix):
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        return False
    return True


def reap(
    session_dir: str, spare: frozenset[int] = frozenset(), seconds: float = SWEEP_SECONDS
) -> int:
    """Kill the session's processes but ``spare``, sweeping until none is left or time is up."""
    prefix = session_dir.rstrip("/") + "/"
    killed = 0
    deadline = time.monotonic() + seconds
    while True:
        found = session_processes(session_dir, spare)
        killed += sum(_kill(pid, prefix) for pid in found)
        if not found or time.monotonic() > deadline:
            return killed
        time.sleep(0.1)


def main(argv: list[str]) -> int:
    """``_ray_reaper.py SESSION_DIR``: wait for standard input to close, then reap."""
    if len(argv) != 2 or not _is_session_dir(argv[1]):
        return 2
    # The driver, if it is still there (it closed the pipe after shutting Ray down), is
    # never killed: it may still hold its own log file in the session's folder.
    driver = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe ends this process
    while sys.stdin.buffer.read(4096):
        pass
    reap(argv[1], frozenset({driver}))
    return 0


class RayReaper:
    """The driver's side: starts the reaper for a session, and lets it go at the end."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    @classmethod
    def start(cls, session_dir: str) -> RayReaper | None:
        """A reaper for ``session_dir``; None where it cannot work (no ``/proc``)."""
        if not sys.platform.startswith("linux") or not _is_session_dir(session_dir):
            return None
        process = subprocess.Popen(
            [sys.executable, "-I", str(Path(__file__).resolve()), session_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # out of reach of signals sent to the driver's group
        )
        return cls(process)

    def release(self, timeout: float = SWEEP_SECONDS + 5) -> None:
        """Close the pipe (Ray was shut down): the reaper sweeps what is left and exits."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
