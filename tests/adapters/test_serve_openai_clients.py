"""What OpenAI's clients and the tools on them ask of ``seamline serve`` besides embeddings.

In process, without a model (:mod:`tests.adapters.in_process`): ``GET /v1/models`` and
``GET /v1/models/{id}`` (a 404 before, which tools that probe the model at startup
stopped on), and the ``openai`` client itself, through httpx's ASGI transport, raising
the errors it raises for OpenAI's own answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest

from seamline.adapters.serve.app import build_app
from tests.adapters.in_process import served, with_client
from tests.adapters.serving import error_of

Result = TypeVar("Result")


def with_openai(talk: Callable[[Any], Awaitable[Result]], base: str = "/v1") -> Result:
    """``talk(client)``: an ``openai.AsyncOpenAI`` sending to a fresh application."""
    openai = pytest.importorskip("openai")

    async def scenario() -> Result:
        transport = httpx.ASGITransport(app=build_app(served()))
        async with httpx.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(
                base_url=f"http://test{base}", api_key="unused", max_retries=0, http_client=http
            )
            return await talk(client)

    return asyncio.run(scenario())


def test_the_model_list_is_openais_shape_with_the_one_model_served() -> None:
    answer = with_client(lambda client: client.get("/v1/models"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["object"] == "list"
    (card,) = body["data"]
    assert set(card) == {"id", "object", "created", "owned_by"}
    assert (card["id"], card["object"], card["owned_by"]) == ("m", "model", "seamline")
    assert isinstance(card["created"], int)
    assert card["created"] > 1_600_000_000


def test_the_served_model_is_retrieved_and_another_is_a_404_naming_it() -> None:
    async def talk(client: httpx.AsyncClient) -> tuple[httpx.Response, httpx.Response]:
        return await client.get("/v1/models/m"), await client.get("/v1/models/gpt-4o")

    found, other = with_client(talk)
    assert found.status_code == 200, found.text
    assert found.json()["id"] == "m"
    assert other.status_code == 404
    error = error_of(other)
    assert (error["code"], error["param"]) == ("model_not_found", "model")
    assert "'gpt-4o'" in error["message"]
    assert "'m'" in error["message"]


def test_the_openai_client_lists_and_retrieves_the_model() -> None:
    openai = pytest.importorskip("openai")

    async def talk(client: Any) -> tuple[list[str], str]:
        page = await client.models.list()
        model = await client.models.retrieve("m")
        with pytest.raises(openai.NotFoundError, match="no such model"):
            await client.models.retrieve("text-embedding-3-small")
        return [card.id for card in page.data], str(model.id)

    listed, retrieved = with_openai(talk)
    assert listed == ["m"]
    assert retrieved == "m"


def test_the_openai_client_raises_bad_request_for_a_refused_input() -> None:
    openai = pytest.importorskip("openai")

    async def talk(client: Any) -> None:
        for texts in ([], ["a", ""], [[1, 2]], ["a"] * 5000):
            with pytest.raises(openai.BadRequestError):
                await client.embeddings.create(model="m", input=texts)

    with_openai(talk)
