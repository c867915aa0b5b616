"""The ``jsonl`` and ``npy`` sinks: atomic publication, round trips, bounded memory."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from pydantic import ValidationError

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.npy import HEADER_BYTES, NpySink, NpySinkConfig, npy_header
from seamline.contracts import (
    ContractViolation,
    DocumentError,
    OutputRecord,
    Shard,
    Sink,
    UserError,
    readback,
)
from seamline.contracts.sink_kit import AtomicFile, AtomicGroup

if TYPE_CHECKING:
    from pathlib import Path

DIM = 8


def make_records(count: int, *, seed: int = 0, start: int = 0) -> list[OutputRecord]:
    """Records with awkward float32 values (not short decimals) and some metadata."""
    rng = np.random.default_rng(seed)
    records = []
    for i in range(start, start + count):
        vector = rng.standard_normal(DIM).astype(np.float32)
        metadata = {"lang": "en", "score": np.float32(0.5)} if i % 2 else {}
        records.append(
            OutputRecord(
                doc_id=f"doc-{i // 2}",
                index=i % 2,
                span=(i * 10, i * 10 + 7),
                vector=vector,
                metadata=metadata,
            )
        )
    return records


ERRORS = [
    DocumentError(id="bad.txt", reason="not valid utf-8: invalid start byte at byte offset 2"),
    DocumentError(id="big.txt", reason="larger than max_bytes=5", metadata={"path": "/x/big.txt"}),
]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def visible(directory: Path) -> list[str]:
    """Names a reader globbing the directory would see (temporary files are hidden)."""
    return sorted(path.name for path in directory.iterdir() if not path.name.startswith("."))


def all_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.rglob("*") if path.is_file())


def jsonl_sink(tmp_path: Path, **options: Any) -> JsonlSink:
    return JsonlSink(JsonlSinkConfig(path=tmp_path / "out" / "emb.jsonl", **options))


def npy_sink(tmp_path: Path, **options: Any) -> NpySink:
    return NpySink(NpySinkConfig(path=tmp_path / "out" / "emb.npy", **options))


# --- both sinks -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "cls"), [("jsonl", JsonlSink), ("npy", NpySink)])
def test_sinks_declare_themselves_and_are_registered(name: str, cls: type[Sink[Any]]) -> None:
    assert cls.name == name
    assert cls.kind == "sink"
    assert (
        cls.contract_version == "1.6"
    )  # 1.2: text; 1.3: staged parts; 1.4: a reader; 1.5: counts; 1.6: a hold
    assert cls.reader is not None
    assert cls.resumable
    assert cls.stageable
    registered = {ep.name: ep for ep in entry_points(group="seamline.sink")}
    assert registered[name].load() is cls
    for field in cls.Config.model_fields.values():
        assert field.description


@pytest.mark.parametrize("kind", ["jsonl", "npy"])
@pytest.mark.parametrize("text", [True, False])
def test_each_windows_text_is_stored_unless_text_is_false(
    tmp_path: Path, kind: str, text: bool
) -> None:
    """What search shows as a snippet (sink contract 1.2). The jsonl and npy sinks dropped it,
    while the docs (and search's "(no text stored)") said every first-party sink kept it."""
    vector = np.ones(DIM, np.float32)
    records = [
        OutputRecord("d0", 0, (0, 5), vector, {}, "alpha"),
        OutputRecord("d1", 0, (0, 4), vector, {}, "b\ud800\tc"),  # a lone surrogate, a tab
        OutputRecord("d2", 0, (0, 4), vector, {}, None),  # made by hand: no text
    ]
    make = jsonl_sink if kind == "jsonl" else npy_sink
    sink = make(tmp_path, text=text)
    sink.start({})
    sink.write(records)
    sink.close()
    read = readback.read_records(tmp_path / "out" / f"emb.{kind}", type(sink))
    assert read is not None
    stored = [record.text for record in read]
    assert stored == (["alpha", "b\\ud800\tc", None] if text else [None, None, None])


@pytest.mark.parametrize("kind", ["jsonl", "npy"])
def test_a_text_holding_a_unicode_line_break_stays_on_one_line(tmp_path: Path, kind: str) -> None:
    """U+2028, U+2029 and NEL are line breaks to ``str.splitlines`` (and to other line
    readers), and JSON need not escape them: written raw, one record read back as two
    broken lines (the golden corpus's whitespace text did)."""
    text = "one\u2028two\u2029three\x85four"
    sink = (jsonl_sink if kind == "jsonl" else npy_sink)(tmp_path, text=True)
    sink.start({})
    sink.write([OutputRecord("d0", 0, (0, len(text)), np.ones(DIM, np.float32), {}, text)])
    sink.close()
    lines_file = tmp_path / "out" / ("emb.jsonl" if kind == "jsonl" else "emb.index.jsonl")
    lines = lines_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["text"] == text


@pytest.fixture(params=["jsonl", "npy"])
def sink_factory(request: pytest.FixtureRequest) -> Any:
    return jsonl_sink if request.param == "jsonl" else npy_sink


def test_nothing_is_visible_before_close(tmp_path: Path, sink_factory: Any) -> None:
    sink = sink_factory(tmp_path)
    sink.write(make_records(5))
    sink.write_error(ERRORS[0])
    out = tmp_path / "out"
    assert visible(out) == [], "only hidden temporary files exist before close"
    assert all(name.endswith(".tmp") for name in all_files(out))
    sink.close(complete=False)


def test_close_incomplete_publishes_nothing_and_cleans_up(
    tmp_path: Path, sink_factory: Any
) -> None:
    sink = sink_factory(tmp_path)
    sink.write(make_records(5))
    sink.write_error(ERRORS[0])
    sink.close(complete=False)
    assert all_files(tmp_path / "out") == []


def test_close_incomplete_keeps_an_earlier_output(tmp_path: Path, sink_factory: Any) -> None:
    first = sink_factory(tmp_path)
    first.write(make_records(2))
    first.close()
    before = {name: (tmp_path / "out" / name).read_bytes() for name in visible(tmp_path / "out")}

    second = sink_factory(tmp_path)
    second.write(make_records(6, seed=1))
    second.close(complete=False)
    after = {name: (tmp_path / "out" / name).read_bytes() for name in all_files(tmp_path / "out")}
    assert after == before


def test_complete_close_replaces_an_earlier_output(tmp_path: Path, sink_factory: Any) -> None:
    first = sink_factory(tmp_path)
    first.write(make_records(6))
    first.write_error(ERRORS[0])
    first.close()
    second = sink_factory(tmp_path)
    second.write(make_records(2, seed=1))
    second.close()
    assert read_jsonl(tmp_path / "out" / "emb.errors.jsonl") == []
    assert not any(name.endswith(".tmp") for name in all_files(tmp_path / "out"))


def test_constructing_a_sink_touches_nothing(tmp_path: Path, sink_factory: Any) -> None:
    sink_factory(tmp_path).close(complete=False)
    assert not (tmp_path / "out").exists()


def test_close_is_idempotent_and_write_after_close_fails(tmp_path: Path, sink_factory: Any) -> None:
    sink = sink_factory(tmp_path)
    sink.write(make_records(1))
    sink.close()
    published = {name: (tmp_path / "out" / name).read_bytes() for name in visible(tmp_path / "out")}
    sink.close()
    sink.close(complete=False)
    assert {n: (tmp_path / "out" / n).read_bytes() for n in visible(tmp_path / "out")} == published
    with pytest.raises(RuntimeError, match="after close"):
        sink.write(make_records(1))


def test_rows_stream_to_disk_instead_of_memory(tmp_path: Path, sink_factory: Any) -> None:
    sink = sink_factory(tmp_path)
    for batch in range(40):
        sink.write(make_records(50, seed=batch))
    # 2,000 rows of 8 float32s: at least 64 kB are already in the temporary files,
    # less at most one write buffer.
    on_disk = sum(path.stat().st_size for path in (tmp_path / "out").iterdir())
    assert on_disk >= 2000 * DIM * 4 - io.DEFAULT_BUFFER_SIZE
    sink.close(complete=False)


def test_errors_file_is_published_even_when_empty(tmp_path: Path, sink_factory: Any) -> None:
    sink = sink_factory(tmp_path)
    sink.write(make_records(2))
    sink.close()
    errors = tmp_path / "out" / "emb.errors.jsonl"
    assert errors.exists()
    assert errors.read_bytes() == b""


def test_errors_round_trip(tmp_path: Path, sink_factory: Any) -> None:
    sink = sink_factory(tmp_path)
    for error in ERRORS:
        sink.write_error(error)
    sink.close()
    assert read_jsonl(tmp_path / "out" / "emb.errors.jsonl") == [
        {"id": e.id, "stage": e.stage, "reason": e.reason, "metadata": dict(e.metadata)}
        for e in ERRORS
    ]


def test_output_path_that_is_a_directory_is_a_user_error(tmp_path: Path, sink_factory: Any) -> None:
    (tmp_path / "out" / "emb.jsonl").mkdir(parents=True)
    (tmp_path / "out" / "emb.npy").mkdir(parents=True)
    sink = sink_factory(tmp_path)
    with pytest.raises(UserError, match="is a directory"):
        sink.write(make_records(1))
    assert all_files(tmp_path / "out") == [], "temporary files already made are removed"


def test_two_dimensional_vectors_are_a_contract_violation(
    tmp_path: Path, sink_factory: Any
) -> None:
    sink = sink_factory(tmp_path)
    bad = OutputRecord(doc_id="d", index=0, span=(0, 1), vector=np.zeros((2, DIM), np.float32))
    with pytest.raises(ContractViolation, match="1-D"):
        sink.write([bad])
    sink.close(complete=False)


# --- jsonl sink -------------------------------------------------------------------------


def test_jsonl_records_round_trip(tmp_path: Path) -> None:
    records = make_records(7)
    sink = jsonl_sink(tmp_path)
    sink.write(records[:3])
    sink.write(records[3:])
    sink.close()
    out = tmp_path / "out"
    assert visible(out) == ["emb.errors.jsonl", "emb.jsonl", "emb.manifest.json"]
    lines = read_jsonl(out / "emb.jsonl")
    assert len(lines) == len(records)
    for line, record in zip(lines, records, strict=True):
        assert line["id"] == record.doc_id
        assert line["window"] == record.index
        assert line["span"] == list(record.span)
        # Exact: float32 -> JSON -> float32 loses nothing.
        np.testing.assert_array_equal(np.asarray(line["embedding"], np.float32), record.vector)
        if record.metadata:
            assert line["metadata"] == {"lang": "en", "score": 0.5}
        else:
            assert "metadata" not in line
    assert list(lines[0]) == ["id", "window", "span", "embedding"]


def test_jsonl_precision_rounds_values(tmp_path: Path) -> None:
    vector = np.array([0.123456789, -1.987654321, 3.0], np.float32)
    sink = jsonl_sink(tmp_path, precision=3)
    sink.write([OutputRecord(doc_id="d", index=0, span=(0, 3), vector=vector)])
    sink.close()
    (line,) = read_jsonl(tmp_path / "out" / "emb.jsonl")
    assert line["embedding"] == [0.123, -1.988, 3.0]


def test_jsonl_precision_that_would_ruin_the_vectors_is_refused(tmp_path: Path) -> None:
    # A unit vector of 384 values of about 0.05 each: precision 0 wrote all zeros (exit 0,
    # every search score 0), precision 2 a vector at cosine ~0.998 from the exact one.
    vector = np.random.default_rng(0).standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    for places, enough in ((0, 3), (2, 3)):
        sink = jsonl_sink(tmp_path, precision=places)
        with pytest.raises(UserError) as refused:
            sink.write([OutputRecord(doc_id="d", index=0, span=(0, 3), vector=vector)])
        said = str(refused.value)
        assert f"precision {places} rounds the vector of document 'd' (window 0)" in said
        assert f"Use a precision of at least {enough}" in said
        sink.close(complete=False)
    sink = jsonl_sink(tmp_path, precision=3)
    sink.write([OutputRecord(doc_id="d", index=0, span=(0, 3), vector=vector)])
    sink.close()
    (line,) = read_jsonl(tmp_path / "out" / "emb.jsonl")
    assert np.dot(line["embedding"], vector) > 0.999


def test_jsonl_custom_errors_path(tmp_path: Path) -> None:
    errors = tmp_path / "out" / "set-aside" / "failed.jsonl"
    sink = jsonl_sink(tmp_path, errors_path=errors)
    sink.write_error(ERRORS[0])
    sink.close()
    assert [line["id"] for line in read_jsonl(errors)] == ["bad.txt"]
    assert visible(tmp_path / "out") == ["emb.jsonl", "emb.manifest.json", "set-aside"]


def test_an_errors_path_outside_the_outputs_folder_is_refused(tmp_path: Path) -> None:
    # Its manifest would name a file outside its folder, which search refuses to read.
    with pytest.raises(ValueError, match=r"errors_path .* is outside the folder of path"):
        jsonl_sink(tmp_path, errors_path=tmp_path / "elsewhere" / "failed.jsonl")


def test_jsonl_non_finite_values_are_a_contract_violation(tmp_path: Path) -> None:
    sink = jsonl_sink(tmp_path)
    vector = np.array([1.0, np.nan], np.float32)
    with pytest.raises(ContractViolation, match="NaN"):
        sink.write([OutputRecord(doc_id="d", index=0, span=(0, 1), vector=vector)])
    sink.close(complete=False)


@pytest.mark.parametrize("kind", ["jsonl", "npy"])
def test_bytes_in_metadata_are_written_as_base64(tmp_path: Path, kind: str) -> None:
    # A Parquet binary column's values were written as Python's repr, "b'\\x00\\xff'".
    import base64

    sink = (jsonl_sink if kind == "jsonl" else npy_sink)(tmp_path)
    sink.start({})
    metadata = {"blob": b"\x00\xff", "empty": b"", "nested": {"parts": [b"\x01", None]}}
    sink.write([OutputRecord("d0", 0, (0, 1), np.ones(DIM, np.float32), metadata)])
    sink.close()
    lines_file = tmp_path / "out" / ("emb.jsonl" if kind == "jsonl" else "emb.index.jsonl")
    (line,) = read_jsonl(lines_file)
    assert line["metadata"] == {"blob": "AP8=", "empty": "", "nested": {"parts": ["AQ==", None]}}
    assert base64.b64decode(line["metadata"]["blob"]) == b"\x00\xff"


def test_jsonl_unusual_metadata_is_still_written(tmp_path: Path) -> None:
    sink = jsonl_sink(tmp_path)
    metadata = {"array": np.arange(3), "path": tmp_path, "tags": {"b", "a"}}
    vector = np.ones(2, np.float32)
    sink.write([OutputRecord(doc_id="d", index=0, span=(0, 1), vector=vector, metadata=metadata)])
    sink.close()
    (line,) = read_jsonl(tmp_path / "out" / "emb.jsonl")
    assert line["metadata"] == {"array": [0, 1, 2], "path": str(tmp_path), "tags": ["a", "b"]}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"precision": -1}, "between 0 and 17"),
        ({"errors_path": "SAME"}, "path .* and errors_path .* are the same file"),
        ({"compress": True}, "Extra inputs are not permitted"),
    ],
)
def test_jsonl_config_is_validated(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    path = tmp_path / "emb.jsonl"
    if options.get("errors_path") == "SAME":
        options = {"errors_path": path}
    with pytest.raises(ValidationError, match=message):
        JsonlSinkConfig(path=path, **options)


# --- npy sink ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_npy_matrix_and_index_round_trip(tmp_path: Path, dtype: str) -> None:
    records = make_records(9)
    sink = npy_sink(tmp_path, dtype=dtype)
    sink.write(records[:4])
    sink.write([])
    sink.write(records[4:])
    sink.write_error(ERRORS[1])
    sink.close()
    out = tmp_path / "out"
    assert visible(out) == [
        "emb.errors.jsonl",
        "emb.index.jsonl",
        "emb.manifest.json",
        "emb.npy",
    ]

    matrix = np.load(out / "emb.npy")
    assert matrix.shape == (9, DIM)
    assert matrix.dtype == np.dtype(dtype)
    expected = np.stack([record.vector for record in records]).astype(dtype)
    np.testing.assert_array_equal(matrix, expected)
    np.testing.assert_array_equal(np.load(out / "emb.npy", mmap_mode="r"), expected)

    index = read_jsonl(out / "emb.index.jsonl")
    assert [line["row"] for line in index] == list(range(9))
    for line, record in zip(index, records, strict=True):
        assert (line["id"], line["window"], line["span"]) == (
            record.doc_id,
            record.index,
            list(record.span),
        )
        assert ("metadata" in line) == bool(record.metadata)
    assert [line["id"] for line in read_jsonl(out / "emb.errors.jsonl")] == ["big.txt"]


def test_npy_with_no_rows_is_an_empty_matrix(tmp_path: Path) -> None:
    sink = npy_sink(tmp_path)
    sink.close()
    matrix = np.load(tmp_path / "out" / "emb.npy")
    assert matrix.shape == (0, 0)
    assert (tmp_path / "out" / "emb.index.jsonl").read_bytes() == b""


def test_npy_with_no_rows_reads_back_empty(tmp_path: Path) -> None:
    """A (0, 0) matrix (a sink that wrote nothing never learns the width) is no vectors:
    reading it crashed (a zero-size memoryview cast), and search refused it as "a vector
    of 0 values where the index's model makes 384"."""
    sink = npy_sink(tmp_path)
    sink.start({})
    sink.close()
    reader = readback.published(tmp_path / "out" / "emb.npy", NpySink)
    assert reader is not None
    assert [len(rows) for _, rows in reader[0].chunks(DIM)] == []
    assert readback.read_records(tmp_path / "out" / "emb.npy", NpySink) == []


def test_npy_staged_run_with_an_empty_part_reads_back(tmp_path: Path) -> None:
    """A run split into more shards than documents (the ray executor) left a part with no
    rows: the whole output was unreadable, and the run had exited 0."""
    out = tmp_path / "out"
    driver = npy_sink(tmp_path)
    driver.begin_parts("run1", 3, {})
    records = make_records(3)
    for index, written in enumerate([records[:2], [], records[2:]]):
        part = npy_sink(tmp_path).part("run1", Shard(index, 3))
        part.recover({})
        if written:
            part.write(written)
        part.close()
    driver.publish_parts("run1", 3, {})
    read = readback.read_records(out / "emb.npy", NpySink)
    assert read is not None
    assert [(r.doc_id, r.index) for r in read] == [(r.doc_id, r.index) for r in records]
    reader = readback.published(out / "emb.npy", NpySink)
    assert reader is not None
    assert [sum(len(rows) for _, rows in part.chunks(DIM)) for part in reader] == [2, 0, 1]


def test_npy_rows_of_different_widths_are_a_contract_violation(tmp_path: Path) -> None:
    sink = npy_sink(tmp_path)
    sink.write(make_records(2))
    wide = OutputRecord(doc_id="w", index=0, span=(0, 1), vector=np.zeros(DIM + 1, np.float32))
    with pytest.raises(ContractViolation, match=f"has {DIM + 1} values but earlier rows have"):
        sink.write([wide])
    sink.close()
    assert np.load(tmp_path / "out" / "emb.npy").shape == (2, DIM), "the bad batch wrote nothing"


def test_npy_custom_index_path(tmp_path: Path) -> None:
    index = tmp_path / "out" / "meta" / "rows.jsonl"
    sink = npy_sink(tmp_path, index_path=index)
    sink.write(make_records(3))
    sink.close()
    assert len(read_jsonl(index)) == 3
    assert visible(tmp_path / "out") == ["emb.errors.jsonl", "emb.manifest.json", "emb.npy", "meta"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dtype": "float64"}, "'float32' or 'float16'"),
        ({"index_path": "emb.npy"}, "path .* and index_path .* are the same file"),
        ({"index_path": "emb.errors.jsonl"}, "index_path .* and the errors file .* same file"),
    ],
)
def test_npy_config_is_validated(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    if "index_path" in options:
        options = {"index_path": tmp_path / options["index_path"]}
    with pytest.raises(ValidationError, match=message):
        NpySinkConfig(path=tmp_path / "emb.npy", **options)


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [("<f4", (0, 0)), ("<f2", (3, 384)), ("<f4", (10**18, 10**18))],
)
def test_npy_header_is_numpys_format_at_a_fixed_size(dtype: str, shape: tuple[int, int]) -> None:
    header = npy_header(np.dtype(dtype), shape)
    assert len(header) == HEADER_BYTES
    assert HEADER_BYTES % 64 == 0
    stream = io.BytesIO(header)
    assert np.lib.format.read_magic(stream) == (1, 0)
    assert np.lib.format.read_array_header_1_0(stream) == (shape, False, np.dtype(dtype))


