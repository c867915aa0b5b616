"""The ``lancedb`` sink: an embedded table, staged until the run ends, one version per run."""

from __future__ import annotations

import gc
import json
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from pydantic import ValidationError

from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.contracts import OutputRecord, UserError
from tests.components.test_sink_parquet import with_text
from tests.components.test_sinks import ERRORS, make_records, read_jsonl, visible
from tests.readback import read_records

# pyarrow, DuckDB and LanceDB are imported by the tests that use them, not when pytest
# collects this module: a process pytest starts later (the attention benchmark's workers)
# inherits the peak memory of the collecting process, and they would add about 100 MB.

if TYPE_CHECKING:
    from pathlib import Path

MANIFEST = {"pipeline": "p", "model": {"use": "bert-encoder", "with": {"weights": "w"}}}


def sink(tmp_path: Path, **options: Any) -> LanceDbSink:
    return LanceDbSink(LanceDbSinkConfig(path=tmp_path / "db" / "emb.lance", **options))


def table(tmp_path: Path) -> Any:
    import lancedb

    return lancedb.connect(str(tmp_path / "db")).open_table("emb")


def keys(tmp_path: Path) -> list[tuple[str, int]]:
    found = table(tmp_path).search().select(["id", "window_index"]).limit(None).to_list()
    return [(row["id"], row["window_index"]) for row in found]


RUN = "r1"
"""A run id :func:`run` may publish under (``run_id=RUN``)."""


def run(
    tmp_path: Path, records: list[OutputRecord], run_id: str | None = None, **options: Any
) -> None:
    out = sink(tmp_path, **options)
    out.start(MANIFEST if run_id is None else {**MANIFEST, "run_id": run_id})
    out.write(records)
    out.close()


