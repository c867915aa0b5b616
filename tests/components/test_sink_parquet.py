"""The ``parquet`` sink: a file every data tool reads as it is, resumable by row group."""

from __future__ import annotations

import gc
import hashlib
import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import structlog
from pydantic import ValidationError

from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import ContractViolation, OutputRecord, UserError
from tests.adapters.tampered_search import first_value_changed
from tests.components.test_sinks import ERRORS, make_records, read_jsonl, visible

# pyarrow, DuckDB and LanceDB are imported by the tests that use them, not when pytest
# collects this module: a process pytest starts later (the attention benchmark's workers)
# inherits the peak memory of the collecting process, and they would add about 100 MB.

if TYPE_CHECKING:
    from pathlib import Path

MANIFEST = {"pipeline": "p", "model": {"use": "bert-encoder", "with": {"weights": "w"}}}


def with_text(records: list[OutputRecord]) -> list[OutputRecord]:
    """``records`` with a text each, as the orchestrator gives them (sink contract 1.2)."""
    return [
        OutputRecord(
            r.doc_id, r.index, r.span, r.vector, r.metadata, f"text of {r.doc_id}/{r.index}"
        )
        for r in records
    ]


def sink(tmp_path: Path, **options: Any) -> ParquetSink:
    return ParquetSink(ParquetSinkConfig(path=tmp_path / "out" / "emb.parquet", **options))


