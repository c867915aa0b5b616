"""Refusals that say what the client can change.

An integer of 5,000 digits was answered with Python's advice to call
``sys.set_int_max_str_digits()`` (only the server can); a gzip body with "not valid JSON
('utf-8' codec can't decode byte 0x8b ...)"; ``"input": null`` with "input must be a
string", though an array of strings is as valid.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.adapters.in_process import with_client
from tests.adapters.serving import error_of


def post(content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return with_client(
        lambda client: client.post("/v1/embeddings", content=content, headers=headers)
    )


def test_an_integer_of_too_many_digits_is_refused_in_the_clients_terms() -> None:
    answer = post(b'{"input": "a", "x": -' + b"9" * 5000 + b"}")
    assert answer.status_code == 400
    error = error_of(answer)
    assert error["code"] == "invalid_json"
    assert error["message"] == (
        "the request body holds an integer of 5,000 digits: "
        "integers of more than 4,300 digits are refused"
    )


@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate", "identity, gzip", " GZIP "])
def test_a_compressed_body_is_a_415_that_says_so(encoding: str) -> None:
    import gzip

    answer = post(gzip.compress(b'{"input": "a"}'), {"content-encoding": encoding})
    assert answer.status_code == 415
    error = error_of(answer)
    assert error["code"] == "unsupported_content_encoding"
    assert error["message"].startswith("compressed request bodies are not supported")
    assert "send the body uncompressed" in error["message"]


def test_an_identity_encoding_is_no_compression() -> None:
    answer = post(b'{"input": ""}', {"content-encoding": "identity"})
    assert error_of(answer)["code"] == "empty", "read and checked, not refused as compressed"


@pytest.mark.parametrize(("value", "shown"), [(b"null", "null"), (b"true", "boolean")])
def test_an_input_of_the_wrong_type_names_both_valid_forms(value: bytes, shown: str) -> None:
    error: dict[str, Any] = error_of(post(b'{"input": ' + value + b"}"))
    assert error["param"] == "input"
    assert error["message"] == f"'input' must be a string or an array of strings, not {shown}"


def test_a_text_of_the_wrong_type_in_the_array_is_told_to_be_a_string() -> None:
    error = error_of(post(b'{"input": ["a", null]}'))
    assert error["message"] == "input[1] must be a string, not null"
