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
from seamline.components.loaders.parquet import ParquetLoader, ParquetLoaderConfig
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


@pytest.mark.parametrize("end", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_a_line_of_exactly_the_limit_is_read(tmp_path: Path, end: bytes) -> None:
    """The limit is the line's content: a file written on Windows (CRLF) had each such line
    refused, one byte over."""
    line = json.dumps({"id": "a", "text": "x" * 100}).encode()
    (tmp_path / "d.jsonl").write_bytes(line + end + line.replace(b'"a"', b'"b"') + end)
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


def test_a_line_set_aside_keeps_its_id_and_a_later_line_with_it_is_a_repeat(
    tmp_path: Path,
) -> None:
    """As parquet does: the errors file named 'z' (a null text) and the output had 'z' too."""
    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"id": "z", "text": null}\n{"id": "y", "text": "y"}\n{"id": "z", "text": "valid z"}\n'
    )
    loader = JsonlLoader(JsonlLoaderConfig(path=path))
    whole = outcomes(loader)
    assert whole == {
        "1": "line 1: text field 'text' must be a string, not NoneType",
        "2": "ok",
        "3": "line 3: duplicate id 'z', first seen at line 1; give each line its own id",
    }
    shards = [outcomes(loader, shard=Shard(index, 2)) for index in range(2)]
    assert {k: v for part in shards for k, v in part.items()} == whole
    assert outcomes(loader, after="2") == {"3": whole["3"]}


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


# -- parquet -------------------------------------------------------------------------------


def write_parquet(path: Path, columns: dict[str, Any], row_group_size: int = 2) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path, row_group_size=row_group_size, compression="zstd")
    return path


def parquet_outcomes(loader: ParquetLoader, **read: Any) -> dict[str, str]:
    return {
        loaded.cursor.rpartition("#")[2]: "ok"
        if isinstance(loaded.item, Document)
        else loaded.item.reason
        for loaded in loader.read(**read)
    }


def parquet_loader(path: Path | str, **options: Any) -> ParquetLoader:
    return ParquetLoader(ParquetLoaderConfig(path=str(path), **options))


def test_parquet_refuses_a_repeated_id_naming_the_first_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Row groups of 2: [a b] [a c] [b d] [a]; a relative path, from a folder of the test's own.
    monkeypatch.chdir(tmp_path)
    write_parquet(tmp_path / "d.parquet", {"id": IDS, "text": [f"text {i}" for i in range(7)]})
    loader = parquet_loader("d.parquet")
    items = list(loader.read())
    assert [type(loaded.item) for loaded in items].count(Document) == 4
    got = parquet_outcomes(loader)
    assert got == {
        "0:0": "ok",
        "0:1": "ok",
        "1:0": "row 0 of row group 1: duplicate id 'a', first seen at d.parquet#0:0; give each "
        "row its own id",
        "1:1": "ok",
        "2:0": "row 0 of row group 2: duplicate id 'b', first seen at d.parquet#0:1; give each "
        "row its own id",
        "2:1": "ok",
        "3:0": "row 0 of row group 3: duplicate id 'a', first seen at d.parquet#0:0; give each "
        "row its own id",
    }
    # The error record is named by its place, so the errors file never repeats an output id.
    assert items[2].item.id == "d.parquet#1:0"
    assert items[2].item.metadata == {"file": "d.parquet", "row_group": 1, "row": 0}


