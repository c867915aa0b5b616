"""Request bodies and routes of other embedding servers (text-embeddings-inference, Jina,
Cohere, NVIDIA NIM, sentence-transformers' keywords), as a team moving to seamline
sends them: a field that changes the vectors there is refused, saying where seamline
does that job, never ignored with a 200 of other vectors than the client asked for."""

from __future__ import annotations

from typing import Any

import pytest

from seamline.adapters.serve.bodies import embeddings_request
from seamline.adapters.serve.errors import ApiError
from seamline.adapters.serve.limits import Limits
from tests.adapters.in_process import with_client
from tests.adapters.serving import error_of


def refused(body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refusal:
        embeddings_request(body, Limits(), 32)
    return refusal.value


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("normalize", False, "model.with.normalize"),
        ("normalize", True, "model.with.normalize"),
        ("normalized", True, "model.with.normalize"),
        ("truncate", False, "--long-text"),
        ("truncation_direction", "Left", "--long-text"),
        ("prompt_name", "query", "model.with.prefix.query"),
        ("prompt", "query: ", "model.with.prefix.document"),
        ("instruction", "Represent this", "model.with.prefix.query"),
        ("task", "retrieval.query", '"input_type": "query"'),
        ("truncation", False, "--long-text"),
        ("truncate", "NONE", "--long-text"),
        ("truncate_prompt_tokens", 4, "--long-text"),
        ("late_chunking", True, "each input is embedded on its own"),
        ("output_dimension", 16, "the model's dimension"),
        ("dimensionality", 64, "the model's dimension"),
        ("output_dtype", "int8", "quantize them in the client"),
        ("embedding_type", "binary", "quantize them in the client"),
        ("embedding_types", ["float", "int8"], "quantize them in the client"),
    ],
)
def test_a_field_that_changes_the_vectors_elsewhere_is_refused(
    field: str, value: object, named: str
) -> None:
    # TEI's normalize (true by default there), truncate...: answered 200, the field ignored.
    error = refused({"input": ["a text"], field: value})
    assert (error.status, error.code, error.param) == (400, "unsupported_field", field)
    assert error.message.startswith(f"'{field}' (")
    assert named in error.message, error.message
    assert error.message.endswith(f"Leave '{field}' out")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("truncate", True),
        ("truncate", "END"),
        ("truncation", True),  # Voyage's client sends it with every request
        ("truncation_direction", "Right"),
        ("late_chunking", False),
        ("output_dimension", 32),
        ("dimensionality", 32),
        ("output_dtype", "float"),
        ("embedding_type", "float"),
        ("embedding_types", ["float"]),
    ],
)
def test_a_value_asking_for_what_the_server_does_anyway_passes(field: str, value: object) -> None:
    # They were refused for values that change nothing: a Voyage client, which sends
    # truncation: true each time, was refused on every request.
    asked = embeddings_request({"input": ["a text"], field: value}, Limits(), 32)
    assert asked.texts == ["a text"]


def test_truncation_is_only_the_same_when_the_server_truncates() -> None:
    with pytest.raises(ApiError) as refusal:
        embeddings_request({"input": "a", "truncate": True}, Limits(long_text="mean"), 32)
    assert refusal.value.param == "truncate"


def test_teis_inputs_alone_is_told_of_input() -> None:
    # It was "'input' is required: a string or an array of strings", no word of 'inputs'.
    error = refused({"inputs": ["a text"]})
    assert (error.code, error.param) == ("unsupported_field", "inputs")
    assert error.message.endswith("Rename it 'input'"), error.message
    assert "text-embeddings-inference's name for the texts" in error.message
    assert "this endpoint takes 'input'" in error.message
    assert refused({"input": ["a"], "inputs": ["b"]}).param == "inputs"


def test_null_is_as_left_out_and_openais_own_fields_and_others_pass() -> None:
    asked = embeddings_request(
        {
            "input": ["a text"],
            "model": "text-embedding-3-small",
            "user": "u-1",
            "encoding_format": "float",
            "dimensions": 32,
            "normalize": None,
            "prompt_name": None,
            "my_client_trace": "x",  # a client's own field: still ignored
        },
        Limits(),
        32,
    )
    assert asked.texts == ["a text"]


@pytest.mark.parametrize(
    ("value", "ours"),
    [("passage", "document"), ("search_document", "document"), ("search_query", "query")],
)
def test_another_apis_input_type_is_told_its_equivalent(value: str, ours: str) -> None:
    error = refused({"input": "a", "input_type": value})
    assert error.param == "input_type"
    assert error.message.endswith(f'"{value}" is "{ours}" here)'), error.message


def test_the_refusal_is_openais_error_shape_over_http() -> None:
    answer = with_client(
        lambda client: client.post("/v1/embeddings", json={"input": "a", "normalize": False})
    )
    assert answer.status_code == 400
    error = error_of(answer)
    assert error["type"] == "invalid_request_error"
    assert (error["param"], error["code"]) == ("normalize", "unsupported_field")


@pytest.mark.parametrize(
    ("method", "path", "told"),
    [
        ("POST", "/embed", "here POST /v1/embeddings, the texts in 'input' (not 'inputs')"),
        ("POST", "/embed_all", "one vector per text"),
        ("GET", "/info", "GET /v1/models names the model served"),
        ("POST", "/tokenize", "usage.prompt_tokens"),
        # huggingface_hub's InferenceClient(base_url=...).feature_extraction posts to the
        # root (or to /v1 with a base_url ending in it): it was a bare 404.
        ("POST", "/", "use an OpenAI client"),
        ("POST", "/v1", "use an OpenAI client"),
        ("GET", "/health", "here GET /healthz"),
    ],
)
def test_text_embeddings_inference_routes_are_told_where_their_job_is(
    method: str, path: str, told: str
) -> None:
    # They were a bare 404 "no such endpoint: POST /embed".
    answer = with_client(lambda client: client.request(method, path, json={"inputs": "a"}))
    assert answer.status_code == 404
    error = error_of(answer)
    assert error["code"] == "not_found"
    assert error["message"].startswith(
        f"no such endpoint: {method} {path}; text-embeddings-inference's "
    )
    assert told in error["message"]