def test_a_run_publishes_one_table_and_its_companions(tmp_path: Path) -> None:
    import lancedb

    records = with_text(make_records(9))
    out = sink(tmp_path, buffer_rows=2)
    out.start(MANIFEST)
    out.write(records[:4])
    out.commit("c1")
    out.write(records[4:])
    out.write_error(ERRORS[0])
    db = tmp_path / "db"
    assert visible(db) == [], "nothing but hidden staging before close"
    assert lancedb.connect(str(db)).list_tables().tables == []
    out.close()

    assert visible(db) == ["emb.errors.jsonl", "emb.lance", "emb.manifest.json"]
    published = table(tmp_path)
    assert published.version == 1, "the rows went in as one version"
    got = published.search().limit(None).to_list()
    assert [(r["id"], r["window_index"], r["span_start"], r["text"]) for r in got] == [
        (r.doc_id, r.index, r.span[0], r.text) for r in records
    ]
    for row, record in zip(got, records, strict=True):
        np.testing.assert_array_equal(np.asarray(row["embedding"], np.float32), record.vector)
    assert [r["metadata"] for r in got][:2] == [
        {"lang": None, "score": None},
        {"lang": "en", "score": 0.5},
    ]
    manifest = json.loads((db / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"] == {
        "sink": "lancedb",
        "files": {"errors": "emb.errors.jsonl", "table": "emb.lance"},
        "mode": "overwrite",
        "index": None,
        "full_text_index": False,
        "table_version": 1,  # what a reader reads (the rows a newer run adds are not it)
    }
    assert [e["id"] for e in read_jsonl(db / "emb.errors.jsonl")] == ["bad.txt"]


def test_resume_restores_the_staging_table_to_its_committed_version(tmp_path: Path) -> None:
    import lancedb

    records = make_records(10, seed=2)
    first = sink(tmp_path, buffer_rows=2)
    first.start(MANIFEST)
    first.write(records[:4])
    first.commit("c1")
    first.write(records[4:7])  # two of them reach the staging table; then the process dies
    checkpoint = json.loads((tmp_path / "db" / ".emb.lance.checkpoint").read_text())
    staging = lancedb.connect(str(tmp_path / "db" / ".emb.lance.partial.tmp")).open_table("emb")
    assert staging.version > checkpoint["state"]["staged"], "rows were staged after the commit"
    del first, staging
    gc.collect()

    second = sink(tmp_path, buffer_rows=2)
    assert second.recover(MANIFEST) == "c1"
    second.write(records[4:])
    second.close()
    assert keys(tmp_path) == [(r.doc_id, r.index) for r in records]
    assert not (tmp_path / "db" / ".emb.lance.partial.tmp").exists()


class Died(RuntimeError):
    """The process 'dies' while publishing."""


def die_after_the_table_commit(out: LanceDbSink, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``close`` stop right after the rows went into the table, before the run is done."""

    def publish(last: Any = ()) -> None:
        raise Died

    monkeypatch.setattr(out._group, "publish", publish)


@pytest.mark.parametrize("resume", [False, True], ids=["fresh-run", "resumed"])
def test_a_run_that_died_while_publishing_is_undone_before_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resume: bool
) -> None:
    first, second = make_records(4, seed=3), make_records(4, seed=4, start=4)
    run(tmp_path, first)
    appending = sink(tmp_path, mode="append")
    appending.start(MANIFEST)
    appending.write(second[:2])
    appending.commit("c1")
    appending.write(second[2:])
    die_after_the_table_commit(appending, monkeypatch)
    with pytest.raises(Died):
        appending.close()
    assert len(keys(tmp_path)) == 8, "the rows reached the table, the run did not finish"
    monkeypatch.undo()

    again = sink(tmp_path, mode="append")
    if resume:
        assert again.recover(MANIFEST) == "c1"
        again.write(second[2:])
    else:
        again.start(MANIFEST)
        again.write(second)
    assert len(keys(tmp_path)) == 4, "the interrupted publication was undone first"
    again.close()
    assert keys(tmp_path) == [(r.doc_id, r.index) for r in first + second], "appended once"


def test_a_ctrl_c_while_an_append_is_published_comes_once_it_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C after the checkpoint (and its ``publishing`` record) was deleted, before the
    manifest was renamed into place, left the appended rows in the table with nothing
    recording them: the old manifest, no checkpoint, and ``--resume`` appended them again.
    The stop now waits for the publication's last rename."""
    import signal

    from seamline.contracts.sink_kit import AtomicFile

    first, second = make_records(4, seed=3), make_records(4, seed=4, start=4)
    run(tmp_path, first)
    appending = sink(tmp_path, mode="append")
    appending.start(MANIFEST)
    appending.write(second)
    appending.commit("c1")
    real = AtomicFile.publish

    def publish(self: AtomicFile, **keywords: Any) -> None:
        if self.destination.name == "emb.manifest.json":  # the manifest: the last rename
            signal.raise_signal(signal.SIGINT)
        real(self, **keywords)

    monkeypatch.setattr(AtomicFile, "publish", publish)
    with pytest.raises(KeyboardInterrupt):
        appending.close()
    monkeypatch.undo()
    db = tmp_path / "db"
    manifest = json.loads((db / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"]["table_version"] == table(tmp_path).version, "this run's"
    assert keys(tmp_path) == [(r.doc_id, r.index) for r in first + second]
    assert not (db / ".emb.lance.checkpoint").exists(), "published: nothing to resume"


def test_a_failed_run_leaves_the_table_as_it_was(tmp_path: Path) -> None:
    run(tmp_path, make_records(4))
    failed = sink(tmp_path)
    failed.start(MANIFEST)
    failed.write(make_records(6, seed=9))
    failed.commit("c1")
    failed.close(complete=False)
    assert table(tmp_path).version == 1
    assert len(keys(tmp_path)) == 4


@pytest.mark.parametrize("how", ["start", "recover", "begin_parts"])
@pytest.mark.parametrize("found", ["file", "fifo"])
def test_a_file_where_the_table_folder_goes_is_refused_before_any_work(
    tmp_path: Path, how: str, found: str
) -> None:
    # The whole corpus was embedded, then close failed with LanceDB's "_versions: Not a
    # directory" and a "run again with --resume" hint that could never help.
    import os

    at = tmp_path / "db" / "emb.lance"
    at.parent.mkdir()
    if found == "file":
        at.write_bytes(b"x\n")
        what = "a file"
    else:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(at)
        what = "a FIFO \\(named pipe\\)"
    out = sink(tmp_path)
    begin = {
        "start": lambda: out.start(MANIFEST),
        "recover": lambda: out.recover(MANIFEST),
        "begin_parts": lambda: out.begin_parts("r1", 2, MANIFEST),
    }[how]
    with pytest.raises(UserError, match=rf"lancedb sink: path '.*emb.lance' is {what}, not a "
                       r"LanceDB table folder; remove it, or give another path"):  # fmt: skip
        begin()
    out.close(complete=False)
    assert at.exists(), "what was there is left as it was"
    assert not at.is_dir()
    if found == "file":
        assert at.read_bytes() == b"x\n"


def test_a_link_where_the_table_goes_is_refused_at_start_whatever_the_mode(
    tmp_path: Path,
) -> None:
    # Under overwrite the link was refused only when the rows were published, at the end.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "emb.lance").symlink_to(elsewhere, target_is_directory=True)
    out = sink(tmp_path)
    with pytest.raises(UserError, match=r"is a symbolic link, not a LanceDB table folder; it "
                       "is not followed"):  # fmt: skip
        out.start(MANIFEST)
    out.close(complete=False)
    assert list(elsewhere.iterdir()) == []


def test_append_adds_and_upsert_replaces_the_documents_seen_again(tmp_path: Path) -> None:
    vector = np.ones(8, np.float32)

    def windows(doc: str, count: int, value: float) -> list[OutputRecord]:
        return [OutputRecord(doc, i, (i, i + 1), vector * value, {}, doc) for i in range(count)]

    run(tmp_path, windows("a", 3, 1) + windows("b", 1, 1))
    run(tmp_path, windows("c", 1, 1), mode="append")
    assert sorted(keys(tmp_path)) == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("c", 0)]
    # "a" changed and now has two windows; "d" is new; "b" and "c" were not seen again.
    run(tmp_path, windows("a", 2, 2) + windows("d", 1, 2), mode="upsert")
    rows = table(tmp_path).search().limit(None).to_list()
    assert sorted((r["id"], r["window_index"], r["embedding"][0]) for r in rows) == [
        ("a", 0, 2.0), ("a", 1, 2.0), ("b", 0, 1.0), ("c", 0, 1.0), ("d", 0, 2.0),
    ]  # fmt: skip
    assert table(tmp_path).version == 3, "one version per run"


def test_resuming_with_other_columns_is_refused(tmp_path: Path) -> None:
    first = sink(tmp_path)
    first.start(MANIFEST)
    first.write(with_text(make_records(3)))
    first.commit("c1")
    first.close(complete=False)
    with pytest.raises(UserError, match=r"cannot resume: .*text=True.*set to text=False"):
        sink(tmp_path, text=False).recover(MANIFEST)
    assert sink(tmp_path).recover(MANIFEST) == "c1", "the refused resume changed nothing"


def test_append_refuses_a_table_of_another_model_or_other_columns(tmp_path: Path) -> None:
    run(tmp_path, with_text(make_records(2)))
    other = {**MANIFEST, "model": {"use": "bert-encoder", "with": {"weights": "other"}}}
    with pytest.raises(UserError, match="made by another model configuration") as refused:
        sink(tmp_path, mode="append").start(other)
    said = str(refused.value)
    del refused  # its traceback holds the refused sink, and the sink its destination's lock
    recorded = MANIFEST["model"]["with"]["weights"]  # type: ignore[index]
    assert f"model.with.weights was {recorded!r}, now 'other'" in said
    with pytest.raises(UserError, match=r"text=True.*set to text=False"):
        sink(tmp_path, mode="upsert", text=False).start(MANIFEST)
    manifest = tmp_path / "db" / "emb.manifest.json"
    manifest.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(UserError, match="has no readable manifest"):  # was a RecursionError
        sink(tmp_path, mode="append").start(MANIFEST)
    manifest.unlink()
    with pytest.raises(UserError, match="has no readable manifest"):
        sink(tmp_path, mode="append").start(MANIFEST)


@pytest.mark.parametrize("mode", ["append", "upsert", "sync"])
def test_adding_to_a_table_of_another_precision_or_version_is_refused(
    tmp_path: Path, mode: str
) -> None:
    """The merge modes compared the model alone: an upsert in bfloat16 rewrote some rows
    of a float32 table, whose manifest then said bfloat16 for all of them, and a seamline
    upgrade spliced its vectors into an older one's. ``--resume``'s rule refuses both."""
    made = {**MANIFEST, "precision": "float32", "versions": {"seamline-code": "aaaa"}}
    out = sink(tmp_path)
    out.start(made)
    out.write(with_text(make_records(2)))
    out.close()
    with pytest.raises(UserError) as refused:
        sink(tmp_path, mode=mode).start({**made, "precision": "bfloat16"})
    said = str(refused.value)
    del refused  # its traceback holds the refused sink, and the sink its destination's lock
    assert "a run computing in 'float32' precision (this run computes in 'bfloat16')" in said
    assert said.endswith("Use mode: overwrite, or another path, or run with precision: float32 "
                         "(the table's)")  # fmt: skip
    with pytest.raises(UserError) as refused:
        sink(tmp_path, mode=mode).start({**made, "versions": {"seamline-code": "bbbb"}})
    said = str(refused.value)
    del refused
    assert "another version of what computes it (seamline-code aaaa then, bbbb now)" in said
    assert "mix vectors of two versions" in said
    out = sink(tmp_path, mode=mode)
    out.start(made)  # the table's own precision and versions: taken
    out.write(with_text(make_records(2)))
    out.close()


@pytest.mark.parametrize("mode", ["append", "upsert", "sync"])
def test_a_manifest_another_sink_wrote_over_the_tables_is_not_the_tables(
    tmp_path: Path, mode: str
) -> None:
    """``emb.jsonl`` and ``emb.lance`` in one folder share ``emb.manifest.json``: after a
    jsonl run of the same model there, an append into a table of another model was let
    through, mixing two models' vectors in one table."""
    import json

    run(tmp_path, make_records(2))  # the table, by another model than MANIFEST's below
    other = {**MANIFEST, "model": {"use": "bert-encoder", "with": {"weights": "other"}}}
    manifest = tmp_path / "db" / "emb.manifest.json"
    jsonl_run = {
        **other,
        "outputs": {"sink": "jsonl", "files": {"records": "emb.jsonl"}},
    }
    manifest.write_text(json.dumps(jsonl_run), encoding="utf-8")
    with pytest.raises(UserError) as refused:
        sink(tmp_path, mode=mode).start(other)
    said = str(refused.value)
    del refused  # its traceback holds the refused sink, and the sink its destination's lock
    assert f"cannot {mode} into" in said
    assert "has no manifest of its own" in said
    assert "'emb.jsonl' of a 'jsonl' sink" in said
    assert "Use mode: overwrite" in said
    assert len(keys(tmp_path)) == 2, "the table is as it was"
    # The table's own manifest, one that names it, is trusted as before.
    own = {**MANIFEST, "outputs": {"sink": "lancedb", "files": {"table": "emb.lance"}}}
    manifest.write_text(json.dumps(own), encoding="utf-8")
    run_with = sink(tmp_path, mode=mode)
    run_with.start(MANIFEST)
    run_with.write(make_records(2))
    run_with.close()


@pytest.mark.parametrize(
    ("kind", "rows", "built"),
    [
        ("ivf_pq", 256, "IvfPq"),
        # Fewer rows than IVF-PQ trains on: no vector index (it would hold no row), and
        # search scans; the full-text index is built all the same.
        ("ivf_pq", 255, None),
        ("hnsw", 40, "IvfHnswSq"),
    ],
)
def test_the_indexes_are_built_at_the_end(
    tmp_path: Path, kind: str, rows: int, built: str | None
) -> None:
    words = ["apple", "banana", "cherry", "damson", "elderberry"]
    records = [
        OutputRecord(r.doc_id, r.index, r.span, r.vector, r.metadata, f"{words[i % 5]} pie {i}")
        for i, r in enumerate(make_records(rows))
    ]
    run(tmp_path, records, index={"type": kind}, full_text_index=True)
    indexes = {i.columns[0]: i.index_type for i in table(tmp_path).list_indices()}
    assert indexes == ({"embedding": built} if built else {}) | {"text": "FTS"}
    found = table(tmp_path).search("cherry", query_type="fts").limit(rows).to_list()
    assert sorted(row["text"] for row in found) == sorted(r.text for r in records[2::5])


def test_an_index_that_cannot_fit_the_vectors_is_refused_before_the_work(tmp_path: Path) -> None:
    out = sink(tmp_path, index={"type": "ivf_pq", "num_sub_vectors": 3})
    out.start(MANIFEST)
    with pytest.raises(UserError, match="num_sub_vectors 3 does not divide the vectors' 8"):
        out.write(make_records(2))


@pytest.mark.parametrize(("make", "what"), [(None, "does not exist"), ("file", "is not a folder")])
def test_a_temporary_folder_lancedb_cannot_use_is_refused_before_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: str | None, what: str
) -> None:
    # LanceDB builds a vector index through files in $TMPDIR (no fallback): it panicked once
    # the rows were published, and the run said that nothing was.
    temporary = tmp_path / "tmp"
    if make == "file":
        temporary.write_text("", encoding="utf-8")
    monkeypatch.setenv("TMPDIR", str(temporary))
    said = rf"TMPDIR='{temporary}' {what}; LanceDB writes the temporary files of the vector"
    with pytest.raises(UserError, match=said):
        sink(tmp_path, index={"type": "ivf_pq"})
    sink(tmp_path)  # without a vector index or a merge, the folder is not used
    sink(tmp_path, mode="append")


@pytest.mark.parametrize("mode", ["upsert", "sync"])
def test_a_merge_with_no_tmpdir_and_a_read_only_tmp_is_refused_before_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # A container with a read-only root (and no TMPDIR): upsert and sync embedded every
    # document, then LanceDB's merge failed to create its temporary folder in /tmp, and
    # nothing was published. Checked when the sink is built, for a merge as for an index.
    monkeypatch.delenv("TMPDIR", raising=False)
    writable = os.access

    def read_only_tmp(path: Any, mode_bits: int, **options: Any) -> bool:
        return False if str(path) == "/tmp" else writable(path, mode_bits, **options)

    monkeypatch.setattr(os, "access", read_only_tmp)
    with pytest.raises(UserError) as refused:
        sink(tmp_path, mode=mode)
    assert str(refused.value).startswith(
        f"lancedb sink: TMPDIR is not set, so LanceDB writes the temporary files of mode "
        f"{mode}'s merge into the table in '/tmp', which "
    )
    assert str(refused.value).endswith(
        ". Set TMPDIR to a folder this process can write to, with room (mkdir -p tmp && "
        "export TMPDIR=$PWD/tmp), and run again"
    )
    sink(tmp_path, mode="overwrite")  # no merge: /tmp is not used
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    sink(tmp_path, mode=mode)  # the fix the message names


class RustPanic(Exception):
    """As pyo3_async_runtimes names a panic of LanceDB's, raised as an Exception."""


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (
            RustPanic("rust future panicked: unknown error"),
            "LanceDB failed inside (rust future panicked: unknown error; the panic report",
        ),
        (
            RuntimeError(
                "lance error: LanceError(IO): No space left on device (os error 28), "
                "/root/.cargo/registry/src/index.crates.io-1949/lance-file-13.0.0/src/x.rs:258:9"
            ),
            "no space left on a device (LanceDB writes the index's temporary files in",
        ),
        (ValueError("num_partitions too large"), "num_partitions too large. Fix the index"),
    ],
)
def test_an_index_that_fails_once_the_rows_are_published_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception, said: str
) -> None:
    from seamline.components.sinks import _lance_index as module

    def failing(*_: Any, **__: Any) -> None:
        raise error

    monkeypatch.setattr(module, "build_indexes", failing)
    run(tmp_path, make_records(3), index={"type": "ivf_pq"}, run_id=RUN)
    # Not raised from close: that lost the run's summary. The manifest records it, and
    # the driver's fresh sink says it once the summary is out.
    message = sink(tmp_path, index={"type": "ivf_pq"}).published_problem(RUN)
    assert message is not None
    assert message.startswith("lancedb sink: the rows are published in ")
    assert said in message
    assert ".cargo" not in message
    assert message.endswith("until then a search scans every row")
    assert len(keys(tmp_path)) == 3, "the rows are there, as the message says"
    # The indexes are built before the manifest goes out; the publication stands without
    # them: the manifest names the version with the rows, which a search reads.
    manifest = json.loads((tmp_path / "db" / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"]["table_version"] == table(tmp_path).version == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": "out/emb"}, "is not a table folder: give '<database>/<table>.lance'"),
        ({"path": "out/bad name.lance"}, "is not a table folder"),
        ({"mode": "merge"}, "'overwrite', 'append', 'upsert' or 'sync'"),
        ({"index": {"type": "ivf_pq", "m": 16}}, "m does not apply to an index of type 'ivf_pq'"),
        ({"index": {"type": "hnsw", "num_sub_vectors": 8}}, "num_sub_vectors does not apply"),
        ({"text": False, "full_text_index": True}, "full_text_index needs the text column"),
    ],
)
def test_bad_settings_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LanceDbSinkConfig(**{"path": "out/emb.lance", **options})


