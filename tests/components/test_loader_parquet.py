"""The ``parquet`` loader: rows of many files in a stable order, sharded by row group."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from pydantic import ValidationError

from seamline.components.loaders.parquet import ParquetLoader, ParquetLoaderConfig
from seamline.contracts import Document, DocumentError, Loaded, Shard, UserError

# pyarrow, DuckDB and LanceDB are imported by the tests that use them, not when pytest
# collects this module: a process pytest starts later (the attention benchmark's workers)
# inherits the peak memory of the collecting process, and they would add about 100 MB.

if TYPE_CHECKING:
    from pathlib import Path


def write(path: Path, rows: dict[str, Any], row_group_size: int = 2) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(rows), path, row_group_size=row_group_size)


def loader(path: Path | str, **options: Any) -> ParquetLoader:
    return ParquetLoader(ParquetLoaderConfig(path=str(path), **options))


def documents(items: list[Loaded]) -> list[tuple[str, str]]:
    return [(i.item.id, i.item.text) for i in items if isinstance(i.item, Document)]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Two files (and one that does not match), ten rows, row groups of 2."""
    write(
        tmp_path / "data" / "b.parquet",
        {"id": [6, 7, 8, 9], "text": ["g", "h", "i", "j"], "lang": ["en"] * 4},
    )
    write(
        tmp_path / "data" / "a.parquet",
        {"id": [0, 1, 2, 3, 4, 5], "text": list("abcdef"), "lang": ["de"] * 6},
    )
    write(tmp_path / "data" / "other.txt.parquet.bak", {"id": [99], "text": ["z"]})
    return tmp_path / "data"


def test_reads_every_matching_file_in_path_order(corpus: Path) -> None:
    items = list(loader(corpus / "*.parquet", metadata_columns=["lang"]).read())
    assert documents(items) == [(str(i), "abcdefghij"[i]) for i in range(10)]
    assert items[0].cursor == f"{corpus}/a.parquet#0:0"
    assert items[7].cursor == f"{corpus}/b.parquet#0:1"
    first = items[0].item
    assert isinstance(first, Document)
    assert first.metadata == {"lang": "de"}


def test_shards_are_row_groups_numbered_across_the_files(corpus: Path) -> None:
    # Row groups: a.parquet [0 1] [2 3] [4 5], b.parquet [6 7] [8 9]: numbers 0..4.
    read = loader(corpus / "*.parquet")
    shard0 = [doc for doc, _ in documents(list(read.read(shard=Shard(0, 2))))]
    shard1 = [doc for doc, _ in documents(list(read.read(shard=Shard(1, 2))))]
    assert shard0 == ["0", "1", "4", "5", "8", "9"]
    assert shard1 == ["2", "3", "6", "7"]


def test_resume_starts_right_after_the_cursor_within_its_row_group(corpus: Path) -> None:
    read = loader(corpus / "*.parquet")
    items = list(read.read())
    rest = list(read.read(after=items[4].cursor))  # "4": the first row of a row group
    assert [doc for doc, _ in documents(rest)] == ["5", "6", "7", "8", "9"]
    rest = list(read.read(shard=Shard(1, 2), after=f"{corpus}/a.parquet#1:0"))
    assert [doc for doc, _ in documents(rest)] == ["3", "6", "7"]


def test_rows_without_a_usable_id_or_text_become_error_records(tmp_path: Path) -> None:
    write(
        tmp_path / "d.parquet",
        {"id": ["a", None, "c", "d"], "text": ["fine", "orphan", None, "also fine"]},
    )
    write(tmp_path / "n.parquet", {"id": ["x"], "text": [17]})
    items = list(loader(tmp_path / "d.parquet").read())
    errors = [i.item for i in items if isinstance(i.item, DocumentError)]
    assert documents(items) == [("a", "fine"), ("d", "also fine")]
    assert [(e.id, e.reason) for e in errors] == [
        (
            "d.parquet#0:1",
            "row 1 of row group 0: id column 'id' must hold a non-empty string or an integer, "
            "found null",
        ),
        ("c", "row 0 of row group 1: text column 'text' is null"),
    ]
    assert errors[1].metadata == {"file": f"{tmp_path}/d.parquet", "row_group": 1, "row": 0}
    [number] = [i.item for i in loader(tmp_path / "n.parquet").read()]
    assert isinstance(number, DocumentError)
    assert "text column 'text' must hold strings, found int64" in number.reason


