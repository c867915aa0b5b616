"""Staged parts of the ``parquet`` and ``lancedb`` sinks: one file, one table, published once.

The conformance suite checks the staged-parts contract itself (tests/conformance);
these are the cases it cannot see: the one output the columnar sinks copy their
parts into (one schema over parts that fixed their columns apart, one commit of the
table in the configured mode) and a publication interrupted at each step.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import DocumentError, OutputRecord, Shard, UserError
from tests.components.test_sink_lancedb import MANIFEST, keys, table
from tests.components.test_sink_lancedb import run as whole_run
from tests.components.test_sinks import visible
from tests.readback import read_errors, read_records

VECTOR = np.arange(8, dtype=np.float32)


def windows(doc: str, count: int, value: float, **metadata: Any) -> list[OutputRecord]:
    return [
        OutputRecord(doc, i, (i, i + 1), VECTOR * value, metadata, f"{doc}/{i}")
        for i in range(count)
    ]


def staged(
    make: Any, parts: list[list[OutputRecord]], *, run_id: str = "run-1", publish: bool = True
) -> None:
    """A run of ``len(parts)`` shards, each part written (and an error each) and finished."""
    count = len(parts)
    make().begin_parts(run_id, count, MANIFEST)
    for index, records in enumerate(parts):
        part = make().part(run_id, Shard(index, count))
        assert part.recover(MANIFEST) is None
        part.write(records)
        part.write_error(DocumentError(f"bad-{index}", "unreadable"))
        part.commit(f"c{index}")
        part.close()
        assert part.finished()
    if publish:
        make().publish_parts(run_id, count, MANIFEST)


# -- parquet ---------------------------------------------------------------------------------


def parquet(tmp_path: Path, **options: Any) -> ParquetSink:
    return ParquetSink(ParquetSinkConfig(path=tmp_path / "out" / "emb.parquet", **options))


def test_parquet_parts_become_one_file_of_one_schema(tmp_path: Path) -> None:
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Each part fixes its metadata columns from its own first records: part 0 saw 'lang'
    # only as None (a string column) and 'n' as integers, part 1 'lang' as integers, 'n'
    # as floats and a key part 0 never had.
    parts = [
        windows("a", 2, 1, lang=None, n=1),
        windows("b", 3, 2, lang=7, n=2.5, seen=True),
        [],  # a shard of no documents
    ]
    staged(lambda: parquet(tmp_path, row_group_size=2), parts)

    out = tmp_path / "out"
    assert visible(out) == ["emb.errors.jsonl", "emb.manifest.json", "emb.parquet"]
    assert not (out / ".emb.parquet.shards").exists(), "the staging area was deleted"
    file = pq.ParquetFile(out / "emb.parquet")
    assert [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)] == [2, 2, 1]
    metadata = file.schema_arrow.field("metadata").type
    assert [(f.name, f.type) for f in metadata] == [
        ("lang", pa.string()), ("n", pa.float64()), ("seen", pa.bool_()),
    ]  # fmt: skip
    manifest = json.loads((out / "emb.manifest.json").read_text())
    assert manifest["outputs"] == {
        "sink": "parquet",
        "files": {"errors": "emb.errors.jsonl", "parquet": "emb.parquet"},
        "run_id": "run-1",
        "rows": {"emb.parquet": 5},
        "sha256": {"emb.parquet": hashlib.sha256((out / "emb.parquet").read_bytes()).hexdigest()},
    }
    embedded = json.loads(file.schema_arrow.metadata[b"seamline.manifest"])
    assert embedded["outputs"]["run_id"] == "run-1", "the file alone says what made it"
    assert embedded["outputs"]["rows"] == {"emb.parquet": 5}
    rows = duckdb.sql(
        "SELECT id, window_index, metadata.lang, metadata.n, metadata.seen, text "
        f"FROM '{out / 'emb.parquet'}'"
    ).fetchall()
    assert rows == [
        ("a", 0, None, 1.0, None, "a/0"), ("a", 1, None, 1.0, None, "a/1"),
        ("b", 0, "7", 2.5, True, "b/0"), ("b", 1, "7", 2.5, True, "b/1"),
        ("b", 2, "7", 2.5, True, "b/2"),
    ]  # fmt: skip
    records = read_records(out / "emb.parquet")
    assert records is not None
    np.testing.assert_array_equal(records[2].vector, VECTOR * 2)
    assert [e["id"] for e in read_errors(out / "emb.parquet") or []] == ["bad-0", "bad-1", "bad-2"]


def test_parquet_parts_whose_metadata_types_cannot_merge_are_refused(tmp_path: Path) -> None:
    parts = [windows("a", 1, 1, flag=True), windows("b", 1, 1, flag=3)]
    with pytest.raises(UserError, match=r"metadata 'flag' has values of different types.*bool"):
        staged(lambda: parquet(tmp_path), parts)
    assert read_records(tmp_path / "out" / "emb.parquet") is None, "nothing was published"
    assert parquet(tmp_path).staged_run(MANIFEST) is not None, "the parts stay for a retry"


def test_a_staged_parquet_run_replaces_a_whole_output_and_a_whole_run_the_parts(
    tmp_path: Path,
) -> None:
    whole = parquet(tmp_path)
    whole.start(MANIFEST)
    whole.write(windows("old", 2, 1))
    whole.close()
    staged(lambda: parquet(tmp_path), [windows("a", 1, 1), windows("b", 1, 1)])
    assert [r.doc_id for r in read_records(tmp_path / "out" / "emb.parquet") or []] == ["a", "b"]
    staged(lambda: parquet(tmp_path), [windows("c", 1, 1)], run_id="run-2", publish=False)
    again = parquet(tmp_path)
    again.start(MANIFEST)
    again.write(windows("d", 1, 1))
    again.close()
    assert not (tmp_path / "out" / ".emb.parquet.shards").exists(), "the unpublished parts went"
    assert [r.doc_id for r in read_records(tmp_path / "out" / "emb.parquet") or []] == ["d"]


# -- lancedb ---------------------------------------------------------------------------------


class Died(RuntimeError):
    """The driver 'dies' while publishing."""


def lance(tmp_path: Path, **options: Any) -> LanceDbSink:
    return LanceDbSink(LanceDbSinkConfig(path=tmp_path / "db" / "emb.lance", **options))


def rows(tmp_path: Path) -> list[tuple[str, int, float]]:
    found = table(tmp_path).search().limit(None).to_list()
    return sorted((r["id"], r["window_index"], float(r["embedding"][1])) for r in found)


def test_lancedb_parts_are_published_as_one_version_with_one_set_of_indexes(
    tmp_path: Path,
) -> None:
    import lancedb

    parts = [windows("a", 2, 1, lang=None), windows("b", 1, 2, lang="de", n=4), []]
    staged(lambda: lance(tmp_path, full_text_index=True), parts)
    db = tmp_path / "db"
    assert visible(db) == ["emb.errors.jsonl", "emb.lance", "emb.manifest.json"]
    assert not (db / ".emb.lance.shards").exists(), "the staging area was deleted"
    assert lancedb.connect(str(db)).list_tables().tables == ["emb"]
    published = table(tmp_path)
    # Version 1: the rows, in one commit; version 2: the full-text index.
    assert [v["version"] for v in published.list_versions()] == [1, 2]
    assert {i.columns[0]: i.index_type for i in published.list_indices()} == {"text": "FTS"}
    assert rows(tmp_path) == [("a", 0, 1.0), ("a", 1, 1.0), ("b", 0, 2.0)]
    assert [r["metadata"] for r in published.search().limit(None).to_list()] == [
        {"lang": None, "n": None}, {"lang": None, "n": None}, {"lang": "de", "n": 4},
    ]  # fmt: skip
    manifest = json.loads((db / "emb.manifest.json").read_text())
    assert manifest["outputs"]["files"] == {"errors": "emb.errors.jsonl", "table": "emb.lance"}
    assert manifest["outputs"]["run_id"] == "run-1"
    assert manifest["outputs"]["table_version"] == 2, "the version with the index, which is read"
    assert [e["id"] for e in read_errors(db / "emb.lance") or []] == ["bad-0", "bad-1", "bad-2"]


@pytest.mark.parametrize("mode", ["overwrite", "append", "upsert", "sync"])
def test_parts_of_no_rows_publish_no_table_and_are_read_as_no_rows(
    tmp_path: Path, mode: str
) -> None:
    # Their manifest named a table the run never created: search said it was damaged.
    staged(lambda: lance(tmp_path, mode=mode), [[], []])
    db = tmp_path / "db"
    assert visible(db) == ["emb.errors.jsonl", "emb.lance", "emb.manifest.json"]
    assert list((db / "emb.lance").iterdir()) == [], "no table: an empty folder"
    assert json.loads((db / "emb.manifest.json").read_text())["outputs"]["table_version"] == 0
    assert read_records(db / "emb.lance") == []
    staged(lambda: lance(tmp_path, mode=mode), [windows("a", 2, 1), []], run_id="run-2")
    assert rows(tmp_path) == [("a", 0, 1.0), ("a", 1, 1.0)], "a table made in that folder"


def test_upsert_over_parts_replaces_the_documents_they_saw_in_one_commit(tmp_path: Path) -> None:
    whole_run(tmp_path, windows("a", 3, 1) + windows("b", 2, 1) + windows("c", 1, 1))
    before = table(tmp_path).version
    # "a" now has one window, "b" changed, "d" is new: in two shards; "c" was not seen.
    parts = [windows("a", 1, 5) + windows("d", 1, 5), windows("b", 2, 5)]
    staged(lambda: lance(tmp_path, mode="upsert"), parts)
    assert rows(tmp_path) == [
        ("a", 0, 5.0),
        ("b", 0, 5.0),
        ("b", 1, 5.0),
        ("c", 0, 1.0),
        ("d", 0, 5.0),
    ]
    assert table(tmp_path).version == before + 1, "the parts were merged in one commit"


def test_a_part_refuses_to_append_to_a_table_of_another_model_before_any_work(
    tmp_path: Path,
) -> None:
    whole_run(tmp_path, windows("a", 1, 1))
    other = {**MANIFEST, "model": {"use": "bert-encoder", "with": {"weights": "other"}}}
    driver = lance(tmp_path, mode="append")
    driver.begin_parts("run-1", 2, other)
    with pytest.raises(UserError, match=r"cannot append into .*made by another model"):
        lance(tmp_path, mode="append").part("run-1", Shard(0, 2)).recover(other)


def die_before_the_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``publish_parts`` stop after the rows went into the table, before its manifest."""

    def died(self: LanceDbSink, run_id: str | None = None) -> Any:
        raise Died

    monkeypatch.setattr(LanceDbSink, "manifest_file", died)


