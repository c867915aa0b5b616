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


@pytest.mark.parametrize(
    ("texts", "param", "said"),
    [
        (["a", ["b"]], "input[1]", "input[1] is an array of strings, not a string: "),
        (["a", []], "input[1]", "input[1] is an empty array, not a string: "),
        (["a", [1, "x"]], "input[1]", "input[1] is an array of number and string values, "),
        (["a", 3], "input[1]", "input[1] must be a string, not number"),
        (3, "input", "'input' must be a string or an array of strings, not number"),
        ([[1, 2], [3]], "input[0]", "input[0] is an array of integers: token ids are not "),
        ([101, 2023], "input", "'input' is an array of integers: token ids are not "),
    ],
    ids=["strings", "empty", "mixed", "a number", "input a number", "token ids", "one text's"],
)
def test_token_ids_are_named_only_for_integers_with_the_hint_for_their_sender(
    texts: Any, param: str, said: str
) -> None:
    # ["a", ["b"]] was told "input[1] is array: token ids are not accepted here".
    answer = with_client(lambda client: client.post("/v1/embeddings", json={"input": texts}))
    assert answer.status_code == 400, answer.text
    error = error_of(answer)
    assert (error["code"], error["param"]) == ("invalid_value", param)
    assert error["message"].startswith(said), error["message"]
    hint = "check_embedding_ctx_length=False" in error["message"]
    assert hint == ("token ids" in said), "the LangChain hint with token ids, and only then"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/embeddings"), ("POST", "/search"), ("GET", "/models"), ("GET", "/models/m")],
)
def test_a_path_without_its_v1_is_told_where_the_endpoint_is(method: str, path: str) -> None:
    # `OpenAI(base_url="http://host:port")` posted to /embeddings: "no such endpoint".
    answer = with_client(lambda client: client.request(method, path, json={"input": "a"}))
    assert answer.status_code == 404
    error = error_of(answer)
    assert error["code"] == "not_found"
    assert error["message"] == (
        f"no such endpoint: {method} {path}; the endpoint is /v1{path} "
        "(an OpenAI client's base_url ends in /v1: http://HOST:PORT/v1)"
    )


def test_the_openai_client_without_v1_in_its_base_url_is_told_to_add_it() -> None:
    openai = pytest.importorskip("openai")

    async def talk(client: Any) -> None:
        with pytest.raises(openai.NotFoundError, match="base_url ends in /v1"):
            await client.embeddings.create(model="m", input="a")

    with_openai(talk, base="")


def test_another_unknown_path_is_told_no_more() -> None:
    answer = with_client(lambda client: client.post("/v2/embeddings", json={"input": "a"}))
    assert error_of(answer)["message"] == "no such endpoint: POST /v2/embeddings"


CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_every_answer_names_its_request_by_its_trace_id() -> None:
    async def talk(client: httpx.AsyncClient) -> list[httpx.Response]:
        parent = {"traceparent": f"00-{CALLER_TRACE}-5b8aa5a2d2c872e8-01"}
        return [
            await client.post("/v1/embeddings", json={"input": []}, headers=parent),
            await client.post("/v1/embeddings", json={"input": []}),
            await client.get("/healthz"),
            await client.get("/nowhere"),
        ]

    traced, untraced, health, unknown = with_client(talk)
    assert traced.headers["x-request-id"] == CALLER_TRACE  # the caller's trace, as its span's
    ids = [answer.headers["x-request-id"] for answer in (untraced, health, unknown)]
    assert all(len(id_) == 32 and int(id_, 16) for id_ in ids), ids
    assert len(set(ids)) == 3, "each request its own id"


@pytest.mark.parametrize("own", ["mine-123", "0f1e2d3c-aaaa-bbbb-cccc-123456789abc"])
def test_a_callers_own_request_id_comes_back(own: str) -> None:
    # It was replaced by the trace id: a proxy that set its own could not find the request.
    answer = with_client(
        lambda client: client.post(
            "/v1/embeddings", json={"input": []}, headers={"x-request-id": own}
        )
    )
    assert answer.headers["x-request-id"] == own


@pytest.mark.parametrize("own", ["two words", "x" * 129, "tab\there", ""])
def test_a_request_id_that_is_not_a_plain_token_is_not_believed(own: str) -> None:
    answer = with_client(
        lambda client: client.post(
            "/v1/embeddings", json={"input": []}, headers={"x-request-id": own}
        )
    )
    sent = answer.headers["x-request-id"]
    assert len(sent) == 32
    assert int(sent, 16)


def test_the_openai_client_reads_the_request_id_of_a_refusal() -> None:
    openai = pytest.importorskip("openai")

    async def talk(client: Any) -> None:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.embeddings.create(
                model="m",
                input=[],
                extra_headers={"traceparent": f"00-{CALLER_TRACE}-5b8aa5a2d2c872e8-01"},
            )
        assert refused.value.request_id == CALLER_TRACE

    with_openai(talk)