def test_a_file_that_is_not_parquet_is_set_aside_and_the_rest_read(corpus: Path) -> None:
    (corpus / "a2.parquet").write_bytes(b"PAR1 this is not a parquet file")
    items = list(loader(corpus / "*.parquet").read())
    bad = [i for i in items if isinstance(i.item, DocumentError)]
    assert [(i.item.id, i.cursor) for i in bad] == [("a2.parquet", f"{corpus}/a2.parquet#*")]
    assert "not a readable Parquet file" in bad[0].item.reason
    assert len(documents(items)) == 10
    after_bad = list(loader(corpus / "*.parquet").read(after=bad[0].cursor))
    assert [doc for doc, _ in documents(after_bad)] == ["6", "7", "8", "9"]


def test_ids_can_be_the_rows_places(tmp_path: Path) -> None:
    write(tmp_path / "t.parquet", {"body": ["x", "y", "z"]})
    items = list(loader(tmp_path / "t.parquet", id_column=None, text_column="body").read())
    assert [i.item.id for i in items] == [f"t.parquet#{g}:{r}" for g, r in ((0, 0), (0, 1), (1, 0))]


def test_a_rows_place_is_one_id_however_the_path_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids held the path as typed: ``pq/a.parquet#0:0``, ``./pq/a.parquet#0:0`` and the
    absolute path were three ids for one row, and an ``upsert`` from another folder (or
    with the path spelled otherwise) added every row again."""
    write(tmp_path / "pq" / "sub" / "a.parquet", {"text": ["x"]})
    monkeypatch.chdir(tmp_path)
    spellings = [
        "pq/**/*.parquet",
        "./pq/**/*.parquet",
        f"{tmp_path}/pq/**/*.parquet",
        "pq/../pq/**/*.parquet",
    ]
    for spelling in spellings:
        [item] = list(loader(spelling, id_column=None).read())
        assert item.item.id == "sub/a.parquet#0:0", spelling
    for spelling in ["pq/sub/a.parquet", "./pq/sub/a.parquet", f"{tmp_path}/pq/sub/*.parquet"]:
        [item] = list(loader(spelling, id_column=None).read())
        assert item.item.id == "a.parquet#0:0", spelling
    monkeypatch.chdir(tmp_path / "pq")
    [item] = list(loader("sub/a.parquet", id_column=None).read())
    assert item.item.id == "a.parquet#0:0"


def test_a_dictionary_encoded_batch_becomes_python_max_bytes_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stated size counts each distinct value of a dictionary once: 64 rows of one
    # 1,000-byte text, so 61 rows (61 kB; 400 MB for 1,024 texts of 400 kB) became Python
    # strings at once, where a plain file's batches hold 3.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from seamline.components.loaders import _parquet_rows

    table = pa.table({"id": [f"d{i:02}" for i in range(64)], "text": ["w" * 1000] * 64})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=64)
    converted: list[int] = []
    convert = _parquet_rows.to_python

    def to_python(batch: pa.RecordBatch) -> Any:
        converted.append(batch.num_rows)
        return convert(batch)

    monkeypatch.setattr(_parquet_rows, "to_python", to_python)
    read = list(loader(tmp_path / "d.parquet", max_bytes=3_500).read())
    assert [doc_id for doc_id, _ in documents(read)] == [f"d{i:02}" for i in range(64)]
    assert sum(converted) == 64
    assert max(converted) == 3, converted  # 3 rows of 1,003 bytes within 3,500


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"text_column": "body"},
            r"has no column 'body' \(its columns: 'id', 'text', 'lang'\); set text_column",
        ),
        ({"id_column": "key"}, "has no column 'key'.*set id_column"),
        ({"metadata_columns": ["title"]}, "has no column 'title'.*set metadata_columns"),
    ],
)
def test_a_missing_column_names_the_file_and_the_setting(
    corpus: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        list(loader(corpus / "a.parquet", **options).read())


FORGED = "body\x1b]0;T\x07\nerror: forged"
"""A column name that, printed as it is, set the terminal's title and began a line of its own."""


