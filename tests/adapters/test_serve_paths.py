"""A path the server does not serve is a 404 in OpenAI's error shape, a trailing slash
included: Starlette answered ``/healthz/`` with a 307 to ``/healthz`` on whatever host
the request's ``Host`` header named, so any client could make the server's answers point
at another host."""

from __future__ import annotations

import httpx
import pytest

from tests.adapters.in_process import with_client
from tests.adapters.serving import error_of


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/healthz/"),
        ("GET", "/metrics/"),
        ("POST", "/v1/search/"),
        ("POST", "/v1/embeddings/"),
    ],
)
def test_a_trailing_slash_is_an_unknown_path_not_a_redirect(method: str, path: str) -> None:
    async def talk(client: httpx.AsyncClient) -> httpx.Response:
        headers = {"Host": "attacker.example:666"}
        return await client.request(method, path, headers=headers, json={"input": "a"})

    answer = with_client(talk)
    assert answer.status_code == 404
    assert "location" not in answer.headers
    error = error_of(answer)
    assert error["code"] == "not_found"
    assert error["message"] == f"no such endpoint: {method} {path}"
    assert "attacker.example" not in answer.text


def test_the_paths_themselves_still_answer() -> None:
    health = with_client(lambda client: client.get("/healthz"))
    assert health.status_code == 200
    assert health.json()["status"] == "ready"