def test_parquet_shards_and_resumes_agree_on_which_repeat_is_refused(tmp_path: Path) -> None:
    # Two files: the repeats in b.parquet are of ids first seen in a.parquet.
    write_parquet(tmp_path / "a.parquet", {"id": IDS[:4], "text": ["x"] * 4})
    write_parquet(tmp_path / "b.parquet", {"id": [*IDS[4:], "c"], "text": ["y"] * 4})
    loader = parquet_loader(tmp_path / "*.parquet")
    whole = {loaded.cursor: loaded.item for loaded in loader.read()}
    reasons = {cursor: getattr(item, "reason", "ok") for cursor, item in whole.items()}
    assert sum("duplicate id" in reason for reason in reasons.values()) == 4
    for count in (2, 3):
        shards = [
            {
                loaded.cursor: getattr(loaded.item, "reason", "ok")
                for loaded in loader.read(shard=Shard(index, count))
            }
            for index in range(count)
        ]
        assert {k: v for part in shards for k, v in part.items()} == reasons
    cursors = list(whole)
    for resume_after in (cursors[2], cursors[4], cursors[5]):  # mid-group, group start, file end
        rest = {
            loaded.cursor: getattr(loaded.item, "reason", "ok")
            for loaded in loader.read(after=resume_after)
        }
        assert rest == {
            k: v for k, v in reasons.items() if cursors.index(k) > cursors.index(resume_after)
        }
    sharded_resume = {
        loaded.cursor: getattr(loaded.item, "reason", "ok")
        for loaded in loader.read(shard=Shard(1, 2), after=cursors[3])
    }
    assert sharded_resume
    assert all(reasons[k] == v for k, v in sharded_resume.items())


def test_parquet_remembers_a_bounded_number_of_ids(tmp_path: Path) -> None:
    path = write_parquet(
        tmp_path / "d.parquet", {"id": ["a", "b", "c", "c", "a"], "text": ["t"] * 5}
    )
    got = parquet_outcomes(parquet_loader(path, max_tracked_ids=2))
    # 'c' came after the bound was reached: its repeat is not caught; 'a' was remembered.
    assert got["1:1"] == "ok"
    assert got["2:0"].startswith("row 0 of row group 2: duplicate id 'a'")
    assert set(parquet_outcomes(parquet_loader(path, max_tracked_ids=0)).values()) == {"ok"}
    assert set(parquet_outcomes(parquet_loader(path, id_column=None)).values()) == {"ok"}


def arrow_and_python_peaks(work: Any) -> tuple[Any, int, int]:
    """``work()``, and the peak bytes pyarrow and Python allocated while it ran."""
    import pyarrow as pa

    previous = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(previous)
    pa.set_memory_pool(pool)
    try:
        result, python = peak_bytes(work)
    finally:
        pa.set_memory_pool(previous)
    return result, pool.max_memory(), python


def test_parquet_sets_aside_a_decompression_bomb_without_decoding_it(tmp_path: Path) -> None:
    # 100 million characters in a file of a few kilobytes (zstd), beside two ordinary rows.
    path = write_parquet(
        tmp_path / "bomb.parquet",
        {"id": ["small", "bomb", "after"], "text": ["hello", "a" * 100_000_000, "world"]},
        row_group_size=3,
    )
    write_parquet(tmp_path / "next.parquet", {"id": ["next"], "text": ["read on"]})
    assert path.stat().st_size < 20_000
    loader = parquet_loader(tmp_path / "*.parquet")  # the default max_bytes: 10 MiB
    items, arrow, python = arrow_and_python_peaks(lambda: [loaded.item for loaded in loader.read()])
    assert arrow < 4 * MiB, arrow
    assert python < 4 * MiB, python
    assert [(type(item).__name__, item.id) for item in items] == [
        ("DocumentError", "small"),
        ("DocumentError", "bomb"),
        ("DocumentError", "after"),
        ("Document", "next"),
    ]
    reason = items[1].reason
    assert reason.startswith("row 1 of row group 0: not read: its row group's columns (id, text)")
    assert "for 3 rows, more than twice max_bytes=10485760 a row" in reason
    assert "raise max_bytes to read them" in reason


