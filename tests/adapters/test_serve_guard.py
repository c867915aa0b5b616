"""Which ``Host`` and ``Origin`` the server answers (:mod:`seamline.adapters.serve.guard`).

Any were answered: a web page whose name was rebound to 127.0.0.1 (DNS rebinding) read
``/v1/search``'s hits, every document's text, and any page could post to the server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from seamline.adapters.serve.app import build_app
from seamline.adapters.serve.guard import Guard, host_name, option_problems
from tests.adapters.in_process import served
from tests.adapters.serving import error_of, pipeline_text, serving


def get(guard: Guard, path: str, **headers: str) -> httpx.Response:
    async def scenario() -> httpx.Response:
        transport = httpx.ASGITransport(app=build_app(served(), guard=guard))
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
            return await client.get(path, headers=headers)

    return asyncio.run(scenario())


LOOPBACK = Guard.for_address("127.0.0.1")


@pytest.mark.parametrize(
    "host",
    ["localhost", "LOCALHOST:8000", "app.localhost:1", "127.0.0.1:8000", "127.9.9.9", "[::1]:80"],
)
def test_loopback_names_are_answered_on_loopback(host: str) -> None:
    assert get(LOOPBACK, "/healthz", host=host).status_code == 200


@pytest.mark.parametrize("path", ["/healthz", "/metrics", "/v1/models"])
@pytest.mark.parametrize("host", ["rebind.evil.example", "evil:8000", "10.0.0.5:8000", "0.0.0.0"])
def test_another_host_is_refused_on_loopback_naming_the_option(path: str, host: str) -> None:
    response = get(LOOPBACK, path, host=host)
    assert response.status_code == 403
    error = error_of(response)
    assert error["code"] == "host_not_allowed"
    assert "--allowed-host" in error["message"]


def test_allowed_hosts_are_added_to_the_loopback_names() -> None:
    guard = Guard.for_address("127.0.0.1", ["Embed.Example.com", "*.corp.example"])
    for host in ("embed.example.com:8000", "a.corp.example", "localhost"):
        assert get(guard, "/v1/models", host=host).status_code == 200, host
    assert get(guard, "/v1/models", host="corp.example.evil").status_code == 403


def test_off_loopback_the_host_is_checked_only_when_allowed_hosts_are_given() -> None:
    anywhere = Guard.for_address("0.0.0.0")
    assert get(anywhere, "/v1/models", host="10.1.2.3:8000").status_code == 200
    named = Guard.for_address("0.0.0.0", ["embed.example.com"])
    assert get(named, "/v1/models", host="10.1.2.3:8000").status_code == 403
    assert get(named, "/v1/models", host="embed.example.com").status_code == 200
    # a kubelet's probes and Prometheus name the pod by its address
    for path in ("/healthz", "/metrics"):
        assert get(named, path, host="10.1.2.3:8000").status_code == 200, path


@pytest.mark.parametrize("guard", [LOOPBACK, Guard.for_address("0.0.0.0")])
def test_a_request_with_an_origin_is_refused_unless_allowed(guard: Guard) -> None:
    response = get(guard, "/v1/models", host="localhost", origin="http://evil.example")
    assert response.status_code == 403
    error = error_of(response)
    assert error["code"] == "origin_not_allowed"
    assert "--allowed-origin" in error["message"]
    allowed = Guard.for_address("127.0.0.1", origins=["https://app.example.com/"])
    ok = get(allowed, "/v1/models", host="localhost", origin="https://APP.example.com")
    assert ok.status_code == 200
    assert get(allowed, "/v1/models", host="localhost", origin="null").status_code == 403


def test_off_loopback_with_allowed_hosts_loopback_names_stay_allowed() -> None:
    """A sidecar's or ``kubectl exec``'s ``curl localhost`` was refused once
    ``--allowed-host`` was given on 0.0.0.0, though the docs said it *adds* names."""
    named = Guard.for_address("0.0.0.0", ["embed.example.com"])
    for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
        assert get(named, "/v1/models", host=host).status_code == 200, host


def test_allowed_values_are_compared_as_browsers_and_clients_send_them() -> None:
    """``--allowed-host proxy.example:8080`` and ``--allowed-origin
    https://app.example.com:443`` never matched: a Host is compared without its port, and
    a browser drops an origin's default port."""
    guard = Guard.for_address(
        "127.0.0.1", ["proxy.example:8080"], ["https://app.example.com:443", "http://h:8080"]
    )
    for host in ("proxy.example", "proxy.example:8080", "PROXY.example:1"):
        assert get(guard, "/v1/models", host=host).status_code == 200, host
    for origin in ("https://app.example.com", "http://h:8080"):
        assert get(guard, "/v1/models", host="localhost", origin=origin).status_code == 200
    assert get(guard, "/v1/models", host="localhost", origin="http://h").status_code == 403


@pytest.mark.parametrize(
    ("hosts", "origins", "said"),
    [
        (["http://proxy.example"], [], "--allowed-host takes a host name"),
        ([""], [], "--allowed-host takes a host name"),
        ([], ["app.example.com"], "--allowed-origin takes an origin"),
        ([], ["https://app.example.com/ui"], "--allowed-origin takes an origin"),
    ],
)
def test_a_value_that_could_never_match_is_refused(
    hosts: list[str], origins: list[str], said: str
) -> None:
    assert said in " ".join(option_problems(hosts, origins))


def test_values_that_can_match_are_taken() -> None:
    hosts, origins = ["proxy.example:8080", "*.corp", "*"], ["https://a.b/", "http://l:3", "*"]
    assert option_problems(hosts, origins) == []


def test_host_names_are_read_without_their_port() -> None:
    assert host_name("[::1]:8000") == "::1"
    assert host_name("Example.COM.:80") == "example.com"
    assert host_name("::1") == "::1"


def test_the_server_refuses_a_rebound_page_and_takes_its_options(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    options = ["--allowed-host", "embed.test", "--allowed-origin", "https://app.test"]
    with serving(tmp_path, Path("p.yaml"), options) as server, server.client() as client:
        server.wait_ready()
        body = {"input": "x"}
        rebound = client.post("/v1/embeddings", json=body, headers={"host": "evil.test"})
        assert (rebound.status_code, error_of(rebound)["code"]) == (403, "host_not_allowed")
        page = client.post("/v1/embeddings", json=body, headers={"origin": "http://evil.test"})
        assert (page.status_code, error_of(page)["code"]) == (403, "origin_not_allowed")
        for headers in ({"host": "embed.test"}, {"origin": "https://app.test"}, {}):
            assert client.post("/v1/embeddings", json=body, headers=headers).status_code == 200