def test_column_names_in_a_message_are_quoted_as_data(tmp_path: Path) -> None:
    # The file's column names were joined as they are: 'error: forged' stood on a line
    # of its own under the real error, and the escape sequence reached the terminal.
    import pyarrow as pa

    from seamline.components.sinks._columns import RowLayout

    write(tmp_path / "a.parquet", {"id": ["a"], FORGED: ["x"]})
    with pytest.raises(UserError) as caught:
        list(loader(tmp_path / "a.parquet", text_column="nosuch").read())
    message = str(caught.value)
    assert f"(its columns: 'id', {FORGED!r}); set text_column" in message
    assert "\n" not in message
    assert "\x1b" not in message
    # A table at a sink's path that seamline did not write: its names are data too.
    layout = RowLayout("lancedb", text=True, metadata_keys=None)
    with pytest.raises(UserError) as caught:
        layout.adopt(pa.schema([("id", pa.string()), (FORGED, pa.string())]), "'t.lance'")
    assert f"it has 'id', {FORGED!r})" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_path_that_matches_nothing_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"'nowhere/\*\.parquet' matches no file \(looked in "):
        list(loader("nowhere/*.parquet").read())
    with pytest.raises(UserError, match=r"'missing\.parquet' does not exist"):
        list(loader("missing.parquet").read())


def test_files_with_no_rows_are_a_user_error(tmp_path: Path) -> None:
    # They yielded nothing, and the run published an empty output: with the lancedb sink's
    # mode: sync, an export that wrote only a schema deleted every row of the table.
    write(tmp_path / "a.parquet", {"id": np.array([], dtype=str), "text": np.array([], dtype=str)})
    write(tmp_path / "b.parquet", {"id": np.array([], dtype=str), "text": np.array([], dtype=str)})
    with pytest.raises(UserError, match=r"matches 2 Parquet files with no rows \(looked in "):
        list(loader(tmp_path / "*.parquet").read())
    write(tmp_path / "c.parquet", {"id": ["c"], "text": ["one row"]})
    assert documents(list(loader(tmp_path / "*.parquet").read())) == [("c", "one row")]


def test_cursors_of_another_loader_or_a_changed_input_are_refused(corpus: Path) -> None:
    read = loader(corpus / "*.parquet")
    with pytest.raises(UserError, match="its cursors are '<file>#<row group>:<row>'"):
        list(read.read(after="12"))
    for place in ("²:0", "0:²", "1" * 21 + ":0"):  # '²' passed isdigit(), then int() failed
        with pytest.raises(UserError, match="its cursors are '<file>#<row group>:<row>'"):
            list(read.read(after=f"{corpus}/a.parquet#{place}"))
    with pytest.raises(UserError, match="is no longer among the files"):
        list(read.read(after=f"{corpus}/gone.parquet#0:1"))


def test_memory_follows_the_row_group_not_the_file(tmp_path: Path) -> None:
    # Sixteen row groups of 500 incompressible 1 kB texts: an 8 MB file of 0.5 MB groups.
    import pyarrow as pa

    rng = np.random.default_rng(0)
    letters = rng.integers(97, 123, size=(8000, 1000), dtype=np.uint8)
    texts = [row.tobytes().decode("ascii") for row in letters]
    write(tmp_path / "big.parquet", {"id": list(range(8000)), "text": texts}, 500)
    baseline = pa.total_allocated_bytes()
    peak = count = 0
    for _ in loader(tmp_path / "big.parquet", batch_rows=100).read():
        count += 1
        if count % 50 == 0:
            peak = max(peak, pa.total_allocated_bytes() - baseline)
    assert count == 8000
    # pyarrow holds a row group's pages (compressed and decoded) and the batch: about 1.6 MB
    # measured, where reading the whole file would hold more than 8 MB.
    assert 0 < peak < 2_500_000, f"{peak} bytes held while reading"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"id_column": "text"}, "id_column and text_column are both 'text'"),
        ({"metadata_columns": ["path"]}, "may not include 'path'"),
        ({"batch_rows": 0}, "greater than or equal to 1"),
        ({"path": ""}, "must not be empty"),
    ],
)
def test_bad_settings_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ParquetLoaderConfig(**{"path": "d.parquet", **options})