def test_npy_header_refuses_what_does_not_fit() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        npy_header(np.dtype("<f4"), (10**40, 10**40))


# --- the atomic file helpers ------------------------------------------------------------


def test_atomic_file_publishes_whole_or_not_at_all(tmp_path: Path) -> None:
    destination = tmp_path / "a" / "b" / "file.bin"
    kept = AtomicFile(destination)
    kept.write(b"data")
    assert not destination.exists()
    kept.publish()
    assert destination.read_bytes() == b"data"
    assert not kept.temporary.exists()

    dropped = AtomicFile(destination)
    dropped.write(b"other")
    dropped.discard()
    assert destination.read_bytes() == b"data"
    assert not dropped.temporary.exists()


def test_atomic_group_discards_the_rest_when_publishing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = AtomicGroup()
    first = group.open(tmp_path / "first", purpose="test")
    second = group.open(tmp_path / "second", purpose="test")
    real = os.replace

    def replace(source: Any, destination: Any) -> None:
        if os.path.basename(destination) == "second":
            raise PermissionError(13, "Permission denied", str(source))
        real(source, destination)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(PermissionError) as failed:
        group.publish()
    assert failed.value.filename == str(tmp_path / "second"), "the destination is named"
    assert (tmp_path / "first").exists()
    assert not second.temporary.exists()
    assert not first.temporary.exists()