@pytest.mark.parametrize("then", ["retried", "fresh-run", "whole-run"])
def test_an_append_whose_publication_died_is_undone_and_applied_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    whole_run(tmp_path, windows("a", 2, 1))
    parts = [windows("b", 1, 2), windows("c", 2, 3)]
    staged(lambda: lance(tmp_path, mode="append"), parts, publish=False)
    die_before_the_manifest(monkeypatch)
    with pytest.raises(Died):
        lance(tmp_path, mode="append").publish_parts("run-1", 2, MANIFEST)
    assert len(keys(tmp_path)) == 5, "the rows reached the table; the publication did not end"
    monkeypatch.undo()

    if then == "retried":  # `seamline run --resume`: every part finished, publish again
        resumed = lance(tmp_path, mode="append").staged_run(MANIFEST)
        assert resumed is not None
        assert (resumed.run_id, resumed.finished) == ("run-1", frozenset({0, 1}))
        lance(tmp_path, mode="append").publish_parts("run-1", 2, MANIFEST)
        expected = [("a", 0, 1.0), ("a", 1, 1.0), ("b", 0, 2.0), ("c", 0, 3.0), ("c", 1, 3.0)]
    elif then == "fresh-run":  # a new staged run: the dead publication is undone first
        staged(lambda: lance(tmp_path, mode="append"), [windows("e", 1, 4)], run_id="run-2")
        expected = [("a", 0, 1.0), ("a", 1, 1.0), ("e", 0, 4.0)]
    else:  # a whole run on this table undoes it too
        whole_run(tmp_path, windows("e", 1, 4), mode="append")
        expected = [("a", 0, 1.0), ("a", 1, 1.0), ("e", 0, 4.0)]
    assert rows(tmp_path) == expected
    assert not (tmp_path / "db" / ".emb.lance.checkpoint").exists()


