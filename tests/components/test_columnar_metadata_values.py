"""Metadata values a columnar sink's column types cannot hold: stored losslessly, or named.

A loader copies metadata from files seamline did not write: a Parquet ``uint64``
column holds 2⁶⁴−1, a JSON number can have 30 digits. The ``parquet`` and
``lancedb`` sinks must keep such a value exactly, or refuse it with the document and
the key; never end the run with a bare ``OverflowError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import OutputRecord, UserError
from tests.components.test_sink_staged_columnar import MANIFEST, staged

if TYPE_CHECKING:
    from pathlib import Path

MAX_UINT64 = 2**64 - 1
VECTOR = np.ones(4, np.float32)


def make(kind: str, out: Path) -> Any:
    if kind == "parquet":
        return ParquetSink(ParquetSinkConfig(path=out / "emb.parquet"))
    return LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance"))


def published_metadata(kind: str, out: Path) -> list[dict[str, Any]]:
    if kind == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(out / "emb.parquet")
    else:
        import lancedb

        table = lancedb.connect(str(out)).open_table("emb").to_arrow().sort_by("id")
    return [row["metadata"] for row in table.to_pylist()]


def record(doc_id: str, **metadata: Any) -> OutputRecord:
    return OutputRecord(doc_id, 0, (0, 1), VECTOR, metadata, doc_id)


@pytest.mark.parametrize("kind", ["parquet", "lancedb"])
def test_integers_beyond_int64_are_stored_exactly(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sink = make(kind, tmp_path / "out")
    sink.start(MANIFEST)
    sink.write([record("a", n=MAX_UINT64, huge=2**70, small=-1), record("b", n=7, small=3)])
    sink.close()
    assert published_metadata(kind, tmp_path / "out") == [
        # uint64 for the unsigned key; the one beyond every 64-bit type keeps its digits.
        {"n": MAX_UINT64, "huge": "1180591620717411303424", "small": -1},
        {"n": 7, "huge": None, "small": 3},
    ]


@pytest.mark.parametrize("kind", ["parquet", "lancedb"])
@pytest.mark.parametrize(
    ("first", "later", "column"),
    [
        (1, MAX_UINT64, "int64, -9223372036854775808 to 9223372036854775807"),
        (MAX_UINT64, -1, "uint64, 0 to 18446744073709551615"),
        (MAX_UINT64, 2**64, "uint64, 0 to 18446744073709551615"),
    ],
)
def test_an_integer_outside_the_column_names_the_document_and_the_key(
    kind: str, tmp_path: Path, first: int, later: int, column: str
) -> None:
    sink = make(kind, tmp_path / "out")
    sink.start(MANIFEST)
    sink.write([record("a", n=first)])
    with pytest.raises(UserError) as refused:
        sink.write([record("doc-9", n=later)])
    sink.close(complete=False)
    said = str(refused.value)
    assert f"metadata 'n' of document 'doc-9' is {later} (int)" in said
    assert f"metadata.n of type {column}" in said


def test_parts_that_saw_signed_and_unsigned_integers_publish_their_digits(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = [[record("a", n=-1)], [record("b", n=MAX_UINT64)]]
    staged(lambda: make("parquet", tmp_path / "out"), parts)
    table = pq.read_table(tmp_path / "out" / "emb.parquet")
    assert table.schema.field("metadata").type == pa.struct([("n", pa.string())])
    assert [row["metadata"]["n"] for row in table.to_pylist()] == ["-1", str(MAX_UINT64)]


def test_a_uint64_parquet_column_reaches_lancedb_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from seamline.components.loaders.parquet import ParquetLoader
    from seamline.core.config import parse_pipeline
    from seamline.core.orchestrator import Orchestrator
    from tests.components.test_loader_parquet import registry_with

    monkeypatch.chdir(tmp_path)
    counts = pa.array([MAX_UINT64, 0, 2**63], pa.uint64())
    table = pa.table({"id": ["a", "b", "c"], "text": ["x y", "z", "w"], "n": counts})
    pq.write_table(table, "in.parquet")
    registry = registry_with(ParquetLoader, LanceDbSink)
    text = (
        "pipeline: uint64\n"
        "loader: {use: parquet, with: {path: in.parquet, metadata_columns: [n]}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance}}\n"
        "run: {batch_size: 2, buckets: [4]}\n"
    )
    summary = Orchestrator(parse_pipeline(text, "p.yaml", registry), registry).run()
    assert summary.counts.documents == 3
    assert published_metadata("lancedb", tmp_path / "out") == [
        {"n": MAX_UINT64},
        {"n": 0},
        {"n": 2**63},
    ]


INTEGER_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("name", INTEGER_TYPES)
def test_integer_limits_are_numpys_for_each_arrow_integer(name: str) -> None:
    import pyarrow as pa

    from seamline.components.sinks._columns import integer_limits

    limits = integer_limits(getattr(pa, name)())
    assert (limits.min, limits.max) == (np.iinfo(name).min, np.iinfo(name).max)


def test_integer_columns_never_ask_pyarrow_for_a_pandas_dtype() -> None:
    """``DataType.to_pandas_dtype()`` imports pandas before pyarrow 26, and seamline declares
    pyarrow>=17 without pandas: a run whose metadata has an integer column failed there with
    "No module named 'pandas'". This pyarrow does not import it, so the source is checked."""
    import inspect

    from seamline.components.sinks import _columns

    assert ".to_pandas_dtype(" not in inspect.getsource(_columns)


def one_type_columns() -> Any:
    """Parquet columns of one type each, whose first rows give inference too narrow a type."""
    import decimal

    import pyarrow as pa

    pair = pa.struct([("a", pa.int64()), ("b", pa.string())])
    return {
        "id": [f"d{i}" for i in range(4)],
        "text": ["x y", "z", "w", "v"],
        "tags": pa.array([[], [], ["urgent"], []], pa.list_(pa.string())),
        "pair": pa.array(
            [{"a": 1, "b": None}, {"a": 2, "b": None}, {"a": 3, "b": "x"}, None], pair
        ),
        "price": pa.array(
            [decimal.Decimal(v) for v in ("1.00", "2.50", "123456789012.34", "-0.01")],
            pa.decimal128(38, 2),
        ),
    }


@pytest.mark.parametrize("kind", ["parquet", "lancedb"])
def test_a_column_of_one_type_is_written_whatever_its_first_batch_holds(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first batch (2 rows) held only empty lists, nulls for 'b' and 3-digit decimals:
    # list<null>, struct<b: null> and decimal128(3, 2) refused the third row, and the run.
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from seamline.components.loaders.parquet import ParquetLoader
    from seamline.core.config import parse_pipeline
    from seamline.core.orchestrator import Orchestrator
    from tests.components.test_loader_parquet import registry_with

    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table(one_type_columns()), "in.parquet")
    sink = {"parquet": "out/emb.parquet", "lancedb": "out/emb.lance"}[kind]
    registry = registry_with(ParquetLoader, ParquetSink, LanceDbSink)
    text = (
        "pipeline: one-type\n"
        "loader: {use: parquet, with: {path: in.parquet, "
        "metadata_columns: [tags, pair, price]}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {kind}, with: {{path: {sink}}}}}\n"
        "run: {batch_size: 2, buckets: [4]}\n"
    )
    summary = Orchestrator(parse_pipeline(text, "p.yaml", registry), registry).run()
    assert summary.counts.documents == 4
    assert published_metadata(kind, tmp_path / "out") == [
        {"tags": [], "pair": {"a": 1, "b": None}, "price": decimal.Decimal("1.00")},
        {"tags": [], "pair": {"a": 2, "b": None}, "price": decimal.Decimal("2.50")},
        {
            "tags": ["urgent"],
            "pair": {"a": 3, "b": "x"},
            "price": decimal.Decimal("123456789012.34"),
        },
        {"tags": [], "pair": None, "price": decimal.Decimal("-0.01")},
    ]


def test_a_part_the_first_batch_left_empty_keeps_any_later_value_as_text(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    sink = make("parquet", tmp_path / "out")
    sink.start(MANIFEST)
    sink.write([record("a", tags=[], pair={"a": 1, "b": None})])
    sink.write([record("b", tags=["x", 2, {"k": 1}], pair={"a": 2, "b": [1, 2]})])
    sink.close()
    table = pq.read_table(tmp_path / "out" / "emb.parquet")
    assert str(table.schema.field("metadata").type) == (
        "struct<tags: list<element: string>, pair: struct<a: int64, b: string>>"
    )
    assert published_metadata("parquet", tmp_path / "out")[1] == {
        "tags": ["x", "2", '{"k": 1}'],
        "pair": {"a": 2, "b": "[1, 2]"},
    }


def test_a_later_value_wider_than_the_first_batchs_names_the_first_batch(tmp_path: Path) -> None:
    # The values are of one type in the input (uint64): "give the key values of one type"
    # could not be followed.
    sink = make("parquet", tmp_path / "out")
    sink.start(MANIFEST)
    sink.write([record("a", n=1)])
    with pytest.raises(UserError) as refused:
        sink.write([record("doc-9", n=MAX_UINT64)])
    sink.close(complete=False)
    said = str(refused.value)
    assert "typed from the values of the first records written (one batch)" in said
    assert "raise run.batch_size" in said
    assert "one type in the input" not in said


@pytest.mark.parametrize("kind", ["parquet", "lancedb"])
def test_a_value_in_a_string_field_is_stored_as_the_jsonl_sink_writes_it(
    kind: str, tmp_path: Path
) -> None:
    # Stored as json.dumps wrote it: '"AP8="' (quoted, not base64), 'NaN' (not JSON),
    # '"2021-03-04"'; the jsonl sink writes AP8=, null and 2021-03-04.
    import datetime

    nan, first = float("nan"), {"blob": None, "x": None, "day": None, "xs": [], "obj": None}
    later = {
        "blob": b"\x00\xff",
        "x": nan,
        "day": datetime.date(2021, 3, 4),
        "xs": [nan, 1.5, float("inf"), b"\x01"],
        "obj": {"x": nan, "b": b"\x01", "day": datetime.date(2021, 3, 4)},
    }
    sink = make(kind, tmp_path / "out")
    sink.start(MANIFEST)
    sink.write([record("a", **first)])
    sink.write([record("b", **later)])
    sink.close()
    assert published_metadata(kind, tmp_path / "out")[1] == {
        "blob": "AP8=",
        "x": None,
        "day": "2021-03-04",
        "xs": [None, "1.5", None, "AQ=="],
        "obj": '{"b": "AQ==", "day": "2021-03-04", "x": null}',
    }


@pytest.mark.parametrize("kind", ["parquet", "lancedb"])
def test_parts_whose_first_batch_left_a_part_empty_merge_into_one_output(
    kind: str, tmp_path: Path
) -> None:
    # Shard 1 saw only an empty list and a null field first (list<string>, struct<b:
    # string>), shard 0 integers: publication stopped, "give the key values of one type".
    parts = [
        [record("a", li=[1, 2], pair={"a": 1, "b": 5}, deep={"xs": [[1.5]]})],
        [record("b", li=[], pair={"a": 2, "b": None}, deep={"xs": []})],
        [record("c", li=["x"], pair={"a": 3, "b": "x"}, deep={"xs": [["y", None]]})],
    ]
    staged(lambda: make(kind, tmp_path / "out"), parts)
    if kind == "parquet":
        import pyarrow.parquet as pq

        schema = pq.read_schema(tmp_path / "out" / "emb.parquet")
        assert str(schema.field("metadata").type) == (
            "struct<li: list<element: string>, pair: struct<a: int64, b: string>, "
            "deep: struct<xs: list<element: string>>>"
        )
    assert published_metadata(kind, tmp_path / "out") == [
        {"li": ["1", "2"], "pair": {"a": 1, "b": "5"}, "deep": {"xs": ["[1.5]"]}},
        {"li": [], "pair": {"a": 2, "b": None}, "deep": {"xs": []}},
        {"li": ["x"], "pair": {"a": 3, "b": "x"}, "deep": {"xs": ['["y", null]']}},
    ]