def test_atomic_group_refuses_a_folder_in_the_way_before_any_rename(tmp_path: Path) -> None:
    group = AtomicGroup()
    first = group.open(tmp_path / "first", purpose="test")
    second = group.open(tmp_path / "second", purpose="second file")
    (tmp_path / "second").mkdir()  # made after the files were opened, as by hand
    with pytest.raises(UserError, match=r"cannot publish the second file to .*second.*in the way"):
        group.publish()
    assert not (tmp_path / "first").exists(), "nothing is published"
    assert not second.temporary.exists()
    assert not first.temporary.exists()


@pytest.mark.parametrize("kind", ["jsonl", "npy"])
def test_manifest_is_published_beside_the_output(tmp_path: Path, kind: str) -> None:
    sink = jsonl_sink(tmp_path) if kind == "jsonl" else npy_sink(tmp_path)
    manifest = {"pipeline": "p", "model": {"use": "bert-encoder", "with": {"weights": "w"}}}
    sink.start(manifest)
    sink.write(make_records(2))
    assert not (tmp_path / "out" / "emb.manifest.json").exists()
    sink.close()
    written = json.loads((tmp_path / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    outputs = written.pop("outputs")
    assert written == manifest
    # Every file the sink published, relative to the manifest, so a reader needs nothing else.
    expected = (
        {"errors": "emb.errors.jsonl", "records": "emb.jsonl"}
        if kind == "jsonl"
        else {"errors": "emb.errors.jsonl", "index": "emb.index.jsonl", "matrix": "emb.npy"}
    )
    # And the records of each file of lines, which a reader checks (a file cut short at a
    # line boundary reads as a smaller, valid one).
    lines = {("emb.jsonl" if kind == "jsonl" else "emb.index.jsonl"): 2}
    # And the sha256 of each file of records (the npy sink's two, paired row by row): a
    # reader tells one publish's file from another's by it, and an edit in place from what
    # was published.
    sha256 = outputs.pop("sha256", None)
    assert outputs == {"sink": kind, "files": expected, "lines": lines}
    out = tmp_path / "out"
    digested = ("emb.jsonl",) if kind == "jsonl" else ("emb.index.jsonl", "emb.npy")
    assert sha256 == {
        name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in digested
    }
    for name in expected.values():
        assert (tmp_path / "out" / name).is_file()


def test_published_files_get_the_usual_mode(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        sink = jsonl_sink(tmp_path)
        sink.write(make_records(1))
        sink.close()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "out" / "emb.jsonl").stat().st_mode) == 0o644


# --- checkpoints and resume (sink contract 1.1) -------------------------------------------

MANIFEST = {"pipeline": "p", "model": {"use": "bert-encoder", "with": {"weights": "w"}}}


def published(tmp_path: Path, sink: Sink[Any]) -> list[tuple[str, int, list[int], np.ndarray]]:
    """The published records as ``(id, window, span, vector)``, in output order."""
    out = tmp_path / "out"
    if isinstance(sink, JsonlSink):
        return [
            (line["id"], line["window"], line["span"], np.asarray(line["embedding"], np.float32))
            for line in read_jsonl(out / "emb.jsonl")
        ]
    matrix = np.load(out / "emb.npy")
    index = read_jsonl(out / "emb.index.jsonl")
    assert [line["row"] for line in index] == list(range(len(matrix)))
    return [
        (line["id"], line["window"], line["span"], row)
        for line, row in zip(index, matrix, strict=True)
    ]


def assert_published(tmp_path: Path, sink: Sink[Any], records: list[OutputRecord]) -> None:
    """Exactly ``records``, once each and in order, with their vectors; nothing hidden left."""
    got = published(tmp_path, sink)
    assert [(r[0], r[1], r[2]) for r in got] == [(r.doc_id, r.index, list(r.span)) for r in records]
    for (*_, vector), record in zip(got, records, strict=True):
        np.testing.assert_array_equal(vector, record.vector)
    out = tmp_path / "out"
    assert all_files(out) == visible(out), "no partial file or checkpoint survives publishing"


def three_parts() -> tuple[list[OutputRecord], list[OutputRecord], list[OutputRecord]]:
    records = make_records(12, seed=3)
    return records[:5], records[5:9], records[9:]


def test_a_crash_after_a_commit_resumes_with_every_record_exactly_once(
    tmp_path: Path, sink_factory: Any
) -> None:
    a, b, c = three_parts()
    out = tmp_path / "out"
    first = sink_factory(tmp_path)
    first.start(MANIFEST)
    first.write(a)
    first.write_error(ERRORS[0])
    first.commit("c1")
    assert visible(out) == [], "a commit publishes nothing"
    first.write(b)
    first.write_error(ERRORS[1])
    # The process dies: no close. Dropping the object flushes its buffers, so the
    # uncommitted records really are in the partial files and must be cut off.
    del first

    second = sink_factory(tmp_path)
    assert second.recover(MANIFEST) == "c1"
    assert visible(out) == []
    second.write(b)
    second.write_error(ERRORS[1])
    second.write(c)
    assert visible(out) == [], "nothing under the final names before close(complete=True)"
    second.close()
    assert_published(tmp_path, second, a + b + c)
    assert [line["id"] for line in read_jsonl(out / "emb.errors.jsonl")] == ["bad.txt", "big.txt"]
    published = json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in published.items() if k != "outputs"} == MANIFEST


