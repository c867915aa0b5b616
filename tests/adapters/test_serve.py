"""``seamline serve`` from a client's side: a real server process, real HTTP clients.

One server (the ``tiny`` model, spans to a JSON-lines file) serves every test here,
started from a folder of its own with a relative pipeline path, after a run of the
same pipeline wrote the output ``/v1/search`` searches. Every answer is checked
against ``Embedder.encode`` of the same texts in this process, within 1e-6.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from seamline.core.embedder import Embedder
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.adapters.serving import TEXTS, Server, error_of, pipeline_text, serving

TRACE = "trace.jsonl"
LIMITS = ["--max-inputs", "16", "--max-input-chars", "500", "--max-request-bytes", "20000"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, tiny_registry: Registry) -> Path:
    """The server's folder: its pipeline, and the output a run of it wrote (relative paths)."""
    folder = tmp_path_factory.mktemp("serve")
    telemetry = f"telemetry: {{traces: [jsonl], traces_file: {TRACE}}}\n"
    (folder / "pipeline.yaml").write_text(pipeline_text(extra=telemetry), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        summary = Pipeline.from_yaml("pipeline.yaml", registry=tiny_registry).run()
    assert summary.output.documents == len(TEXTS)
    return folder


@pytest.fixture(scope="module")
def expected(folder: Path, tiny_registry: Registry) -> dict[str, np.ndarray]:
    """Each text's vector as ``Embedder.encode`` gives it, in this process."""
    with Embedder.from_pipeline(folder / "pipeline.yaml", registry=tiny_registry) as embedder:
        vectors = embedder.encode([*TEXTS, "hello there"])
    return dict(zip([*TEXTS, "hello there"], vectors, strict=True))


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[Server]:
    with serving(folder, Path("pipeline.yaml"), [*LIMITS, "--max-wait-ms", "100"]) as running:
        running.wait_ready()
        yield running


def embed(client: httpx.Client, texts: Any, **fields: Any) -> httpx.Response:
    return client.post("/v1/embeddings", json={"input": texts, "model": "any", **fields})


def test_health_says_ready_and_the_model(server: Server) -> None:
    with server.client() as client:
        health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json() == {"status": "ready", "model": "served", "dimension": 32}


def test_an_answer_is_openais_shape_with_encodes_vectors(
    server: Server, expected: dict[str, np.ndarray]
) -> None:
    with server.client() as client:
        answer = embed(client, TEXTS[:3])
        single = embed(client, TEXTS[4])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"object", "data", "model", "usage"}
    assert body["object"] == "list"
    assert body["model"] == "served"
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    assert {d["object"] for d in body["data"]} == {"embedding"}
    for text, item in zip(TEXTS[:3], body["data"], strict=True):
        np.testing.assert_allclose(item["embedding"], expected[text], atol=1e-6, rtol=0)
    words = sum(len(t.split()) for t in TEXTS[:3])  # the tiny model: a token per word
    assert body["usage"] == {"prompt_tokens": words, "total_tokens": words}
    (item,) = single.json()["data"]
    np.testing.assert_allclose(item["embedding"], expected[TEXTS[4]], atol=1e-6, rtol=0)


def test_base64_is_little_endian_float32(server: Server, expected: dict[str, np.ndarray]) -> None:
    with server.client() as client:
        answer = embed(client, TEXTS[:2], encoding_format="base64")
    for text, item in zip(TEXTS[:2], answer.json()["data"], strict=True):
        vector = np.frombuffer(base64.b64decode(item["embedding"]), dtype="<f4")
        np.testing.assert_allclose(vector, expected[text], atol=1e-6, rtol=0)


def test_the_openai_client_works_unchanged(server: Server, expected: dict[str, np.ndarray]) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    answer = client.embeddings.create(model="whatever", input=TEXTS[5:])  # base64 by default
    assert answer.model == "served"
    for text, item in zip(TEXTS[5:], answer.data, strict=True):
        np.testing.assert_allclose(item.embedding, expected[text], atol=1e-6, rtol=0)
    floats = client.embeddings.create(model="x", input="hello there", encoding_format="float")
    np.testing.assert_allclose(floats.data[0].embedding, expected["hello there"], atol=1e-6)
    assert floats.usage.prompt_tokens == 2
    # Was a 422 (UnprocessableEntityError), never caught by `except openai.BadRequestError`
    # as OpenAI's own refusals of input are; 413s were bare APIStatusErrors.
    with pytest.raises(openai.BadRequestError, match="empty array"):
        client.embeddings.create(model="x", input=[])
    with pytest.raises(openai.BadRequestError, match="--max-inputs") as refused:
        client.embeddings.create(model="x", input=["a"] * 17)
    assert (refused.value.code, refused.value.param) == ("too_many_inputs", "input")
    with pytest.raises(openai.BadRequestError, match="--max-input-chars"):
        client.embeddings.create(model="x", input="a" * 501)