def test_parquet_sets_aside_one_long_row_among_many_before_it_becomes_a_string(
    tmp_path: Path,
) -> None:
    # 200 rows of 1 kB and one of 3 MB: within the limit on average, so the row group is
    # decoded, and the long row is caught in pyarrow's buffers, never copied into Python.
    texts = ["w" * 1000] * 200
    texts[150] = "x" * (3 * MiB)
    path = write_parquet(
        tmp_path / "d.parquet", {"id": [f"d{i}" for i in range(200)], "text": texts}, 200
    )
    loader = parquet_loader(path, max_bytes=2 * MiB)
    items, _, python = arrow_and_python_peaks(lambda: [loaded.item for loaded in loader.read()])
    assert python < 2 * MiB, python
    errors = [item for item in items if isinstance(item, DocumentError)]
    assert [(e.id, e.reason) for e in errors] == [
        (
            "d150",
            f"row 150 of row group 0: {3 * MiB + 4} bytes of id, text and metadata, longer than "
            f"max_bytes={2 * MiB} (raise max_bytes to read it)",
        )
    ]
    assert errors[0].metadata["bytes"] == 3 * MiB + 4
    assert len(items) == 200
    # A limit above the row reads it.
    assert all(isinstance(i.item, Document) for i in parquet_loader(path, max_bytes=4 * MiB).read())


def test_parquet_reads_a_row_of_exactly_the_limit(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "d.parquet", {"id": ["a", "b"], "text": ["x" * 99, "y" * 100]})
    got = parquet_outcomes(parquet_loader(path, max_bytes=100))
    assert got["0:0"] == "ok"
    assert "101 bytes of id, text and metadata, longer than max_bytes=100" in got["0:1"]


def test_parquet_limits_are_validated() -> None:
    for options in ({"max_bytes": 0}, {"max_tracked_ids": -1}):
        with pytest.raises(ValueError, match="max_"):
            ParquetLoaderConfig(path="d.parquet", **options)


def _view_or_dictionary(kind: str, values: list[Any]) -> Any:
    """``values`` as an Arrow array of one of the layouts other tools write strings in."""
    import pyarrow as pa

    if kind == "dictionary":  # what pandas saves a 'category' column as
        return pa.array(values).dictionary_encode()
    return pa.array(
        values, {"string_view": pa.string_view(), "binary_view": pa.binary_view()}[kind]
    )


@pytest.mark.parametrize(
    ("column", "kind"),
    [
        ("text", "string_view"),
        ("text", "dictionary"),
        ("id", "string_view"),
        ("id", "dictionary"),
        ("blob", "binary_view"),
        ("blob", "dictionary"),
    ],
)
def test_parquet_bounds_a_row_whatever_layout_its_strings_have(
    column: str, kind: str, tmp_path: Path
) -> None:
    # Such columns counted 0 bytes: a 3,000-byte row passed max_bytes=1000 and was embedded.
    import pyarrow.parquet as pq

    values: dict[str, list[Any]] = {
        "id": [f"s{i}" for i in range(10)],
        "text": ["small text"] * 10,
        "blob": [b"b"] * 10,
    }
    big = "word " * 600
    values[column][9] = big.encode() if column == "blob" else big
    columns: dict[str, Any] = dict(values)
    columns[column] = _view_or_dictionary(kind, values[column])
    path = write_parquet(tmp_path / "d.parquet", columns, row_group_size=10)
    read_type = str(pq.ParquetFile(path).schema_arrow.field(column).type)
    assert read_type.startswith(kind), read_type  # the layout survives the file
    loader = parquet_loader(path, max_bytes=1000, metadata_columns=["blob"])
    got = parquet_outcomes(loader)
    assert [place for place, outcome in got.items() if outcome != "ok"] == ["0:9"]
    assert "bytes of id, text and metadata, longer than max_bytes=1000" in got["0:9"]
    error = [loaded.item for loaded in loader.read()][9]
    assert isinstance(error, DocumentError)
    assert error.metadata["bytes"] == sum(len(values[name][9]) for name in values)
    # The id of a row within the limit still names its record; a long id is left out.
    assert error.id == ("d.parquet#0:9" if column == "id" else "s9")