def test_the_last_of_several_commits_is_the_one_recovered(
    tmp_path: Path, sink_factory: Any
) -> None:
    a, b, c = three_parts()
    first = sink_factory(tmp_path)
    first.start(MANIFEST)
    first.write(a)
    first.commit("c1")
    first.write(b)
    first.commit("c2")
    first.write(c)
    del first
    second = sink_factory(tmp_path)
    assert second.recover(MANIFEST) == "c2"
    second.write(c[:1])  # less than was written after the commit: the rest must go
    second.close()
    assert_published(tmp_path, second, a + b + c[:1])


def test_close_incomplete_after_a_commit_keeps_it_for_a_resume(
    tmp_path: Path, sink_factory: Any
) -> None:
    a, b, _ = three_parts()
    first = sink_factory(tmp_path)
    first.start(MANIFEST)
    first.write(a)
    first.commit("c1")
    first.write(b)
    first.close(complete=False)
    assert visible(tmp_path / "out") == [], "a failed run publishes nothing"

    second = sink_factory(tmp_path)
    assert second.recover(MANIFEST) == "c1"
    second.write(b)
    second.close()
    assert_published(tmp_path, second, a + b)


def test_a_fresh_start_discards_an_interrupted_run(tmp_path: Path, sink_factory: Any) -> None:
    a, _, c = three_parts()
    first = sink_factory(tmp_path)
    first.start(MANIFEST)
    first.write(a)
    first.commit("c1")
    del first
    assert all_files(tmp_path / "out") != []

    second = sink_factory(tmp_path)
    second.start(MANIFEST)
    left = [name for name in all_files(tmp_path / "out") if not name.endswith(".lock")]
    assert left == [], "stale partial files and checkpoint are gone (the live run's lock stays)"
    second.write(c)
    second.close()
    assert_published(tmp_path, second, c)
    assert sink_factory(tmp_path).recover(MANIFEST) is None, "publishing removed the checkpoint"