# -- the input's fingerprint: --resume after the files changed -----------------------------


def registry_with(*components: type[Any]) -> Any:
    """The toy components (tests.core.toy) and ``components``, as discovery would list them."""
    from seamline.core.registry import ComponentInfo, Registry
    from tests.core.toy import toy_registry

    extra = [
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c,
            c.contract_version,
        )
        for c in components
    ]  # fmt: skip
    return Registry([*toy_registry().entries(), *extra])


def resumable_run(path: str, out: str) -> Any:
    """An orchestrator: this loader over ``path``, the toy model, the real ``jsonl`` sink."""
    from seamline.components.sinks.jsonl import JsonlSink
    from seamline.core.config import parse_pipeline
    from seamline.core.orchestrator import Orchestrator

    registry = registry_with(JsonlSink, ParquetLoader)
    text = (
        "pipeline: parquet-resume\n"
        f"loader: {{use: parquet, with: {{path: {json.dumps(path)}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(out)}}}}}\n"
        "run: {batch_size: 2, buckets: [4, 8], checkpoint_every: 3}\n"
    )
    return Orchestrator(parse_pipeline(text, "p.yaml", registry), registry)


def crash_after(orchestrator: Any, documents: int) -> None:
    """Make the run's loader raise after ``documents`` items, behind the pipeline's back."""
    read = orchestrator.loader.read

    def crashing(**options: Any) -> Any:
        for number, loaded in enumerate(read(**options)):
            if number == documents:
                raise RuntimeError("the machine went away")
            yield loaded

    orchestrator.loader.read = crashing


@pytest.mark.parametrize("spelling", ["relative", "absolute"])
def test_resume_refuses_when_the_files_the_pattern_matches_changed(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    from seamline.contracts import ResumeRefused

    monkeypatch.chdir(tmp_path)
    pattern = "data/*.parquet" if spelling == "relative" else str(corpus / "*.parquet")
    # The loader's path is spelled both ways; the sink's stays absolute (its own spellings
    # are the sinks' tests' business).
    out = str(tmp_path / "out" / "emb.jsonl")
    first = resumable_run(pattern, out)
    crash_after(first, 7)
    with pytest.raises(RuntimeError, match="the machine went away"):
        first.run()
    assert (tmp_path / "out" / ".emb.jsonl.checkpoint").exists(), "the test needs a checkpoint"

    # A file that the pattern now matches, written after the checkpoint: not silently skipped.
    write(corpus / "c.parquet", {"id": [10, 11], "text": ["k", "l"], "lang": ["fr"] * 2})
    with pytest.raises(ResumeRefused) as refused:
        resumable_run(pattern, out).run(resume=True)
    said = str(refused.value)
    assert f"the input files under {pattern!r} (2 files when the checkpoint's run listed " in said
    added = pattern.replace("*.parquet", "c.parquet")
    assert f", 3 now; newer than that: {added!r}) changed since that checkpoint" in said
    assert "--restart" in said

    # The input restored, the resume goes on and publishes every row once.
    (corpus / "c.parquet").unlink()
    summary = resumable_run(pattern, out).run(resume=True)
    assert summary.resumed_from is not None
    published = [json.loads(line)["id"] for line in (tmp_path / "out" / "emb.jsonl").open()]
    assert sorted(published, key=int) == [str(i) for i in range(10)]


# -- values with no Python equivalent -------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "good", "bad", "message"),
    [
        (
            "timestamp[ns]",
            1_000,
            1,
            "timestamp[ns] value 1 is between two microseconds",
        ),
        ("date32[day]", 1, 2**31 - 1, "OverflowError: days=2147483647"),
    ],
)
def test_a_value_python_cannot_hold_sets_its_row_aside_not_the_run(
    tmp_path: Path, kind: str, good: int, bad: int, message: str
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"timestamp[ns]": pa.timestamp("ns"), "date32[day]": pa.date32()}
    path = tmp_path / "m.parquet"
    values = pa.array([good * i for i in range(49)] + [bad], types[kind])
    rows = {"id": [f"r{i}" for i in range(50)], "text": [f"t{i}" for i in range(50)], "m": values}
    pq.write_table(pa.table(rows), path, row_group_size=50)
    read = loader(path, metadata_columns=["m"], batch_rows=20)  # the bad row shares a batch
    items = list(read.read())
    assert [i.cursor for i in items] == [f"{path}#0:{row}" for row in range(50)]
    assert documents(items) == [(f"r{i}", f"t{i}") for i in range(49)]
    assert [i.item.metadata["m"] for i in items[:49]] == values.slice(0, 49).to_pylist()
    error = items[49].item
    assert isinstance(error, DocumentError)
    assert error.id == "r49"
    assert error.reason.startswith(
        "row 49 of row group 0: metadata column 'm' holds a value Python cannot represent ("
        + message
    )
    assert error.reason.endswith(
        "; cast the column to a type Python holds (a microsecond timestamp, a string) or leave "
        "it out of metadata_columns"
    )
    assert len(error.reason) < 500
    assert error.metadata == {"file": str(path), "row_group": 0, "row": 49, "column": "m"}
    rest = list(read.read(after=items[45].cursor))
    assert [i.cursor for i in rest] == [f"{path}#0:{row}" for row in range(46, 50)]
    assert [i.item.id for i in rest] == ["r46", "r47", "r48", "r49"]


