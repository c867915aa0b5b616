"""An idle kept-alive connection stays open for ``--keep-alive-timeout``, then is closed.

uvicorn closed a connection 5 s after its last answer (its fixed keep-alive timeout),
and ``--header-timeout`` after 10: a load balancer keeps an idle upstream connection for
60 s (AWS's ALB, nginx), so a request it sent on a connection idle for 5 s met a closed
socket and its client a 502. The default is now above such balancers' idle timeouts.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from seamline.adapters.serve.limits import Limits
from tests.adapters.serving import Server, pipeline_text, serving

HEAD_TIMEOUT_S = 1.0
SHORT_KEEP_ALIVE_S = 1.5


def _server(tmp_path_factory: pytest.TempPathFactory, options: list[str]) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve-keep-alive")
    (folder / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    with serving(folder, Path("p.yaml"), options) as running:
        running.wait_ready()
        yield running


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # a short head deadline: the idle time after an answer is not the head's to bound
    yield from _server(tmp_path_factory, ["--header-timeout", str(HEAD_TIMEOUT_S)])


@pytest.fixture(scope="module")
def short_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _server(tmp_path_factory, ["--keep-alive-timeout", str(SHORT_KEEP_ALIVE_S)])


def _connection(server: Server) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port or 0, timeout=10)


def _embed(connection: http.client.HTTPConnection) -> int:
    body = b'{"input": ["a text"]}'
    connection.request("POST", "/v1/embeddings", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def test_a_connection_idle_past_5_seconds_is_still_served(default_server: Server) -> None:
    connection = _connection(default_server)
    try:
        assert _embed(connection) == 200
        sock = connection.sock
        time.sleep(5.5)  # past uvicorn's 5 s and the 1 s head deadline
        assert _embed(connection) == 200  # was: BrokenPipeError / RemoteDisconnected
        assert connection.sock is sock  # the same connection, not a reconnection
    finally:
        connection.close()


def test_a_connection_idle_past_the_keep_alive_timeout_is_closed(short_server: Server) -> None:
    connection = _connection(short_server)
    try:
        assert _embed(connection) == 200
        sock = connection.sock
        assert sock is not None
        started = time.monotonic()
        assert sock.recv(1) == b""  # the server closed it
        assert SHORT_KEEP_ALIVE_S - 0.2 < time.monotonic() - started < SHORT_KEEP_ALIVE_S + 5
    finally:
        connection.close()


def test_a_head_begun_after_an_idle_wait_is_still_timed(default_server: Server) -> None:
    # The head deadline runs from the next request's first byte, after an answer.
    connection = _connection(default_server)
    try:
        assert _embed(connection) == 200
        sock = connection.sock
        assert sock is not None
        time.sleep(HEAD_TIMEOUT_S + 0.5)
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # then nothing more
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert time.monotonic() - started < HEAD_TIMEOUT_S + 5
    finally:
        connection.close()


def test_the_keep_alive_timeout_is_refused_outside_its_range() -> None:
    said = " ".join(Limits(keep_alive_timeout_s=0).problems())
    assert "--keep-alive-timeout must be above 0" in said
    assert Limits(keep_alive_timeout_s=0.5).problems() == []
    assert Limits().keep_alive_timeout_s > 60  # above a balancer's idle 60 s