def rows(tmp_path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return list(pq.read_table(tmp_path / "out" / "emb.parquet").to_pylist())


def assert_rows(tmp_path: Path, records: list[OutputRecord]) -> None:
    """The published rows are ``records``, once each, in order, vectors bit for bit."""
    got = rows(tmp_path)
    assert [(r["id"], r["window_index"], r["span_start"], r["span_end"]) for r in got] == [
        (r.doc_id, r.index, *r.span) for r in records
    ]
    for row, record in zip(got, records, strict=True):
        np.testing.assert_array_equal(np.asarray(row["embedding"], np.float32), record.vector)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == visible(out), "nothing hidden is left"


def test_round_trip_through_pyarrow_and_duckdb(tmp_path: Path) -> None:
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = with_text(make_records(10))
    out = sink(tmp_path, row_group_size=4)
    out.start(MANIFEST)
    for start in range(0, 10, 3):
        out.write(records[start : start + 3])
    out.write_error(ERRORS[0])
    assert visible(tmp_path / "out") == [], "nothing is visible before close"
    out.close()

    path = tmp_path / "out" / "emb.parquet"
    assert_rows(tmp_path, records)
    file = pq.ParquetFile(path)
    groups = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
    assert groups == [4, 4, 2]
    schema = file.schema_arrow
    assert schema.field("embedding").type == pa.list_(pa.float32(), 8)
    assert schema.field("metadata").type == pa.struct(
        [("lang", pa.string()), ("score", pa.float64())]
    )
    assert [r["text"] for r in rows(tmp_path)] == [r.text for r in records]

    found = duckdb.sql(
        f"SELECT id, window_index, span_start, text, metadata.lang, len(embedding) "
        f"FROM read_parquet('{path}') WHERE metadata.lang = 'en' ORDER BY span_start"
    ).fetchall()
    odd = [r for r in records if r.metadata]
    assert found == [(r.doc_id, r.index, r.span[0], r.text, "en", 8) for r in odd]
    [(first,)] = duckdb.sql(f"SELECT embedding FROM read_parquet('{path}') LIMIT 1").fetchall()
    np.testing.assert_array_equal(np.asarray(first, np.float32), records[0].vector)

    footer = json.loads(schema.metadata[b"seamline.manifest"])
    beside = json.loads((tmp_path / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    # The manifest beside the file keeps the file's sha256, which its footer cannot hold.
    assert beside["outputs"].pop("sha256") == {
        "emb.parquet": hashlib.sha256(path.read_bytes()).hexdigest()
    }
    assert footer == beside
    assert beside["outputs"] == {
        "sink": "parquet",
        "files": {"errors": "emb.errors.jsonl", "parquet": "emb.parquet"},
        "rows": {"emb.parquet": 10},
    }
    assert [e["id"] for e in read_jsonl(tmp_path / "out" / "emb.errors.jsonl")] == ["bad.txt"]


def test_resume_continues_after_the_last_committed_row_group(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    records = with_text(make_records(12, seed=1))
    a, b, c = records[:5], records[5:8], records[8:]
    first = sink(tmp_path, row_group_size=2)
    first.start(MANIFEST)
    first.write(a)
    first.commit("c1")
    first.write(b)  # two of these reach a second part on disk; then the process dies
    parts = tmp_path / "out" / ".emb.parquet.partial.tmp"
    assert sorted(p.name for p in parts.iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    del first
    gc.collect()

    checkpoint = json.loads((tmp_path / "out" / ".emb.parquet.checkpoint").read_text())
    assert [(p["name"], p["rows"]) for p in checkpoint["state"]["parts"]] == [
        ("part-00000.parquet", 5)
    ]
    second = sink(tmp_path, row_group_size=2)
    assert second.recover(MANIFEST) == "c1"
    assert sorted(p.name for p in parts.iterdir()) == ["part-00000.parquet"], (
        "the part written after the commit is gone"
    )
    second.write(b + c)
    second.close()
    assert_rows(tmp_path, records)
    file = pq.ParquetFile(tmp_path / "out" / "emb.parquet")
    assert [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)] == [2] * 6


def test_a_committed_part_changed_after_its_checkpoint_is_refused(tmp_path: Path) -> None:
    first = sink(tmp_path)
    first.write(make_records(3))
    first.commit("c1")
    first.close(complete=False)
    part = tmp_path / "out" / ".emb.parquet.partial.tmp" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[:-10])
    with pytest.raises(UserError, match="changed after the checkpoint"):
        sink(tmp_path).recover({})


def test_resuming_with_other_columns_is_refused(tmp_path: Path) -> None:
    first = sink(tmp_path)
    first.write(with_text(make_records(3)))
    first.commit("c1")
    first.close(complete=False)
    with pytest.raises(UserError, match=r"text=True.*set to text=False"):
        sink(tmp_path, text=False).recover({})
    assert sink(tmp_path).recover({}) == "c1", "the refused resume changed nothing"


def test_metadata_columns_keep_the_keys_named_and_types_are_not_cast(tmp_path: Path) -> None:
    vector = np.ones(4, np.float32)
    records = [
        OutputRecord("a", 0, (0, 1), vector, {"n": 1, "tag": "x", "extra": True}),
        OutputRecord("b", 0, (0, 1), vector, {"n": 2, "tag": {"nested": [1, 2]}}),
        OutputRecord("c", 0, (0, 1), vector, {}),
    ]
    out = sink(tmp_path, metadata_columns=["n", "tag"], text=False)
    out.write(records)
    out.close()
    got = rows(tmp_path)
    assert "text" not in got[0]
    # A non-string value of a string field is kept as its JSON text; a missing key is null.
    assert [r["metadata"] for r in got] == [
        {"n": 1, "tag": "x"},
        {"n": 2, "tag": '{"nested": [1, 2]}'},
        {"n": None, "tag": None},
    ]

    strict = sink(tmp_path / "again")
    strict.write([OutputRecord("a", 0, (0, 1), vector, {"n": 1})])
    with pytest.raises(UserError, match=r"metadata 'n' of document 'b' is 1\.5 \(float\).*int64"):
        strict.write([OutputRecord("b", 0, (0, 1), vector, {"n": 1.5})])


def test_a_key_whose_values_hold_an_empty_object_is_kept_as_text(tmp_path: Path) -> None:
    # A JSON {} became a struct of no fields: Parquet cannot write one (nor Lance), and the
    # run failed at close, after all its work, publishing nothing.
    vector = np.ones(4, np.float32)
    metadata = {"e": {}, "n": {"a": {}, "b": 1}, "l": [{}], "fine": {"a": [1]}}
    out = sink(tmp_path, text=False)
    out.write([OutputRecord(f"d{i}", 0, (0, 1), vector, metadata) for i in range(2)])
    out.write([OutputRecord("late", 0, (0, 1), vector, {"e": {"x": 2}})])
    out.close()
    got = [r["metadata"] for r in rows(tmp_path)]
    kept = {"e": "{}", "n": '{"a": {}, "b": 1}', "l": "[{}]", "fine": {"a": [1]}}
    assert got == [kept, kept, {"e": '{"x": 2}', "n": None, "l": None, "fine": None}]


def test_a_nested_key_the_first_records_lacked_is_refused_not_dropped(tmp_path: Path) -> None:
    # pyarrow converts {"author": "y", "year": 2020} to a struct<author> without a word:
    # the year was silently missing from the output.
    vector = np.ones(4, np.float32)
    out = sink(tmp_path)
    out.write([OutputRecord("a", 0, (0, 1), vector, {"m": {"author": "x", "n": [{"k": 1}]}})])
    out.write([OutputRecord("b", 0, (0, 1), vector, {"m": {"author": None, "n": None}})])
    for late in ({"author": "y", "year": 2020}, {"n": [{"k": 1, "extra": True}]}):
        with pytest.raises(UserError, match=r"metadata 'm' of document 'c' .* does not fit"):
            out.write([OutputRecord("c", 0, (0, 1), vector, {"m": late})])


def test_a_key_that_appears_after_the_first_batch_is_reported(tmp_path: Path) -> None:
    vector = np.ones(4, np.float32)
    out = sink(tmp_path)
    out.write([OutputRecord("a", 0, (0, 1), vector, {"lang": "en"})])
    with structlog.testing.capture_logs() as logs:
        out.write([OutputRecord("b", 0, (0, 1), vector, {"lang": "de", "late": 1})] * 2)
    out.close()
    warnings = [line for line in logs if line["event"] == "metadata key not stored"]
    assert [(w["key"], w["document"]) for w in warnings] == [("late", "b")], "once per key"
    metadata = [r["metadata"] for r in rows(tmp_path)]
    assert metadata == [{"lang": "en"}, {"lang": "de"}, {"lang": "de"}]


def test_keys_after_a_first_batch_without_any_metadata_are_reported(tmp_path: Path) -> None:
    # The first records had no metadata, so the output has no metadata struct at all: the
    # later keys were dropped without the warning a struct of other keys gives.
    vector = np.ones(4, np.float32)
    out = sink(tmp_path)
    out.write([OutputRecord("a", 0, (0, 1), vector, {})])
    with structlog.testing.capture_logs() as logs:
        out.write([OutputRecord("b", 0, (0, 1), vector, {"source": "wiki"})])
        out.write([OutputRecord("c", 0, (0, 1), vector, {"source": "news", "lang": "en"})])
    out.close()
    warnings = [line for line in logs if line["event"] == "metadata key not stored"]
    assert [(w["key"], w["document"]) for w in warnings] == [("source", "b"), ("lang", "c")]
    assert "metadata_columns" in warnings[0]["reason"]


def _rows_dropped(table: Any) -> Any:
    return table.slice(0, table.num_rows - 2)


@pytest.mark.parametrize(
    ("edit", "refusal"),
    [
        (_rows_dropped, r"emb\.parquet holds 8 records, but .*emb\.manifest\.json counted 10"),
        (first_value_changed, r"emb\.parquet is not the parquet file .*another sha256"),
    ],
    ids=["rows dropped", "a value changed"],
)
def test_a_file_rewritten_with_its_footer_kept_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Any, refusal: str
) -> None:
    """The file rewritten by a data tool, its footer's manifest kept, rows dropped or a
    value changed: every reader (search, open_index, serve) refuses it, where it searched
    what was left without a word."""
    import pyarrow.parquet as pq

    from seamline.contracts import readback

    monkeypatch.setattr(readback, "REREAD_PAUSE", 0.0)
    out = sink(tmp_path)
    out.start(MANIFEST)
    out.write(with_text(make_records(10)))
    out.close()
    path = tmp_path / "out" / "emb.parquet"
    table = pq.read_table(path)
    pq.write_table(edit(table).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(UserError, match=refusal):
        readback.read_records(path, ParquetSink)


def test_vectors_of_another_width_are_a_contract_violation(tmp_path: Path) -> None:
    out = sink(tmp_path)
    out.write([OutputRecord("a", 0, (0, 1), np.ones(4, np.float32))])
    with pytest.raises(
        ContractViolation, match="vector has 5 values but the parquet output's have 4"
    ):
        out.write([OutputRecord("b", 0, (0, 1), np.ones(5, np.float32))])


def test_an_empty_run_publishes_a_readable_empty_file(tmp_path: Path) -> None:
    import duckdb
    import pyarrow.parquet as pq

    out = sink(tmp_path)
    out.start(MANIFEST)
    out.close()
    path = tmp_path / "out" / "emb.parquet"
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{path}')").fetchall() == [(0,)]
    assert pq.read_table(path).column_names == [
        "id", "window_index", "span_start", "span_end", "text", "embedding",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"errors_path": "out/emb.parquet"}, "path .* and errors_path .* are the same file"),
        ({"row_group_size": 0}, "greater than or equal to 1"),
        ({"compression": "brotli9"}, "'zstd', 'snappy', 'gzip', 'lz4' or 'none'"),
    ],
)
def test_bad_settings_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ParquetSinkConfig(path="out/emb.parquet", **options)