def test_a_table_name_with_a_letter_outside_ascii_is_refused_naming_the_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `out/ünï.lance` was refused as "a table name of letters, digits ...": ü is a letter,
    # so the rule the message stated was not the one applied (ASCII letters only).
    from pathlib import Path as RealPath

    from typer.testing import CliRunner

    from seamline.adapters.cli.main import app

    pipeline = RealPath(__file__).parents[2] / "examples" / "pipelines" / "embed-docs.yaml"
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app,
        ["validate", str(pipeline), "--set", "sink={use: lancedb, with: {path: out/ünï.lance}}"],
        env={"COLUMNS": "400"},
    )
    assert result.exit_code == 2, result.output
    assert "is not a table folder" in result.output
    assert "a table name of ASCII letters, digits, '_', '-' and '.'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_run_without_rows_creates_no_table_and_empties_one_under_overwrite(
    tmp_path: Path,
) -> None:
    run(tmp_path, [])
    # No table: an empty folder, published (search reads it as no rows, tests/adapters).
    assert list((tmp_path / "db" / "emb.lance").iterdir()) == []
    manifest = json.loads((tmp_path / "db" / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"]["table_version"] == 0, "none: the version before a table's first"
    assert read_records(tmp_path / "db" / "emb.lance") == []
    run(tmp_path, make_records(3))
    run(tmp_path, [], mode="append")
    assert len(keys(tmp_path)) == 3, "appending nothing keeps the rows"
    run(tmp_path, [])
    assert keys(tmp_path) == [], "overwriting with nothing empties the table"


def test_a_manifest_of_no_table_is_read_as_no_rows_only_over_the_empty_folder(
    tmp_path: Path,
) -> None:
    # Hostile input: "no table" (table_version 0) must not make a table look empty, nor
    # a table deleted since look like no rows.
    from seamline.contracts.readback import Republished

    output = tmp_path / "db" / "emb.lance"
    run(tmp_path, [])
    (output / "planted").write_bytes(b"x")
    with pytest.raises(Republished, match=r"emb.lance holds files, but .* created no table"):
        read_records(output)
    (output / "planted").unlink()
    output.rmdir()
    with pytest.raises(UserError, match=r"emb.lance \(the table that .* names\) does not exist"):
        find_nearest(output)
    run(tmp_path, make_records(3))
    manifest = tmp_path / "db" / "emb.manifest.json"
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    recorded["outputs"]["table_version"] = 0
    manifest.write_text(json.dumps(recorded), encoding="utf-8")
    with pytest.raises(Republished, match=r"outputs.table_version: 0"):
        read_records(output)


def find_nearest(output: Path) -> Any:
    """The nearest row to a vector, through the output's reader (as search asks it)."""
    from seamline.contracts.manifest import load_manifest, output_files
    from seamline.contracts.readback import published

    manifest = output.with_name("emb.manifest.json")
    outputs = load_manifest(manifest).outputs
    assert outputs is not None
    files = output_files(outputs, manifest)[0]
    assert published(output, LanceDbSink) is None, "its primary folder is gone"
    return LanceDbSink.reader(files, manifest, outputs).nearest(np.ones(8, np.float32), 1)


def searched(output: Path) -> str:
    """How a search of the published ``output`` finds its nearest row (its ``how``)."""
    from seamline.contracts.readback import published

    readers = published(output, LanceDbSink)
    assert readers is not None
    return str(readers[0].nearest(np.ones(8, np.float32), 1).how)


def test_an_index_that_fails_to_build_is_a_user_error_after_the_rows_are_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lancedb

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("lance error: no room for the index")

    monkeypatch.setattr(lancedb.table.LanceTable, "create_index", refuse)
    run(tmp_path, make_records(3), index={"type": "hnsw"}, run_id=RUN)
    assert len(keys(tmp_path)) == 3
    problem = sink(tmp_path, index={"type": "hnsw"}).published_problem(RUN)
    assert problem is not None
    assert re.search(r"rows are published in .* but building its index failed", problem)
    assert sink(tmp_path).published_problem("another-run") is None, "only the run's own"
    # A search later compares every row; it said only "exact", as for a table too small to
    # index, and the run's exit 2 was the one place the missing index was explained.
    how = searched(tmp_path / "db" / "emb.lance")
    assert how.startswith("exact: every one of 3 rows; no vector index, as the run that published")
    assert how.endswith(problem), "the run's own words"


def test_the_caches_stay_within_cache_bytes_over_many_commits(tmp_path: Path) -> None:
    """Every commit is a version of the staging table, and LanceDB's caches keep what each
    version read: unbounded (its defaults hold gigabytes), a long run's memory grew with
    every commit. With a bound they stop at it; with a large one they keep growing."""
    sizes = {}
    for bound in (1 << 20, 1 << 30):
        out = sink(tmp_path / str(bound), cache_bytes=bound)
        out.start(MANIFEST)
        for commit in range(100):
            vector = np.zeros(8, np.float32)
            out.write([OutputRecord(f"d{commit}-{row}", 0, (0, 1), vector, {}) for row in range(4)])
            out.commit(f"cursor-{commit}")
        session = out._lance.session
        sizes[bound] = session.size_bytes if session is not None else None
        out.close()
    assert sizes[1 << 20] is not None
    assert sizes[1 << 30] is not None
    assert sizes[1 << 20] <= 1 << 20
    assert sizes[1 << 30] > 2 * (1 << 20)  # what the bound keeps out


def test_cache_bytes_null_leaves_lancedb_its_default_session(tmp_path: Path) -> None:
    out = sink(tmp_path, cache_bytes=None)
    assert out._lance.session is None
    run(tmp_path, make_records(3), cache_bytes=None)
    assert len(keys(tmp_path)) == 3


def test_a_recorded_index_failure_is_read_as_untrusted_text(tmp_path: Path) -> None:
    """``outputs.index_failure`` is printed after the run's summary: from a manifest anyone
    could edit, an escape sequence in it is shown as a mark, a page of it is cut, and
    anything but text is not a failure."""
    run(tmp_path, make_records(3), run_id=RUN)
    path = tmp_path / "db" / "emb.manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    assert sink(tmp_path).published_problem(RUN) is None, "nothing recorded, nothing undone"
    for recorded, expected in [
        ("\x1b]52;c;cm0gLXJmIH4=\x07failed" + "x" * 5_000, "\ufffd]52;c;cm0gLXJmIH4=\ufffdfailed"),
        ({"not": "text"}, None),
        ("", None),
    ]:
        manifest["outputs"]["index_failure"] = recorded
        path.write_text(json.dumps(manifest), encoding="utf-8")
        problem = sink(tmp_path).published_problem(RUN)
        if expected is None:
            assert problem is None, recorded
            if recorded == "":
                assert searched(path.with_name("emb.lance")) == "exact: every one of 3 rows"
        else:
            how = searched(path.with_name("emb.lance"))
            assert how.endswith(problem), "as the run's summary shows it: cut, made visible"
            assert problem is not None
            assert problem.startswith(expected)
            assert "\x1b" not in problem
            assert "\x07" not in problem
            assert problem.endswith(f"... ({len(recorded):,} characters)")
            assert len(problem) < 2_100
