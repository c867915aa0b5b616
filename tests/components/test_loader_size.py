"""Loader contract 1.1: a loader may say how many items it will read (``size``), cheaply.

text-files counts matching files, parquet sums row counts from the files' footers; both
per shard, both bounded (past a number of items or a time they answer None, so a huge
folder cannot stall the start of a run). jsonl does not say (a count would read every
byte), and a loader written for 1.0, without ``size``, still answers None.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seamline.components.loaders import _count
from seamline.components.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from seamline.components.loaders.parquet import ParquetLoader, ParquetLoaderConfig
from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.contracts import Loader, Shard
from tests.core.toy import ListLoader, ListLoaderConfig


def read_count(loader: Loader[Any], shard: Shard = Shard()) -> int:
    return sum(1 for _ in loader.read(shard=shard))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name in ("a.md", "b.md", "sub/c.md", "sub/deeper/d.md", "e.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"text of {name}", encoding="utf-8")
    (root / "folder.md").mkdir()  # a directory that matches is not a document
    return root


def test_text_files_counts_the_matching_files_per_shard(tree: Path) -> None:
    loader = TextFilesLoader(TextFilesConfig(root=tree, glob="**/*.md"))
    assert loader.size() == 4 == read_count(loader)
    parts = [loader.size(shard=Shard(i, 3)) for i in range(3)]
    assert parts == [read_count(loader, Shard(i, 3)) for i in range(3)] == [2, 1, 1]


def test_text_files_stops_counting_past_the_bound(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loader = TextFilesLoader(TextFilesConfig(root=tree, glob="**/*.md"))
    monkeypatch.setattr(_count, "LIMIT", 3)
    assert loader.size() is None, "more files than the bound: unknown, not a stall"
    monkeypatch.setattr(_count, "LIMIT", 4)
    assert loader.size() == 4
    monkeypatch.setattr(_count, "SECONDS", -1.0)
    assert loader.size() is None, "out of time: unknown"


def test_text_files_without_its_root_says_nothing(tmp_path: Path) -> None:
    assert TextFilesLoader(TextFilesConfig(root=tmp_path / "missing")).size() is None


def write_parquet(path: Path, rows: int, group: int) -> None:
    table = pa.table({"id": [f"{path.stem}-{i}" for i in range(rows)], "text": ["t"] * rows})
    pq.write_table(table, path, row_group_size=group)


def test_parquet_sums_the_footers_row_counts_per_shard(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", rows=7, group=3)  # row groups of 3, 3, 1
    write_parquet(tmp_path / "b.parquet", rows=4, group=4)  # one row group of 4
    (tmp_path / "c.parquet").write_bytes(b"not parquet")  # one error record
    loader = ParquetLoader(ParquetLoaderConfig(path=str(tmp_path / "*.parquet")))
    assert loader.size() == 12 == read_count(loader)
    # Row groups 0..4 are a0 a1 a2 b0 c: shard 0 of 2 owns a0, a2, c; shard 1 a1, b0.
    assert [loader.size(shard=Shard(i, 2)) for i in range(2)] == [5, 7]
    assert [read_count(loader, Shard(i, 2)) for i in range(2)] == [5, 7]


def test_parquet_stops_counting_past_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b"):
        write_parquet(tmp_path / f"{name}.parquet", rows=2, group=2)
    loader = ParquetLoader(ParquetLoaderConfig(path=str(tmp_path / "*.parquet")))
    monkeypatch.setattr(_count, "LIMIT", 1)
    assert loader.size() is None
    assert ParquetLoader(ParquetLoaderConfig(path=str(tmp_path / "none-*.parquet"))).size() is None


def test_jsonl_and_a_loader_written_for_1_0_do_not_say(tmp_path: Path) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    assert JsonlLoader(JsonlLoaderConfig(path=lines)).size() is None
    assert "size" not in vars(ListLoader), "the toy loader is a 1.0 loader without size"
    assert ListLoader(ListLoaderConfig(texts=["a", "b"])).size(shard=Shard(0, 2)) is None