def test_concurrent_clients_each_get_exactly_their_own_rows(
    server: Server, expected: dict[str, np.ndarray]
) -> None:
    rng = np.random.default_rng(7)
    asks = [[TEXTS[i] for i in rng.choice(len(TEXTS), size=1 + k % 4)] for k in range(24)]
    answers: dict[int, httpx.Response] = {}
    start = threading.Barrier(8)

    def client_thread(first: int) -> None:
        with server.client() as client:
            start.wait()
            for k in range(first, len(asks), 8):
                answers[k] = embed(client, asks[k])

    threads = [threading.Thread(target=client_thread, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(answers) == len(asks)
    for k, ask in enumerate(asks):
        assert answers[k].status_code == 200, answers[k].text
        got = [item["embedding"] for item in answers[k].json()["data"]]
        np.testing.assert_allclose(got, [expected[t] for t in ask], atol=1e-6, rtol=0)


def read_spans(
    path: Path,
    names: set[str],
    timeout: float = 10.0,
    complete: Callable[[list[dict[str, Any]]], bool] = lambda spans: True,
) -> list[dict[str, Any]]:
    """The spans exported so far, waiting (bounded) for at least one of each name and for
    ``complete`` to hold: a request's HTTP span ends after its response is sent, so a
    client can read the trace before its own request's parent span is written."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        spans = [json.loads(line) for line in lines if line.strip()]
        done = names <= {s["name"] for s in spans} and complete(spans)
        if done or time.monotonic() > deadline:
            return spans
        time.sleep(0.1)


def parents_and_links_written(spans: list[dict[str, Any]]) -> bool:
    """Whether every request span's parent and every span it links to are in ``spans``."""
    ids = {s["span_id"] for s in spans}
    requests = [s for s in spans if s["name"] == "seamline.embed.request" and s["parent_span_id"]]
    return all(
        r["parent_span_id"] in ids and all(link["span_id"] in ids for link in r["links"])
        for r in requests
    )


def test_each_request_span_links_to_the_batch_that_served_it(server: Server, folder: Path) -> None:
    start = threading.Barrier(4)
    marks = [f"span check {k}" for k in range(4)]

    def client_thread(text: str) -> None:
        with server.client() as client:
            start.wait()
            assert embed(client, [text]).status_code == 200

    threads = [threading.Thread(target=client_thread, args=(m,)) for m in marks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    wanted = {"POST /v1/embeddings", "seamline.embed.request", "seamline.embed.batch"}
    spans = read_spans(folder / TRACE, wanted, complete=parents_and_links_written)
    by_id = {s["span_id"]: s for s in spans}
    # Every request span but the warm-up's (the server's own, with no parent).
    requests = [s for s in spans if s["name"] == "seamline.embed.request" and s["parent_span_id"]]
    assert len(requests) >= 4
    for request in requests:
        assert by_id[request["parent_span_id"]]["name"] == "POST /v1/embeddings"
        assert request["links"], "served by at least one batch (more if its texts filled two)"
        for link in request["links"]:
            batch = by_id[link["span_id"]]
            assert batch["name"] == "seamline.embed.batch"
            assert request["span_id"] in {back["span_id"] for back in batch["links"]}
            # A shape's first batch also plans and compiles it, under the batch's span.
            applied = [
                s
                for s in spans
                if s["parent_span_id"] == batch["span_id"] and s["name"] == "seamline.model.apply"
            ]
            assert [a["attributes"]["seamline.attention.name"] for a in applied] == ["native"]
    shared = max(len(s["links"]) for s in spans if s["name"] == "seamline.embed.batch")
    assert shared >= 2, "requests arriving together share a batch (--max-wait-ms 100)"


def test_a_request_that_names_its_trace_is_a_child_of_the_callers_span(
    server: Server, folder: Path
) -> None:
    # The request's span was a new root: a client's trace stopped at the server's door.
    caller_trace, caller_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    traceparent = f"00-{caller_trace}-{caller_span}-01"
    with server.client() as client:
        body = {"input": ["traced from the caller"]}
        response = client.post("/v1/embeddings", json=body, headers={"traceparent": traceparent})
        assert response.status_code == 200, response.text
        assert embed(client, ["not traced"]).status_code == 200

    def http(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [s for s in spans if s["name"] == "POST /v1/embeddings"]

    def both_written(spans: list[dict[str, Any]]) -> bool:
        # The two spans are exported in batches: wait for both, or the test passed only when
        # an earlier test of the module had left a root span in the file.
        mine = http(spans)
        return any(s["trace_id"] == caller_trace for s in mine) and any(
            s["trace_id"] != caller_trace and s["parent_span_id"] is None for s in mine
        )

    spans = http(read_spans(folder / TRACE, {"POST /v1/embeddings"}, complete=both_written))
    children = [s for s in spans if s["trace_id"] == caller_trace]
    assert [s["parent_span_id"] for s in children] == [caller_span]
    assert any(s["parent_span_id"] is None for s in spans), "without one: a root, as before"


def metrics(client: httpx.Client) -> dict[str, float]:
    """Every sample of /metrics, by name and labels (parsed as Prometheus would)."""
    response = client.get("/metrics")
    assert response.status_code == 200
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def test_metrics_are_prometheus_and_their_counts_move(server: Server) -> None:
    with server.client() as client:
        before = metrics(client)
        assert embed(client, TEXTS[:3]).status_code == 200
        assert embed(client, []).status_code == 400
        after = metrics(client)
    ok = "seamline_serve_requests_total{endpoint=embeddings,status=200}"
    refused = "seamline_serve_requests_total{endpoint=embeddings,status=400}"
    assert after[ok] == before.get(ok, 0) + 1
    assert after[refused] == before.get(refused, 0) + 1
    assert (
        after["seamline_serve_texts_total{}"] == before.get("seamline_serve_texts_total{}", 0) + 3
    )
    words = sum(len(t.split()) for t in TEXTS[:3])
    assert (
        after["seamline_serve_tokens_total{}"] - before.get("seamline_serve_tokens_total{}", 0)
        == words
    )
    batches = "seamline_serve_batch_examples_count{}"
    assert after[batches] > before.get(batches, 0)
    latency = "seamline_serve_request_seconds_count{endpoint=embeddings}"
    assert after[latency] == before.get(latency, 0) + 2
    assert after["seamline_serve_queue_texts{}"] == 0
    assert after["seamline_serve_ready{}"] == 1


BAD_BODIES: list[tuple[str, bytes, int, str, str | None]] = [
    ("not JSON", b"{input: nope", 400, "invalid_json", None),
    ("NaN", b'{"input": ["a"], "dimensions": NaN}', 400, "invalid_json", None),
    ("nested too deep", b"[" * 50_000 + b"]" * 50_000, 413, "request_too_large", None),
    ("nested deep", b"[" * 9_000 + b"]" * 9_000, 400, "invalid_json", None),
    ("an array body", b'["a"]', 400, "invalid_value", None),
    ("no input", b'{"model": "x"}', 400, "invalid_value", "input"),
    ("input a number", b'{"input": 3}', 400, "invalid_value", "input"),
    ("input an object", b'{"input": {"a": 1}}', 400, "invalid_value", "input"),
    ("token ids", b'{"input": [[1, 2]]}', 400, "invalid_value", "input[0]"),
    ("a null text", b'{"input": ["a", null]}', 400, "invalid_value", "input[1]"),
    ("empty list", b'{"input": []}', 400, "empty", "input"),
    ("empty text", b'{"input": ["a", ""]}', 400, "empty", "input[1]"),
    ("whitespace text", b'{"input": ["a", " \\t\\n "]}', 400, "empty", "input[1]"),
    ("whitespace string", b'{"input": "   "}', 400, "empty", "input"),
    ("invisible text", b'{"input": ["a", "\\ufeff\\u200d"]}', 400, "empty", "input[1]"),
    ("too many", json.dumps({"input": ["a"] * 17}).encode(), 400, "too_many_inputs", "input"),
    ("too long", json.dumps({"input": ["a" * 501]}).encode(), 400, "input_too_long", "input[0]"),
    ("too big", json.dumps({"input": "a" * 30_000}).encode(), 413, "request_too_large", None),
    ("bad format", b'{"input": "a", "encoding_format": "int8"}', 400, "invalid_value", None),
    ("dimensions", b'{"input": "a", "dimensions": 8}', 400, "invalid_value", "dimensions"),
    ("model a number", b'{"input": "a", "model": 3}', 400, "invalid_value", "model"),
    (
        "huge number",
        b'{"input": "a", "dimensions": 1' + b"0" * 5000 + b"}",
        400,
        "invalid_json",
        None,
    ),
    ("a lone surrogate", b'{"input": ["ok", "\\ud800"]}', 400, "unembeddable", "input[1]"),
    # one string is `input`, as its other errors name it (it said input[0])
    ("one lone surrogate", b'{"input": "a \\ud800 b"}', 400, "unembeddable", "input"),
]


@pytest.mark.parametrize(
    ("body", "status", "code", "param"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_BODIES],
)
def test_bad_requests_are_4xx_in_openais_error_shape(
    server: Server, body: bytes, status: int, code: str, param: str | None
) -> None:
    with server.client() as client:
        response = client.post(
            "/v1/embeddings", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == status, response.text
    error = error_of(response)
    assert error["code"] == code
    if param is not None:
        assert error["param"] == param
    if code in ("too_many_inputs", "input_too_long", "request_too_large"):
        assert "--max-" in error["message"], "a limit names the option that sets it"
    if code == "unembeddable":  # said "texts[1] cannot be embedded", the embedder's name
        assert error["message"].startswith(f"{param} cannot be embedded: "), error["message"]


def test_a_chunked_body_is_counted_as_it_arrives(server: Server) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"input": "'
        for _ in range(100):  # 100 x 1 KB, past --max-request-bytes (20,000), no length sent
            yield b"a" * 1024
        yield b'"}'

    with server.client() as client:
        response = client.post("/v1/embeddings", content=chunks())
    assert response.status_code == 413
    assert error_of(response)["code"] == "request_too_large"


def test_wrong_paths_and_methods_answer_in_the_same_shape(server: Server) -> None:
    with server.client() as client:
        missing = client.get("/v1/nothing")
        wrong = client.get("/v1/embeddings")
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "not_found"
    assert wrong.status_code == 405
    assert error_of(wrong)["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (b'{"query": "a\\ud800"}', "invalid_value", "the query is not valid Unicode: "),
        (b'{"query": ""}', "empty", "'query' is empty"),
        (b'{"query": " \\t "}', "empty", "'query' is only whitespace"),
        (b'{"query": "\\u200b\\u0301"}', "empty", "'query' is only invisible characters"),
    ],
    ids=["lone-surrogate", "empty", "whitespace", "invisible"],
)
def test_a_query_that_cannot_be_embedded_is_a_400_naming_it(
    server: Server, body: bytes, code: str, message: str
) -> None:
    # A lone surrogate reached the tokenizer ("TextInputSequence must be str"): a 500,
    # where /v1/embeddings refuses the same text (400, as every refused request).
    with server.client() as client:
        response = client.post(
            "/v1/search", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert (error["code"], error["param"]) == (code, "query")
    assert error["message"].startswith(message), error["message"]


def test_search_finds_a_document_by_its_own_text(server: Server, folder: Path) -> None:
    with server.client() as client:
        found = client.post("/v1/search", json={"query": TEXTS[2], "k": 3})
        bad_k = client.post("/v1/search", json={"query": "x", "k": 0})
        no_query = client.post("/v1/search", json={"k": 3})
        where = client.post("/v1/search", json={"query": "x", "where": "id = 'd1'"})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["object"] == "list"
    assert len(body["data"]) == 3
    top = body["data"][0]
    assert top["id"] == "d2"
    assert set(top) >= {"object", "index", "score", "id", "window", "span", "text", "metadata"}
    assert top["score"] == pytest.approx(1.0, abs=1e-5)
    assert error_of(bad_k)["param"] == "k"
    assert error_of(no_query)["param"] == "query"
    assert where.status_code == 400, "a jsonl output has no query engine for 'where'"
    said = error_of(where)["message"]
    assert "query engine" in said
    assert "--where" not in said, "a client sends a field, not a command-line option"
    assert str(folder) not in said, "where the index lies on the server stays there"
    assert "emb.jsonl is the output of a jsonl sink" in said


@pytest.mark.parametrize("declared", ["\u00b2", "9" * 5000, "-1", ""])
def test_a_content_length_that_is_no_count_is_left_to_the_body_limit(declared: str) -> None:
    """'²' passed str.isdigit() and int() refused it: a ValueError inside the request."""
    import asyncio

    from starlette.requests import Request

    from seamline.adapters.serve.bodies import read_body

    body = [b'{"input": "a"}']

    async def receive() -> dict[str, Any]:
        chunk = body.pop() if body else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(body)}

    headers = [(b"content-length", declared.encode())]
    request = Request({"type": "http", "headers": headers, "method": "POST"}, receive)
    assert asyncio.run(read_body(request, 1024)) == b'{"input": "a"}'


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_an_embeddings_body_never_holds_the_bare_words_nan_or_infinity(value: float) -> None:
    # The body said `"embedding":[NaN,...]`, which no JSON parser reads, with HTTP 200; a
    # ValueError is answered as a 500 whose reason is logged (the encoder refuses such
    # outputs first: this is the second line of defence).
    from seamline.adapters.serve.app import _embeddings_body

    vectors = np.array([[0.5, value]], np.float32)
    with pytest.raises(ValueError, match="not JSON compliant"):
        _embeddings_body(vectors, "float", "m", 1)
    assert json.loads(_embeddings_body(vectors[:, :1], "float", "m", 1))["data"]