NANOSECOND_READ = """
import json, sys


class NoPandas:  # import pandas fails, as where it is not installed
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


if sys.argv[1] == "blocked":
    sys.meta_path.insert(0, NoPandas())
from seamline.components.loaders.parquet import ParquetLoader, ParquetLoaderConfig
config = ParquetLoaderConfig(path="t.parquet", metadata_columns=sys.argv[2].split(","))
for loaded in ParquetLoader(config).read():
    item = loaded.item
    told = getattr(item, "reason", None) or {k: str(v) for k, v in item.metadata.items()}
    print(json.dumps([item.id, told, "pandas" in sys.modules]))
"""


@pytest.mark.parametrize("pandas", ["importable", "blocked"])
def test_a_nanosecond_time_has_one_outcome_whether_pandas_is_installed_or_not(
    tmp_path: Path, pandas: str
) -> None:
    # With pandas, values came as pandas.Timestamp and the parquet sink cut .123456789 to
    # .123456 without a word; without it, every row of the column was set aside.
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    if pandas == "importable":
        pytest.importorskip("pandas")
    nanoseconds = [1_614_834_367_123_456_000, 1_614_834_367_123_456_789]
    stamps = pa.array(nanoseconds, pa.timestamp("ns", "Europe/Paris"))
    took = pa.array([1_000, 2_000], pa.duration("ns"))
    table = pa.table({"id": ["whole", "finer"], "text": ["a", "b"], "when": stamps, "took": took})
    pq.write_table(table, tmp_path / "t.parquet")
    run = subprocess.run(
        [sys.executable, "-c", NANOSECOND_READ, pandas, "when,took"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    whole, finer = (json.loads(line) for line in run.stdout.splitlines())
    assert whole == [
        "whole",
        {"when": "2021-03-04 06:06:07.123456+01:00", "took": "0:00:00.000001"},
        pandas == "importable",
    ]
    assert finer[0] == "finer"
    assert finer[1].startswith(
        "row 1 of row group 0: metadata column 'when' holds a value Python cannot represent "
        "(timestamp[ns, tz=Europe/Paris] value 1614834367123456789 is between two microseconds)"
    )


@pytest.mark.parametrize("pandas", ["importable", "blocked"])
def test_a_nanosecond_time_inside_a_list_struct_or_map_has_one_outcome_too(
    tmp_path: Path, pandas: str
) -> None:
    # Only the column's own type was looked at: with pandas .123456789 became .123456
    # without a word, without it the row was refused with "Install pandas".
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    if pandas == "importable":
        pytest.importorskip("pandas")
    ns = pa.timestamp("ns")
    whole, finer = 1_614_834_367_123_456_000, 1_614_834_367_123_456_789
    columns = {
        "id": ["whole", "finer", "held"],
        "text": ["a", "b", "c"],
        "lts": pa.array([[whole, None], [whole, finer], None], pa.list_(ns)),
        "st": pa.array([{"t": whole}, {"t": whole}, {"t": finer}], pa.struct([("t", ns)])),
        "mp": pa.array([[("k", 1_000)], [], [("k", 1)]], pa.map_(pa.string(), pa.duration("ns"))),
    }
    pq.write_table(pa.table(columns), tmp_path / "t.parquet")
    run = subprocess.run(
        [sys.executable, "-c", NANOSECOND_READ, pandas, "lts,st,mp"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    kept, lts, st_mp = (json.loads(line) for line in run.stdout.splitlines())
    assert kept == [
        "whole",
        {
            "lts": "[datetime.datetime(2021, 3, 4, 5, 6, 7, 123456), None]",
            "st": "{'t': datetime.datetime(2021, 3, 4, 5, 6, 7, 123456)}",
            "mp": "[('k', datetime.timedelta(microseconds=1))]",
        },
        pandas == "importable",
    ]
    assert lts[1].startswith(
        "row 1 of row group 0: metadata column 'lts' holds a value Python cannot represent "
        "(timestamp[ns] value 1614834367123456789 is between two microseconds)"
    )
    assert "column 'st' holds a value Python cannot represent (timestamp[ns] value " in st_mp[1]
    assert "column 'mp' holds a value Python cannot represent (duration[ns] value 1 is " in st_mp[1]


def test_text_that_is_not_utf8_is_set_aside_with_the_fix_for_it(tmp_path: Path) -> None:
    # The advice was to "cast the column to a type Python holds (... a string)": it is one.
    import pyarrow as pa
    import pyarrow.parquet as pq

    offsets = pa.py_buffer(np.array([0, 2, 3], np.int32).tobytes())
    texts = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"ok\xff")])
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "text": texts}), path)
    items = list(loader(path).read())
    assert documents(items) == [("a", "ok")]
    error = items[1].item
    assert isinstance(error, DocumentError)
    assert "text column 'text' holds a value Python cannot represent (UnicodeDecodeError" in (
        error.reason
    )
    assert error.reason.endswith("; write the column's strings as UTF-8, as Parquet requires")