def test_a_publication_whose_manifest_is_out_is_neither_undone_nor_applied_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole_run(tmp_path, windows("a", 1, 1))
    staged(lambda: lance(tmp_path, mode="append"), [windows("b", 1, 2)], publish=False)
    checkpoint = tmp_path / "db" / ".emb.lance.checkpoint"
    unlink = Path.unlink

    def dies_at_the_checkpoint(self: Path, missing_ok: bool = False) -> None:
        if self == checkpoint:
            raise Died
        unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", dies_at_the_checkpoint)
    with pytest.raises(Died):
        lance(tmp_path, mode="append").publish_parts("run-1", 1, MANIFEST)
    monkeypatch.undo()
    assert checkpoint.exists(), "the driver died with the publishing checkpoint left"
    published = [("a", 0, 1.0), ("b", 0, 2.0)]
    assert rows(tmp_path) == published

    assert lance(tmp_path, mode="append").staged_run(MANIFEST) is None, "nothing left to publish"
    staged(lambda: lance(tmp_path, mode="append"), [windows("c", 1, 3)], run_id="run-2")
    assert rows(tmp_path) == [*published, ("c", 0, 3.0)], "run-1's rows kept, once"
    assert not checkpoint.exists()


def test_a_ctrl_c_while_parts_are_published_comes_once_the_publication_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C between the renames of a staged run's publication (its errors file out,
    its manifest not) left the run's errors beside the earlier run's manifest and the
    record of the publication, undone by the next run. It now waits for the last step."""
    import signal

    from seamline.contracts.sink_kit import AtomicFile

    whole_run(tmp_path, windows("a", 1, 1))
    staged(lambda: lance(tmp_path, mode="append"), [windows("b", 1, 2)], publish=False)
    real = AtomicFile.publish

    def publish(self: AtomicFile, **keywords: Any) -> None:
        real(self, **keywords)
        if self.destination.name == "emb.errors.jsonl":
            signal.raise_signal(signal.SIGINT)  # its handler runs before the next line

    monkeypatch.setattr(AtomicFile, "publish", publish)
    with pytest.raises(KeyboardInterrupt):
        lance(tmp_path, mode="append").publish_parts("run-1", 1, MANIFEST)
    monkeypatch.undo()
    db = tmp_path / "db"
    manifest = json.loads((db / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"]["run_id"] == "run-1", "the run's manifest is out"
    assert [e["id"] for e in read_errors(db / "emb.lance") or []] == ["bad-0"]
    assert not (db / ".emb.lance.checkpoint").exists(), "complete: nothing to undo or resume"
    assert rows(tmp_path) == [("a", 0, 1.0), ("b", 0, 2.0)]


def test_the_parquet_file_and_the_lancedb_table_differ_only_in_the_vector_list_s_field_name(
    tmp_path: Path,
) -> None:
    """The docs called the columns "the same"; a user comparing the Arrow schemas found
    ``fixed_size_list<element: float>`` (Parquet's standard name for a list's values, as
    pyarrow writes it) against LanceDB's ``<item: float>``. That is the one difference,
    and pipelines.md says so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = windows("a", 2, 1, lang="en") + windows("b", 1, 2, lang="de")
    out = parquet(tmp_path)
    out.start(MANIFEST)
    out.write(records)
    out.close()
    whole_run(tmp_path, records)
    written = pq.read_schema(tmp_path / "out" / "emb.parquet").remove_metadata()
    lanced = table(tmp_path).schema.remove_metadata()
    assert written.field("embedding").type == pa.list_(pa.field("element", pa.float32()), 8)
    assert lanced.field("embedding").type == pa.list_(pa.float32(), 8)  # item
    renamed = written.set(
        written.get_field_index("embedding"), pa.field("embedding", pa.list_(pa.float32(), 8))
    )
    assert [(f.name, f.type) for f in renamed] == [(f.name, f.type) for f in lanced]
    page = (Path(__file__).parents[2] / "docs" / "pipelines.md").read_text(encoding="utf-8")
    section = page.split("### sink `parquet`", 1)[1].split("\n### ", 1)[0]
    assert "fixed_size_list<element: float>" in section
    assert "fixed_size_list<item: float>" in section