def test_writing_without_start_does_not_resurrect_a_stale_checkpoint(
    tmp_path: Path, sink_factory: Any
) -> None:
    a, b, c = three_parts()
    first = sink_factory(tmp_path)
    first.write(a + b)
    first.commit("c1")
    del first
    second = sink_factory(tmp_path)  # no start(): the files are still opened afresh
    second.write(c)
    del second
    assert sink_factory(tmp_path).recover(MANIFEST) is None


def test_recover_without_a_checkpoint_starts_from_the_beginning(
    tmp_path: Path, sink_factory: Any
) -> None:
    a, b, c = three_parts()
    crashed = sink_factory(tmp_path)
    crashed.start(MANIFEST)
    crashed.write(b)  # written but never committed
    del crashed

    sink = sink_factory(tmp_path)
    assert sink.recover(MANIFEST) is None
    sink.write(a)
    sink.write(c)
    sink.close()
    assert_published(tmp_path, sink, a + c)


def test_recover_into_an_empty_directory_returns_none(tmp_path: Path, sink_factory: Any) -> None:
    a, _, _ = three_parts()
    sink = sink_factory(tmp_path)
    assert sink.recover(MANIFEST) is None
    sink.write(a)
    sink.close()
    assert_published(tmp_path, sink, a)


def test_resuming_with_another_model_is_refused(tmp_path: Path, sink_factory: Any) -> None:
    a, _, _ = three_parts()
    first = sink_factory(tmp_path)
    first.start(MANIFEST)
    first.write(a)
    first.commit("c1")
    first.close(complete=False)
    other = {**MANIFEST, "model": {"use": "bert-encoder", "with": {"weights": "other"}}}
    second = sink_factory(tmp_path)
    with pytest.raises(UserError, match="another model configuration"):
        second.recover(other)
    second.close(complete=False)
    assert sink_factory(tmp_path).recover(MANIFEST) == "c1", "the refused resume changed nothing"


