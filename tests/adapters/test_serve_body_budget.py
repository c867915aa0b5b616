"""``--max-body-bytes-held``: the bytes of bodies read and not yet parsed, across requests.

Each connection could hold ``--max-request-bytes`` of a body waiting to be parsed: 40
connections of 16 MiB bodies held 1.1 GiB more, and nothing but ``--max-connections``
(1,024: 16 GiB) bounded them, though the docs said the server's memory was bounded.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from seamline.adapters.serve.app import build_app
from seamline.adapters.serve.limits import Limits
from tests.adapters.in_process import served
from tests.adapters.serving import error_of

LIMITS = Limits(max_request_bytes=1000, max_body_bytes_held=1500)


def post(already_held: int, body: bytes, chunked: bool = False) -> tuple[httpx.Response, int]:
    """A search posted while ``already_held`` bytes of other bodies are held; the answer
    and the bytes held once it is answered."""
    state = served(LIMITS)
    others = state.bodies.hold()
    others.take(already_held)

    async def scenario() -> httpx.Response:
        transport = httpx.ASGITransport(app=build_app(state))
        async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
            if chunked:

                async def parts() -> object:
                    for at in range(0, len(body), 100):
                        yield body[at : at + 100]

                return await client.post("/v1/search", content=parts())  # type: ignore[arg-type]
            return await client.post("/v1/search", content=body)

    answer = asyncio.run(scenario())
    return answer, state.bodies.held - already_held


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_past_the_bytes_held_is_a_429_naming_the_option(chunked: bool) -> None:
    answer, left = post(1000, b'{"query": "' + b"a" * 600 + b'"}', chunked)
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "1"
    error = error_of(answer)
    assert error["code"] == "queue_full"
    assert "--max-body-bytes-held" in error["message"]
    assert left == 0, "what it held is given back"


def test_a_body_within_the_bytes_held_is_read_and_given_back() -> None:
    answer, left = post(1000, b'{"query": 1}')  # refused for its field, once parsed
    assert (answer.status_code, error_of(answer)["param"]) == (400, "query")
    assert left == 0


def test_the_bound_must_hold_one_body() -> None:
    wrong = Limits(max_request_bytes=1000, max_body_bytes_held=999).problems()
    assert any("--max-body-bytes-held must be at least --max-request-bytes" in w for w in wrong)
