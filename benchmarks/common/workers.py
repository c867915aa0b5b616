"""Sides in processes of their own, spoken to with JSON lines: one timed repeat per request.

A side that must not share a process with the others (another interpreter, as the
reference side in ``.venv-golden``; another model; memory measured apart) runs
:func:`serve` as its loop, and the driver holds a :class:`Worker` for it. Each request
is answered with one JSON line on a private copy of stdout
(:mod:`seamline.adapters.measure.protocol`); anything else the side prints goes to its
log. Peak memory is the worker's own (:mod:`seamline.adapters.measure.memory`), not
its driver's.

This module runs in ``.venv-golden`` too: standard library and
:mod:`seamline.adapters.measure` only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from benchmarks.common.paths import ROOT
from seamline.adapters.measure.memory import peak_rss_kib
from seamline.adapters.measure.protocol import protocol_stream, send

SERVED_COMMANDS = {"run": "run_once", "trace": "traced_run"}
"""Request -> the side's method that answers it; ``quit`` ends the loop."""


def serve(factory: Callable[[], Any]) -> None:
    """A worker's loop: ``ready`` with the side's ``info``, then one JSON line per request.

    The side is built by ``factory`` (loading, warming up); each ``{"cmd": "run"}`` line
    on stdin is answered with ``side.run_once()`` (``trace``: ``side.traced_run()``),
    and ``{"cmd": "quit"}`` with the process's peak RSS.
    """
    proto = protocol_stream()
    side = factory()
    send(proto, {"event": "ready", **side.info, "rss_after_setup_kib": peak_rss_kib()})
    for line in sys.stdin:
        command = json.loads(line).get("cmd")
        if command == "quit":
            send(proto, {"event": "done", "peak_rss_kib": peak_rss_kib()})
            return
        method = getattr(side, SERVED_COMMANDS.get(command, ""), None)
        send(proto, method() if method else {"error": f"unknown command {command!r}"})


class WorkerError(RuntimeError):
    """A worker exited before answering; the message ends with its log."""


class Worker:
    """The driver's handle on one side in its own process, spoken to with JSON lines.

    The process runs in the repository root, so that ``argv`` may be
    ``python -m benchmarks...`` (:func:`benchmarks.common.paths.module_command`) wherever
    the driver was started; ``env`` is added to this process's environment.
    """

    def __init__(
        self, name: str, argv: list[str], log_path: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.ready: dict[str, Any] = {}
        self._log: IO[str] = log_path.open("w")
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self._log.flush()
            tail = self.log_path.read_text(errors="replace")[-4000:]
            raise WorkerError(
                f"the {self.name} worker exited with code {self.process.returncode}; "
                f"its log ({self.log_path}) ends with:\n{tail}"
            )
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"cmd": command}) + "\n")
        self.process.stdin.flush()
        return self.receive()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()