def test_settings_an_older_seamline_did_not_record_are_said_to_be_that() -> None:
    # An output of a seamline that pinned no digests was refused as "another model
    # configuration (model.with.sha256 was None, now '53aa...')", naming no version.
    from seamline.contracts.sink_kit import model_changes

    then = {"use": "bert-encoder", "with": {"weights": "w"}}
    now = {"use": "bert-encoder", "with": {"weights": "w", "sha256": "53aa", "files_sha256": "d3"}}
    said = model_changes(then, now)
    assert "model.with.sha256 was not recorded, now '53aa'" in said
    assert said.endswith(
        "an older seamline's output, perhaps of the same model; this version cannot tell)"
    )
    other = {"use": "bert-encoder", "with": {"weights": "v", "sha256": "53aa"}}
    assert "older seamline" not in model_changes(then, other)  # the weights named changed


def test_a_setting_left_to_the_models_default_is_not_blamed_on_an_older_seamline() -> None:
    """A table the same seamline had made a minute before, with pooling left unset
    (recorded as None), was refused for an upsert with pooling: mean as "settings the
    seamline that wrote it did not record: an older seamline's output"."""
    from seamline.contracts.sink_kit import model_changes

    then = {"use": "bert-encoder", "with": {"weights": "w", "pooling": None}}
    now = {"use": "bert-encoder", "with": {"weights": "w", "pooling": "mean"}}
    said = model_changes(then, now)
    assert said == "model.with.pooling was unset (the model's default), now 'mean'"
    assert model_changes(now, then) == (
        "model.with.pooling was 'mean', now unset (the model's default)"
    )


