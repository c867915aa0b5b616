"""A resume cuts a sink's partial files only where a record ends, and counts what is kept.

A checkpoint records each partial file's length; one edited by hand could cut a file
inside a record (the published file then glues half a record to the next) or drop
whole records. Each first-party sink checks what it can: a file of one record a line
must be cut just after a newline; the npy matrix must be the header and whole rows;
and :meth:`~seamline.contracts.Sink.committed_records` counts the records kept, which
the host compares with the counts of the commit (``tests/faults/test_tampered_checkpoint.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.contracts import CommittedRecords, ResumeRefused, Shard
from tests.components.test_checkpoint_trust import MANIFEST, interrupted, make


def tamper(checkpoint: Path, **changes: Any) -> None:
    """Set ``files.<purpose>.bytes`` (``purpose=value``) or ``state.<key>`` (``state_key``)."""
    record = json.loads(checkpoint.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if key.startswith("state_"):
            record["state"][key.removeprefix("state_")] = value
        else:
            record["files"][key]["bytes"] = value
    checkpoint.write_text(json.dumps(record), encoding="utf-8")


def partials(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.glob(".*.partial.*.tmp") if p.is_file()}


@pytest.mark.parametrize("kind", ["jsonl", "npy", "parquet", "lancedb"])
def test_an_untouched_checkpoint_counts_the_records_and_errors_committed(
    tmp_path: Path, kind: str
) -> None:
    checkpoint = interrupted(kind, tmp_path)  # 5 records and 1 error committed, 2 more written
    sink = make(kind, tmp_path)
    assert sink.recover(MANIFEST) == "c2"
    assert sink.committed_records() == CommittedRecords(str(checkpoint), 5, 1)
    sink.close(complete=False)


@pytest.mark.parametrize(
    ("kind", "purpose"), [("jsonl", "records"), ("jsonl", "errors"), ("npy", "index")]
)
def test_a_cut_inside_a_line_is_refused_before_anything_is_cut(
    tmp_path: Path, kind: str, purpose: str
) -> None:
    checkpoint = interrupted(kind, tmp_path)
    record = json.loads(checkpoint.read_text(encoding="utf-8"))
    tamper(checkpoint, **{purpose: record["files"][purpose]["bytes"] - 3})
    before = partials(tmp_path)
    sink = make(kind, tmp_path)
    with pytest.raises(ResumeRefused, match=r"inside a record .*--restart") as refused:
        sink.recover(MANIFEST)
    assert str(checkpoint) in str(refused.value)
    sink.close(complete=False)
    assert partials(tmp_path) == before, "every partial file is left as it was found"


def test_a_cut_on_an_earlier_line_keeps_whole_records_and_counts_them(tmp_path: Path) -> None:
    """The host then finds 4 records where the commit counts 5, and refuses."""
    checkpoint = interrupted("jsonl", tmp_path)
    partial = next(tmp_path.glob(".emb.jsonl.partial.*.tmp")).read_bytes()
    record = json.loads(checkpoint.read_text(encoding="utf-8"))
    cut = record["files"]["records"]["bytes"]
    tamper(checkpoint, records=partial.rfind(b"\n", 0, cut - 1) + 1)
    sink = make("jsonl", tmp_path)
    sink.recover(MANIFEST)
    found = sink.committed_records()
    assert found is not None
    assert found.outputs == 4
    sink.close(complete=False)


@pytest.mark.parametrize(
    "change",
    [{"state_rows": 4}, {"state_rows": 6}, {"matrix": 128 + 4 * 32 + 5}, {"state_dim": 4}],
    ids=["fewer-rows", "more-rows", "matrix-cut-inside-a-row", "other-width"],
)
def test_npy_refuses_a_matrix_or_index_that_is_not_the_rows_recorded(
    tmp_path: Path, change: dict[str, int]
) -> None:
    checkpoint = interrupted("npy", tmp_path)
    tamper(checkpoint, **change)
    sink = make("npy", tmp_path)
    with pytest.raises(ResumeRefused, match=r"records .* rows .* --restart"):
        sink.recover(MANIFEST)
    sink.close(complete=False)


def test_text_files_tells_how_many_items_a_resume_skips(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d", "e"):
        (tmp_path / f"{name}.txt").write_text(name, encoding="utf-8")
    loader = TextFilesLoader(TextFilesConfig(root=tmp_path, glob="*.txt"))
    assert loader.position("a.txt") == 1
    assert loader.position("d.txt") == 4
    assert loader.position("gone.txt") is None
    for index in range(2):
        shard = Shard(index, 2)
        for after in ("a.txt", "b.txt", "c.txt", "e.txt"):
            read = [item.cursor for item in loader.read(shard=shard)]
            skipped = read.index(after) + 1 if after in read else None
            if skipped is not None:  # only a cursor of the shard's own is ever committed
                assert loader.position(after, shard=shard) == skipped


@pytest.mark.parametrize("kind", ["jsonl", "npy", "parquet", "lancedb"])
def test_a_stop_inside_a_commit_after_its_checkpoint_is_in_place_keeps_what_it_names(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SIGTERM just as the checkpoint appeared (after its rename, before the commit was
    # marked done) deleted the partial files it names: --resume was refused with "the
    # partial records file ... named by the checkpoint is gone" (tests/faults/test_sigterm
    # under load, one run in four).
    from seamline.contracts.sink_kit import _atomic
    from tests.components.test_checkpoint_trust import records

    sink = make(kind, tmp_path)
    sink.start(MANIFEST)
    sink.write(records(3))
    real_fsync = _atomic.fsync_directory

    def stopped_after_the_rename(directory: Path) -> None:
        real_fsync(directory)
        if any(directory.glob(f".{sink.config.path.name}.checkpoint")):  # type: ignore[attr-defined]
            raise KeyboardInterrupt

    monkeypatch.setattr(_atomic, "fsync_directory", stopped_after_the_rename)
    with pytest.raises(KeyboardInterrupt):
        sink.commit("c1")
    monkeypatch.setattr(_atomic, "fsync_directory", real_fsync)
    sink.close(complete=False)
    resumed = make(kind, tmp_path)
    assert resumed.recover(MANIFEST) == "c1"
    assert resumed.committed_records().outputs == 3
    resumed.close(complete=False)
