"""The parquet loader and the parquet and lancedb sinks: registered, and every field documented.

A field the YAML schema and docs/pipelines.md do not describe is a field users
cannot find; this fails when a field is added to a ``Config`` and not to the page.
"""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from seamline.components.loaders.parquet import ParquetLoader
from seamline.components.sinks.lancedb import LanceDbSink, VectorIndexConfig
from seamline.components.sinks.parquet import ParquetSink

PAGE = Path(__file__).parents[2] / "docs" / "pipelines.md"

COMPONENTS: list[tuple[str, type[Any], str]] = [
    ("seamline.loader", ParquetLoader, "1.1"),  # 1.1: size from the footers
    (
        "seamline.sink",
        ParquetSink,
        "1.6",
    ),  # 1.3: staged parts; 1.4: a reader; 1.5: counts; 1.6: a hold
    ("seamline.sink", LanceDbSink, "1.6"),
]


def section(heading: str) -> str:
    """The text of docs/pipelines.md from ``heading`` to the next heading of its level or above."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(heading)
    following = re.search(r"^#{1,3} ", text[start + len(heading) :], flags=re.MULTILINE)
    end = len(text) if following is None else start + len(heading) + following.start()
    return text[start:end]


@pytest.mark.parametrize(
    ("group", "cls", "version"), COMPONENTS, ids=lambda v: getattr(v, "name", v)
)
def test_registered_described_and_documented(group: str, cls: type[Any], version: str) -> None:
    assert cls.contract_version == version
    assert cls.kind != "sink" or (cls.resumable and cls.stageable)
    registered = {point.name: point for point in entry_points(group=group)}
    assert registered[cls.name].load() is cls
    conformance = {point.name for point in entry_points(group="seamline.conformance")}
    assert f"{cls.kind}:{cls.name}" in conformance, "a conformance fixture, as every component"
    documented = section(f"### {cls.kind} `{cls.name}`")
    for name, field in cls.Config.model_fields.items():
        assert field.description, f"{cls.name}.{name} has no description for the schema"
        assert f"| `{name}` |" in documented, f"{cls.name}.{name} is missing from {PAGE.name}"


def test_every_index_field_is_documented() -> None:
    documented = section("### sink `lancedb`")
    for name, field in VectorIndexConfig.model_fields.items():
        assert field.description
        assert f"| `{name}` |" in documented.split("`index:`")[-1], f"index.{name} undocumented"