@pytest.mark.parametrize(
    ("before", "said"),
    [
        (
            {"seamline-code": "aaaa", "jax": "0.10.0"},
            "another version of what computes it (seamline-code aaaa then, bbbb now)",
        ),
        (None, "a seamline that did not record its versions (from before 2026-12-05)"),
    ],
)
def test_resuming_what_another_version_made_is_refused(
    tmp_path: Path, sink_factory: Any, before: dict[str, str] | None, said: str
) -> None:
    # A run interrupted under one seamline and resumed by another (its windows cut another
    # way) published rows of both, as one output, exit 0.
    a, _, _ = three_parts()
    first = sink_factory(tmp_path)
    written = dict(MANIFEST) if before is None else {**MANIFEST, "versions": before}
    first.start(written)
    first.write(a)
    first.commit("c1")
    first.close(complete=False)
    now = {**MANIFEST, "versions": {"seamline-code": "bbbb", "jax": "0.10.0"}}
    second = sink_factory(tmp_path)
    with pytest.raises(UserError, match=re.escape(said)) as refused:
        second.recover(now)
    assert "--restart" in str(refused.value)
    second.close(complete=False)
    assert sink_factory(tmp_path).recover(written) == "c1", "the refused resume changed nothing"


def test_a_resume_refused_for_a_jax_change_offers_reinstalling_those_versions(
    tmp_path: Path, sink_factory: Any
) -> None:
    # Switching JAX 0.10.2 -> 0.9.0 between the stop and --resume was refused with only
    # "Run again with --restart", which discards what was committed; the XLA_FLAGS refusal
    # already said to resume with them as they were.
    a, _, _ = three_parts()
    then = {"seamline-code": "aaaa", "jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.3.0"}
    first = sink_factory(tmp_path)
    first.start({**MANIFEST, "versions": then})
    first.write(a)
    first.commit("c1")
    first.close(complete=False)
    now = {**MANIFEST, "versions": {**then, "jax": "0.9.0", "jaxlib": "0.9.0"}}
    second = sink_factory(tmp_path)
    with pytest.raises(UserError) as refused:
        second.recover(now)
    said = str(refused.value)
    assert "(jax 0.10.2 then, 0.9.0 now; jaxlib 0.10.2 then, 0.9.0 now)" in said
    assert said.endswith(
        "To keep what was committed, reinstall the versions it was made with (pip install "
        "jax==0.10.2 jaxlib==0.10.2) and run again with --resume (run(resume=True) from "
        "Python); or run again with --restart (run(restart=True) from Python) to start over"
    )
    second.close(complete=False)
    assert sink_factory(tmp_path).recover({**MANIFEST, "versions": then}) == "c1"


