"""A real ``seamline serve`` process for the tests: started, waited for, stopped.

The server runs the scaling tests' ``tiny`` model (``tests/scaling/plugin``, on
``PYTHONPATH``), so starting one costs seconds, not the real model's compile times.
Every server listens on 127.0.0.1 on a free port (``--port 0``) and prints the
address it got; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

PLUGIN = Path(__file__).parents[1] / "scaling" / "plugin"
SEAMLINE = Path(sys.executable).with_name("seamline")
START_TIMEOUT_S = 120.0

TEXTS = [
    "the quick brown fox",
    "jumps over the lazy dog",
    "a server batches requests together",
    "each client gets its own rows",
    "tokens are counted from the batches",
    "short",
    "one two three four five six seven eight nine ten eleven twelve",
    "what comes back is what encode gives",
]


def pipeline_text(name: str = "served", model: str = "{use: tiny}", extra: str = "") -> str:
    return (
        f"pipeline: {name}\n"
        f"loader: {{use: lines, with: {{texts: {json.dumps(TEXTS)}}}}}\n"
        f"model: {model}\n"
        "attention: {use: native}\n"
        "sink: {use: jsonl, with: {path: out/emb.jsonl}}\n"
        "run: {batch_tokens: 64}\n"
        f"{extra}"
    )


def environment() -> dict[str, str]:
    """This environment, the tiny model importable, spans exported every 100 ms."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN), env.get("PYTHONPATH")) if p)
    env["OTEL_BSP_SCHEDULE_DELAY"] = "100"
    return env


@dataclass
class Server:
    process: subprocess.Popen[str]
    url: str
    log: Path

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout)

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        with self.client() as client:
            while time.monotonic() < deadline:
                if client.get("/healthz").status_code == 200:
                    return
                assert self.process.poll() is None, self.log.read_text()
                time.sleep(0.05)
        raise AssertionError(f"not ready after {timeout} s:\n{self.log.read_text()}")

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, then the exit status (killed if it does not exit in time)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise


@contextmanager
def serving(
    folder: Path,
    pipeline: Path,
    options: Sequence[str] = (),
    before: Callable[[], None] | None = None,
) -> Iterator[Server]:
    """``seamline serve PIPELINE --port 0 OPTIONS`` run from ``folder``; stopped at the end.

    ``before``: run in the child before the command (a resource limit set, as ``ulimit``)."""
    log = folder / f"serve-{time.monotonic_ns()}.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [str(SEAMLINE), "serve", str(pipeline), "--port", "0", "--no-compile-cache", *options],
            cwd=folder,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            preexec_fn=before,  # a limit set, nothing that takes a lock
        )
    server: Server | None = None
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the announcement, printed once listening
        found = re.search(r"http://[0-9.]+:\d+", line)
        assert found, f"no address announced: {line!r}\n{log.read_text()}"
        server = Server(process, found.group(0), log)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The OpenAI-shaped error of a refused request (every field checked present)."""
    assert response.headers["content-type"].startswith("application/json"), response.text
    assert "Traceback" not in response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert error["message"]
    return dict(error)
