"""A large request body is parsed and checked off the event loop, so it never stalls
``/healthz`` (the liveness probe) or any other client.

Checked on the loop, a crafted 16 MiB body (texts of combining marks, each tested for
being blank; five million empty arrays in an ignored field) froze every answer for
seconds, though it was refused. These tests are deterministic: the check is made to
wait until ``/healthz`` has been answered, which can only happen if it runs elsewhere.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from typing import Any

import httpx
import pytest

from seamline.adapters.serve import app as app_module
from seamline.adapters.serve.errors import ApiError
from seamline.adapters.serve.limits import Limits
from tests.adapters.in_process import with_client

BIG = json.dumps({"input": ["word " * 6000] * 40}).encode()  # about 1.2 MB
WAIT_S = 5.0


def test_healthz_is_answered_while_a_large_body_is_being_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, release = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def slow_check(data: Any, limits: Limits, dimension: int) -> Any:
        started.set()
        seen["released"] = release.wait(WAIT_S)  # False: nothing answered /healthz meanwhile
        seen["collecting"] = gc.isenabled()
        raise ApiError(422, "refused after the check", code="checked")

    monkeypatch.setattr(app_module, "embeddings_request", slow_check)

    async def talk(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        post = asyncio.ensure_future(client.post("/v1/embeddings", content=BIG))
        while not started.is_set():
            await asyncio.sleep(0.01)
        health = await client.get("/healthz")
        release.set()
        return health, await post

    health, refused = with_client(talk)
    assert health.status_code == 200
    assert seen["released"], "the body was checked on the event loop: /healthz waited for it"
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "checked"
    assert seen["collecting"] is False, "the garbage collector runs while a big body is checked"
    assert gc.isenabled()


def test_large_bodies_are_checked_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two parses in two threads would take the GIL in turn ahead of the event loop."""
    lock = threading.Lock()
    at_once: list[int] = []
    busy = [0]

    def counting_check(data: Any, limits: Limits, dimension: int) -> Any:
        with lock:
            busy[0] += 1
            at_once.append(busy[0])
        threading.Event().wait(0.05)
        with lock:
            busy[0] -= 1
        raise ApiError(422, "refused after the check", code="checked")

    monkeypatch.setattr(app_module, "embeddings_request", counting_check)

    async def talk(client: httpx.AsyncClient) -> list[int]:
        posts = (client.post("/v1/embeddings", content=BIG) for _ in range(4))
        return [answer.status_code for answer in await asyncio.gather(*posts)]

    assert with_client(talk) == [422] * 4
    assert at_once == [1, 1, 1, 1]


def test_a_small_body_is_still_answered_in_full() -> None:
    """The inline path (nearly every request) gives the same refusals as before."""

    refused = with_client(
        lambda client: client.post("/v1/embeddings", json={"input": "\u0301" * 100})
    )
    assert refused.status_code == 400
    assert "only invisible characters" in refused.json()["error"]["message"]