def test_no_reinstall_is_offered_where_seamline_itself_changed() -> None:
    from seamline.contracts.sink_kit._made_by import reinstall_command

    then = {"seamline-code": "aaaa", "jax": "0.10.2"}
    assert reinstall_command(then, {"seamline-code": "bbbb", "jax": "0.9.0"}) == ""
    assert reinstall_command(then, {"seamline-code": "aaaa", "jax": "0.9.0"}) == (
        "pip install jax==0.10.2"
    )
    assert reinstall_command(None, then) == ""


def test_a_partial_file_shorter_than_its_checkpoint_is_refused(
    tmp_path: Path, sink_factory: Any
) -> None:
    a, _, _ = three_parts()
    first = sink_factory(tmp_path)
    first.write(a)
    first.commit("c1")
    first.close(complete=False)
    partials = (tmp_path / "out").glob(".emb.*.partial.*.tmp")
    largest = max(partials, key=lambda path: path.stat().st_size)
    largest.write_bytes(b"")
    with pytest.raises(UserError, match="changed after the checkpoint"):
        sink_factory(tmp_path).recover({})


def test_npy_resume_with_another_dtype_is_refused(tmp_path: Path) -> None:
    first = npy_sink(tmp_path)
    first.write(make_records(3))
    first.commit("c1")
    first.close(complete=False)
    with pytest.raises(UserError, match="holds <f4 values, this sink writes <f2"):
        npy_sink(tmp_path, dtype="float16").recover({})


def test_npy_resume_keeps_counting_rows(tmp_path: Path) -> None:
    a, b, c = three_parts()
    first = npy_sink(tmp_path)
    first.write(a)
    first.commit("c1")
    first.write(b)
    del first
    second = npy_sink(tmp_path)
    assert second.recover({}) == "c1"
    second.write(b + c)
    second.close()
    matrix = np.load(tmp_path / "out" / "emb.npy")
    assert matrix.shape == (12, DIM)
    assert_published(tmp_path, second, a + b + c)


def test_a_manifest_holding_a_float_that_is_not_finite_is_still_strict_json(
    tmp_path: Path,
) -> None:
    """Python's json wrote ``Infinity`` (a figure read from a tampered precision record), and
    ``seamline search`` then refused the published output's manifest as not JSON."""
    from seamline.contracts.untrusted import strict_json

    sink = jsonl_sink(tmp_path)
    sink.start({"pipeline": "p", "figures": {"max_abs": float("inf"), "seen": [float("nan")]}})
    sink.write(make_records(2))
    sink.close(complete=True)
    manifest = strict_json((tmp_path / "out" / "emb.manifest.json").read_bytes())
    assert manifest["figures"] == {"max_abs": "inf", "seen": ["nan"]}


@pytest.mark.parametrize(
    ("before", "made", "finish"),
    [
        (
            {"seamline-code": "aaaa", "jax": "0.10.0"},
            "another version of what computes it (seamline-code aaaa then, bbbb now)",
            "the seamline whose code is aaaa (`seamline --version` says it",
        ),
        (
            None,
            "a seamline that did not record its versions (from before 2026-12-05)",
            "the seamline that started it",
        ),
    ],
)
def test_a_checkpoint_of_another_seamline_is_to_be_finished_by_it(
    tmp_path: Path, sink_factory: Any, before: dict[str, str] | None, made: str, finish: str
) -> None:
    """An older seamline's checkpoint records the model as it knew it (no setting added
    since): the model was compared first, and its resume refused as "another model
    configuration (model.with.window_edges was not recorded ...)" with only --restart,
    which throws the committed work away; finishing it with that seamline keeps it."""
    a, _, _ = three_parts()
    first = sink_factory(tmp_path)
    older_model = {"use": "bert-encoder", "with": {"weights": "w"}}
    written = {**MANIFEST, "model": older_model}
    if before is not None:
        written["versions"] = before
    first.start(written)
    first.write(a)
    first.commit("c1")
    first.close(complete=False)
    model = {"use": "bert-encoder", "with": {"weights": "w", "window_edges": "words"}}
    now = {**MANIFEST, "model": model, "versions": {"seamline-code": "bbbb", "jax": "0.10.0"}}
    second = sink_factory(tmp_path)
    with pytest.raises(UserError) as refused:
        second.recover(now)
    said = str(refused.value)
    assert f"was made by {made}; its model record: model.with.window_edges was not recorded" in said
    assert f"To keep what was committed, finish it under {finish}" in said, said
    assert said.endswith(
        ": run again with --resume (run(resume=True) from Python) there (then upgrade); or "
        "run again with --restart (run(restart=True) from Python) to start over"
    )
    second.close(complete=False)
    assert sink_factory(tmp_path).recover(written) == "c1", "the refused resume changed nothing"