def unlistable(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make every folder called ``name`` one that cannot be listed (as for a user without
    read permission: root may list any folder, so the tests do not depend on who runs
    them)."""
    import os

    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) == name:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def test_a_folder_the_pattern_looks_into_and_cannot_list_refuses_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # glob.glob passed over it: its files were left out, exit 0, and a sync deleted them.
    write(tmp_path / "pq" / "a" / "x.parquet", {"id": [1], "text": ["a"]})
    write(tmp_path / "pq" / "b" / "y.parquet", {"id": [2], "text": ["b"]})
    unlistable(monkeypatch, "b")
    with pytest.raises(UserError, match=r"parquet loader: cannot list the folder '.*pq/b' \("):
        list(loader(tmp_path / "pq" / "**" / "*.parquet").read())
    assert documents(list(loader(tmp_path / "pq" / "a" / "*.parquet").read())) == [("1", "a")]


def test_a_match_that_is_no_regular_file_is_its_error_record(corpus: Path) -> None:
    # A link to a file gone (an unmounted drive) and a FIFO were dropped without a word.
    import os

    (corpus / "c.parquet").symlink_to(corpus / "gone.parquet")
    os.mkfifo(corpus / "d.parquet")  # opened, it would wait for a writer for ever
    items = list(loader(corpus / "*.parquet").read())
    bad = {i.item.id: i.item.reason for i in items if isinstance(i.item, DocumentError)}
    unreadable = "not a readable Parquet file: "
    assert bad == {
        "c.parquet": f"{unreadable}a link to a file that does not exist",
        "d.parquet": f"{unreadable}a FIFO (named pipe), not a regular file",
    }
    assert len(documents(items)) == 10


@pytest.mark.parametrize("what", ["a device", "a link loop"])
def test_one_path_that_can_be_no_parquet_file_is_said_as_what_it_is(
    tmp_path: Path, what: str
) -> None:
    # "'/dev/zero' matches 1 Parquet file with no rows", and so was a link loop.
    from pathlib import Path

    named = tmp_path / "loop.parquet"
    if what == "a device":
        named = Path("/dev/zero")
    else:
        named.symlink_to(named)
    said = (
        "a character device, not a regular file" if what == "a device" else "a symbolic link loop"
    )
    with pytest.raises(UserError, match=f"'{named}': {said}") as caught:
        list(loader(named).read())
    assert "with no rows" not in str(caught.value)


def test_a_pattern_matching_only_a_fifo_sets_it_aside_not_no_rows(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "d.parquet")
    assert loader(tmp_path / "*.parquet").size() == 1
    (item,) = list(loader(tmp_path / "*.parquet").read())
    assert isinstance(item.item, DocumentError)
    assert item.item.reason.endswith("a FIFO (named pipe), not a regular file")


def test_a_path_that_exists_as_written_is_that_file_not_a_pattern(tmp_path: Path) -> None:
    """``runs[1]/docs.parquet`` was read as a pattern: the run embedded ``runs1/docs.parquet``
    (exit 0), and without that file said the path it was given "matches no file"."""
    write(tmp_path / "runs[1]" / "docs.parquet", {"id": ["a"], "text": ["the file named"]})
    write(tmp_path / "runs1" / "docs.parquet", {"id": ["x"], "text": ["another file"]})
    named = tmp_path / "runs[1]" / "docs.parquet"
    assert documents(list(loader(named).read())) == [("a", "the file named")]
    (tmp_path / "runs1" / "docs.parquet").unlink()
    assert documents(list(loader(named).read())) == [("a", "the file named")]
    assert loader(named).size() == 1
    # A pattern still is one; brackets match the characters as they are.
    escaped = tmp_path / "runs[[]1]" / "*.parquet"
    assert documents(list(loader(escaped).read())) == [("a", "the file named")]


def test_an_error_record_named_by_a_place_is_marked_as_one(tmp_path: Path) -> None:
    """A row whose id cannot be read, a repeated id and a file that is not Parquet are
    named by their places, which a document may have as its id: a ``lancedb`` sync took
    such a place for that document and deleted the rows the place stood for."""
    write(tmp_path / "d.parquet", {"id": ["a", None, "c", "a"], "text": ["x", "y", None, "z"]})
    (tmp_path / "e.parquet").write_bytes(b"PAR1 this is not a parquet file")
    items = list(loader(tmp_path / "*.parquet").read())
    errors = [(i.item.id, i.item.place) for i in items if isinstance(i.item, DocumentError)]
    assert errors == [
        ("d.parquet#0:1", True),
        ("c", False),
        ("d.parquet#1:1", True),
        ("e.parquet", True),
    ]
    # The repeat's id was read, and the input holds it: a lancedb sync took the repeat for
    # an unreadable row and deleted nothing that was removed from the input.
    repeats = [i.item.duplicate_of for i in items if isinstance(i.item, DocumentError)]
    assert repeats == [None, None, "a", None]
    # Without an id column, a row's place is its id: it names the document.
    write(tmp_path / "t.parquet", {"text": ["x", None]})
    [_, null] = list(loader(tmp_path / "t.parquet", id_column=None).read())
    assert isinstance(null.item, DocumentError)
    assert not null.item.place


def test_an_id_of_only_whitespace_is_an_id_like_any_other(tmp_path: Path) -> None:
    """Refused, it was set aside under its place, and a place holds back every deletion of
    a LanceDB sync: one such row kept every removed document's rows."""
    write(tmp_path / "w.parquet", {"id": ["  ", "a", "A"], "text": ["x", "y", "w"]})
    items = list(loader(tmp_path / "w.parquet").read())
    assert documents(items) == [("  ", "x"), ("a", "y"), ("A", "w")], "case makes another id"
