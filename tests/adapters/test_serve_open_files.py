"""``seamline serve`` raises its limit on open files to fit ``--max-connections``.

Under ``ulimit -n 64``, 101 of 150 concurrent clients of a server of the default 1,024
connections got a connection reset, without a word in its log: past the limit uvloop
accepts a connection and closes it at once, so the documented 503 never came. The soft
limit is now raised toward the hard one at start; a hard limit too low is said once,
naming both numbers and the fix.
"""

from __future__ import annotations

import json
import resource
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from seamline.adapters.serve.open_files import files_needed
from tests.adapters.serving import Server, pipeline_text, serving

CONNECTIONS = 200
CLIENTS = 150


def _soft_limit(pid: int) -> int:
    """The process's soft limit on open files, as the kernel has it."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-files line in /proc/PID/limits")


def _at_once(server: Server, clients: int) -> list[str]:
    """``clients`` requests on as many connections at once: each one's status, or error."""
    results: list[str] = []
    start = threading.Barrier(clients)

    def one() -> None:
        with server.client() as client:
            start.wait(30)
            try:
                results.append(str(client.post("/v1/embeddings", json={"input": "a text"})))
            except httpx.TransportError as err:
                results.append(type(err).__name__)

    threads = [threading.Thread(target=one) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def _limited(soft: int, hard: int | None = None) -> Callable[[], None]:
    def before() -> None:
        now_hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, now_hard if hard is None else hard))

    return before


def _warnings(server: Server) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in server.log.read_text().splitlines() if "{" in line]
    return [line for line in lines if line.get("level") == "warning"]


@pytest.mark.skipif(
    not (
        resource.getrlimit(resource.RLIMIT_NOFILE)[1] == resource.RLIM_INFINITY
        or resource.getrlimit(resource.RLIMIT_NOFILE)[1] >= files_needed(CONNECTIONS)
    ),
    reason="the hard limit on open files here is too low to raise toward",
)
def test_a_low_soft_limit_is_raised_and_every_client_is_answered(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    options = ["--max-connections", str(CONNECTIONS), "--log-format", "json"]
    with serving(tmp_path, Path("p.yaml"), options, before=_limited(64)) as server:
        server.wait_ready()
        results = _at_once(server, CLIENTS)
        assert results == ["<Response [200 OK]>"] * CLIENTS
        assert _soft_limit(server.process.pid) == files_needed(CONNECTIONS)
        assert _warnings(server) == []


def test_a_hard_limit_too_low_is_said_once_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    options = ["--max-connections", str(CONNECTIONS), "--log-format", "json"]
    with serving(tmp_path, Path("p.yaml"), options, before=_limited(64, 256)) as server:
        server.wait_ready()
        assert _soft_limit(server.process.pid) == 256  # raised as far as it may go
        (said,) = [w for w in _warnings(server) if "open files" in str(w["event"])]
    needed = files_needed(CONNECTIONS)
    assert said["open_files"] == 256
    assert said["needed"] == needed
    assert f"the limit on open files (256) is below the {needed} that --max-connections" in str(
        said["event"]
    )
    assert f"ulimit -n {needed}" in str(said["event"])
    assert "lower --max-connections to 128" in str(said["event"])
