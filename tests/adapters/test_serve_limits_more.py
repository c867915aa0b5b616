"""``seamline serve``'s queue bounds against what one request may hold, and ``dimensions``.

A ``--max-queue-chars`` below what one valid request can hold gave such a request a 429
"the queue is full (it holds 0 characters): retry after 1 s" from an empty queue, and
every retry the same: the setting is refused at start (exit 2, one line), and a request
more than the whole queue holds (limits built in code) is a 400 naming the option.
A ``dimensions`` that is no whole number was told to "give 384", what it gave.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from seamline.adapters.serve.bodies import embeddings_request
from seamline.adapters.serve.errors import ApiError
from seamline.adapters.serve.limits import Limits
from tests.adapters.serving import SEAMLINE, environment, pipeline_text

MIB = 1024 * 1024


def refusal(limits: Limits) -> str:
    """The one problem ``limits`` has about ``--max-queue-chars``."""
    (line,) = [p for p in limits.problems() if p.startswith("--max-queue-chars")]
    return line


def test_the_defaults_are_usable() -> None:
    assert Limits().problems() == []
    assert Limits().request_chars == Limits().max_queue_chars == 16 * MIB


def test_a_queue_of_fewer_characters_than_one_request_body_may_hold_is_refused() -> None:
    line = refusal(Limits(max_queue_chars=100))
    assert "--max-request-bytes" in line
    assert "raise --max-queue-chars to 16,777,216 or lower --max-request-bytes" in line
    raised = refusal(Limits(max_request_bytes=32 * MIB))  # the default queue, a bigger body
    assert "must be at least 33,554,432" in raised


def test_the_texts_and_their_length_bound_a_request_below_its_body() -> None:
    small = Limits(max_inputs=4, max_input_chars=10, max_queue_texts=4, max_queue_chars=39)
    line = refusal(small)
    assert "--max-inputs x --max-input-chars" in line
    assert "raise --max-queue-chars to 40 or lower --max-inputs or --max-input-chars" in line
    enough = Limits(max_inputs=4, max_input_chars=10, max_queue_texts=4, max_queue_chars=40)
    assert enough.problems() == []


def test_the_command_refuses_such_a_queue_at_start_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pipeline_text("refused"), encoding="utf-8")
    command = ["serve", "p.yaml", "--port", "0", "--no-compile-cache", "--max-queue-chars", "100"]
    refused = subprocess.run(  # accepted, it would serve: the timeout ends it (and the test)
        [str(SEAMLINE), *command],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: --max-queue-chars (100) must be at least 16,777,216"), line
    assert "--max-request-bytes" in line
    assert refused.stdout == "", "nothing announced: it never listened"


@pytest.mark.parametrize(
    ("limits", "option"),
    [
        (Limits(max_queue_chars=100), "--max-queue-chars"),
        (Limits(max_inputs=64, max_queue_texts=8), "--max-queue-texts"),
    ],
    ids=["characters", "texts"],
)
def test_a_request_more_than_the_whole_queue_holds_is_a_400_not_a_429(
    limits: Limits, option: str
) -> None:
    texts = ["word " * 40] if option == "--max-queue-chars" else ["a text"] * 9
    with pytest.raises(ApiError) as refused:
        embeddings_request({"input": texts}, limits, 32)
    assert refused.value.status == 400
    assert refused.value.code == "request_too_large"
    assert refused.value.param == "input"
    assert option in refused.value.message
    assert "retry" not in refused.value.message
    assert not refused.value.headers, "no Retry-After: a retry would never succeed"


def test_a_request_the_queue_can_hold_passes() -> None:
    asked = embeddings_request({"input": ["word " * 20]}, Limits(max_queue_chars=100), 32)
    assert asked.characters == 100


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ('"384"', 'string "384"'),
        ("true", "boolean true"),
        ("1e400", "number Infinity"),
        ("384.5", "number 384.5"),
        ("[384]", "array [384]"),
    ],
    ids=["string", "boolean", "overflow", "fraction", "array"],
)
def test_dimensions_that_are_no_whole_number_are_told_so(body: str, shown: str) -> None:
    data: Any = json.loads(f'{{"input": "x", "dimensions": {body}}}')
    with pytest.raises(ApiError) as refused:
        embeddings_request(data, Limits(), 384)
    error = refused.value
    assert (error.status, error.code, error.param) == (400, "invalid_value", "dimensions")
    assert "must be a whole number" in error.message
    assert error.message.endswith(f"not {shown}"), error.message
    assert "give 384" not in error.message, "not told to give what it gave"


def test_the_models_own_dimension_passes_and_another_cannot_shorten() -> None:
    assert embeddings_request({"input": "x", "dimensions": 384}, Limits(), 384).texts == ["x"]
    assert embeddings_request({"input": "x", "dimensions": 384.0}, Limits(), 384).texts == ["x"]
    with pytest.raises(ApiError, match="cannot shorten them: leave 'dimensions' out or give 384"):
        embeddings_request({"input": "x", "dimensions": 8}, Limits(), 384)
