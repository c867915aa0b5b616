"""The loaders' own bounds: size limits read in bounded memory, ids that stay distinct.

The corpus test shows each hostile kind's outcome; these pin down the mechanisms
behind them: the default limit, that a file far larger than the limit costs no more
memory than the limit, and that repeated ids are refused the same way on every shard,
on every resume, and within a bounded memory.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from typing import TYPE_CHECKING, Any

import pytest

from seamline.components.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.contracts import Document, DocumentError, Shard
from tests.components.test_columnar_registered import section

if TYPE_CHECKING:
    from pathlib import Path

MiB = 1024 * 1024


def test_both_loaders_limit_a_document_to_10_mib_by_default(tmp_path: Path) -> None:
    assert TextFilesConfig(root=tmp_path).max_bytes == 10 * MiB
    assert JsonlLoaderConfig(path=tmp_path / "x.jsonl").max_bytes == 10 * MiB


def peak_bytes(work: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_file_far_over_the_limit_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    (tmp_path / "sparse.txt").touch()
    os.truncate(tmp_path / "sparse.txt", 1024 * MiB)  # 1 GiB, sparse: no disk used
    loader = TextFilesLoader(TextFilesConfig(root=tmp_path, max_bytes=MiB))
    items, peak = peak_bytes(lambda: [loaded.item for loaded in loader.read()])
    (error,) = items
    assert isinstance(error, DocumentError)
    assert "larger than max_bytes=1048576" in error.reason
    assert peak < 4 * MiB


def test_a_line_far_over_the_limit_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    with path.open("wb") as out:
        out.write(b'{"id": "a", "text": "before"}\n')
        out.truncate(out.tell() + 256 * MiB)  # one line of 256 MiB of NUL bytes, no newline
        out.seek(0, os.SEEK_END)
        out.write(b'\n{"id": "b", "text": "after"}\n')
    loader = JsonlLoader(JsonlLoaderConfig(path=path, max_bytes=MiB))
    items, peak = peak_bytes(lambda: [loaded.item for loaded in loader.read()])
    assert [item.id for item in items] == ["a", "docs.jsonl:2", "b"]
    assert "longer than max_bytes=1048576" in items[1].reason
    assert peak < 6 * MiB


def test_a_line_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    line = json.dumps({"id": "a", "text": "x" * 100}).encode()
    (tmp_path / "d.jsonl").write_bytes(line + b"\n" + line.replace(b'"a"', b'"b"'))
    loader = JsonlLoader(JsonlLoaderConfig(path=tmp_path / "d.jsonl", max_bytes=len(line)))
    assert [type(loaded.item) for loaded in loader.read()] == [Document, Document]
    loader = JsonlLoader(JsonlLoaderConfig(path=tmp_path / "d.jsonl", max_bytes=len(line) - 1))
    assert [type(loaded.item) for loaded in loader.read()] == [DocumentError, DocumentError]


def write_lines(path: Path, ids: list[str]) -> Path:
    path.write_text(
        "".join(json.dumps({"id": i, "text": f"text {n}"}) + "\n" for n, i in enumerate(ids))
    )
    return path


IDS = ["a", "b", "a", "c", "b", "d", "a"]
"""Lines 3, 5 and 7 repeat an id first seen on lines 1, 2 and 1."""


def outcomes(loader: JsonlLoader, **read: Any) -> dict[str, str]:
    return {
        loaded.cursor: "ok" if isinstance(loaded.item, Document) else loaded.item.reason
        for loaded in loader.read(**read)
    }


def test_a_repeated_id_is_refused_naming_the_first_line(tmp_path: Path) -> None:
    loader = JsonlLoader(JsonlLoaderConfig(path=write_lines(tmp_path / "d.jsonl", IDS)))
    got = outcomes(loader)
    assert got == {
        "1": "ok",
        "2": "ok",
        "3": "line 3: duplicate id 'a', first seen at line 1; give each line its own id",
        "4": "ok",
        "5": "line 5: duplicate id 'b', first seen at line 2; give each line its own id",
        "6": "ok",
        "7": "line 7: duplicate id 'a', first seen at line 1; give each line its own id",
    }


def test_shards_and_resumes_agree_on_which_repeat_is_refused(tmp_path: Path) -> None:
    loader = JsonlLoader(JsonlLoaderConfig(path=write_lines(tmp_path / "d.jsonl", IDS)))
    whole = outcomes(loader)
    shards = [outcomes(loader, shard=Shard(index, 3)) for index in range(3)]
    assert {k: v for part in shards for k, v in part.items()} == whole
    assert outcomes(loader, after="4") == {k: v for k, v in whole.items() if int(k) > 4}


def test_the_ids_remembered_are_bounded(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "d.jsonl", ["a", "b", "c", "c", "a"])
    loader = JsonlLoader(JsonlLoaderConfig(path=path, max_tracked_ids=2))
    got = outcomes(loader)
    # 'c' came after the bound was reached: its repeat is not caught; 'a' was remembered.
    assert got["4"] == "ok"
    assert got["5"].startswith("line 5: duplicate id 'a'")
    off = JsonlLoader(JsonlLoaderConfig(path=path, max_tracked_ids=0))
    assert set(outcomes(off).values()) == {"ok"}


def test_an_escaped_file_name_that_collides_with_another_is_refused(tmp_path: Path) -> None:
    odd = os.fsdecode(b"name-\xff.txt")
    (tmp_path / odd).write_text("odd")
    (tmp_path / "name-\\udcff.txt").write_text("a real file named like the escape")
    items = {
        loaded.cursor: loaded.item
        for loaded in TextFilesLoader(TextFilesConfig(root=tmp_path)).read()
    }
    assert isinstance(items["name-\\udcff.txt"], Document)
    refused = items[odd]
    assert isinstance(refused, DocumentError)
    assert "duplicate id" in refused.reason


@pytest.mark.parametrize("options", [{"max_bytes": 0}, {"max_tracked_ids": -1}])
def test_jsonl_limits_are_validated(tmp_path: Path, options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="max_"):
        JsonlLoaderConfig(path=tmp_path / "d.jsonl", **options)


@pytest.mark.parametrize("cls", [TextFilesLoader, JsonlLoader])
def test_every_loader_field_is_documented(cls: type[Any]) -> None:
    documented = section(f"### loader `{cls.name}`")
    for name, field in cls.Config.model_fields.items():
        assert field.description, f"{cls.name}.{name} has no description for the schema"
        assert f"| `{name}` |" in documented, f"{cls.name}.{name} is missing from pipelines.md"
