"""A reader during a republish: what it reads belongs to one publish, or is read again.

A republish renames the manifest, the companions and the primary file into place one
after another (``AtomicGroup.publish``). These tests stop a republish between two of
those renames (a hook on ``AtomicFile.publish``) and read there, deterministically.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.contracts import OutputRecord, UserError, readback
from seamline.contracts.readback import published, read_records
from seamline.contracts.sink_kit import AtomicFile
from seamline.contracts.sink_kit._lock import FileLock

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

DIM = 4
# (looked up so that this file runs against the code before the fix, to show it fail)
Republished: type[UserError] = getattr(readback, "Republished", UserError)


def records(count: int, seed: int, name: str) -> list[OutputRecord]:
    rng = np.random.default_rng(seed)
    return [
        OutputRecord(
            doc_id=f"{name}-{i}",
            index=0,
            span=(0, 1),
            vector=rng.standard_normal(DIM).astype(np.float32),
        )
        for i in range(count)
    ]


def publish(sink: Any, rows: list[OutputRecord]) -> None:
    sink.start({"model": {"use": "m", "with": {}}})
    sink.write(rows)
    sink.close()


def pairs(found: list[OutputRecord]) -> dict[str, list[float]]:
    return {record.doc_id: np.asarray(record.vector).tolist() for record in found}


def expected(rows: list[OutputRecord]) -> dict[str, list[float]]:
    return {record.doc_id: np.asarray(record.vector).tolist() for record in rows}


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readback, "REREAD_PAUSE", 0.0, raising=False)


def pause_before(
    monkeypatch: pytest.MonkeyPatch, name: str, then: Callable[[], None]
) -> list[bool]:
    """Run ``then`` once, when a republish is about to rename its file ``name`` into place
    (the files before it already renamed, it and those after not yet)."""
    original = AtomicFile.publish
    ran: list[bool] = []

    def hooked(self: AtomicFile, **keywords: Any) -> None:
        if self.destination.name == name and not ran:
            ran.append(True)
            then()
        original(self, **keywords)

    monkeypatch.setattr(AtomicFile, "publish", hooked)
    return ran


def test_npy_reader_between_the_index_and_the_matrix_is_never_mixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = NpySinkConfig(path=tmp_path / "emb.npy")
    old, new = records(6, 1, "old"), records(6, 2, "new")
    publish(NpySink(config), old)
    seen: list[BaseException] = []

    def read_now() -> None:  # the new index is out, the old matrix still in place
        try:
            read_records(config.path, NpySink)
        except UserError as err:
            seen.append(err)

    ran = pause_before(monkeypatch, "emb.npy", read_now)
    publish(NpySink(config), new)
    assert ran
    # The new index with the old matrix (as many rows) was paired row by row before:
    # the new ids with the old vectors. Now it is refused, after reading again (the
    # manifest, renamed last, still names the old index).
    assert len(seen) == 1, seen
    assert isinstance(seen[0], Republished), seen
    assert "emb.index.jsonl is not the index file" in str(seen[0])
    found = read_records(config.path, NpySink)
    assert found is not None
    assert pairs(found) == expected(new)


def test_npy_reader_that_opened_the_old_matrix_reads_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The matrix opened, then a whole republish, then the index: read again, the new pair."""
    config = NpySinkConfig(path=tmp_path / "emb.npy")
    old, new = records(6, 1, "old"), records(6, 2, "new")
    publish(NpySink(config), old)
    readers = published(config.path, NpySink)
    assert readers is not None
    original = readback.OutputReader.open
    republished: list[bool] = []

    def opening(self: readback.OutputReader, purpose: str) -> Any:
        if purpose == "index" and not republished:
            republished.append(True)
            publish(NpySink(config), new)
        return original(self, purpose)

    monkeypatch.setattr(readback.OutputReader, "open", opening)
    found = read_records(config.path, NpySink)
    assert republished
    assert found is not None
    assert pairs(found) == expected(new)


def test_jsonl_index_held_open_reads_a_republish_of_another_count(tmp_path: Path) -> None:
    """A reader made before a republish (an index held open) reads the new output: it
    was told "cut short" for good, as its manifest's count was the old one."""
    config = JsonlSinkConfig(path=tmp_path / "emb.jsonl")
    publish(JsonlSink(config), records(4, 1, "old"))
    held = published(config.path, JsonlSink)
    assert held is not None
    new = records(7, 2, "new")
    publish(JsonlSink(config), new)
    found = [row.id for _, rows in held[0].chunks(None) for row in rows]
    assert found == [record.doc_id for record in new]


def test_jsonl_reader_between_the_manifest_and_the_records_reads_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the renames a reader meets the new records and the old manifest (renamed
    last): retryable (:class:`Republished`), and read again once the publish is done, not
    "cut short"; the manifest read, then a whole republish before the records file is
    opened, reads again and gets the new output."""
    config = JsonlSinkConfig(path=tmp_path / "emb.jsonl")
    publish(JsonlSink(config), records(4, 1, "old"))
    new = records(7, 2, "new")
    seen: list[BaseException] = []

    def read_now() -> None:  # the new records (7) are out, the old manifest (4) in
        try:
            read_records(config.path, JsonlSink)
        except UserError as err:
            seen.append(err)

    pause_before(monkeypatch, "emb.manifest.json", read_now)
    publish(JsonlSink(config), new)
    assert len(seen) == 1, seen
    assert isinstance(seen[0], Republished), seen
    monkeypatch.undo()

    original = readback.OutputReader.open
    newer = records(5, 3, "newer")
    republished: list[bool] = []

    def opening(self: readback.OutputReader, purpose: str) -> Any:
        if purpose == "records" and not republished:
            republished.append(True)  # this reader holds the manifest of 7
            publish(JsonlSink(config), newer)
        return original(self, purpose)

    monkeypatch.setattr(readback.OutputReader, "open", opening)
    monkeypatch.setattr(readback, "REREAD_PAUSE", 0.0, raising=False)
    found = read_records(config.path, JsonlSink)
    assert republished
    assert found is not None
    assert pairs(found) == expected(newer)


def test_a_records_file_cut_short_is_still_refused(tmp_path: Path) -> None:
    config = JsonlSinkConfig(path=tmp_path / "emb.jsonl")
    publish(JsonlSink(config), records(4, 1, "a"))
    lines = config.path.read_bytes().splitlines(keepends=True)
    config.path.write_bytes(b"".join(lines[:-1]))
    with pytest.raises(UserError, match=r"holds 3 records, but .* counted 4"):
        read_records(config.path, JsonlSink)


def _value_changed(row: dict[str, Any]) -> None:
    row["embedding"][0] = 0.9


def _id_changed(row: dict[str, Any]) -> None:
    row["id"] = "edited"


@pytest.mark.parametrize("edit", [_value_changed, _id_changed], ids=["a value", "an id"])
def test_a_records_file_edited_in_place_its_count_kept_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    """One record edited, the line count kept: the manifest's sha256 of the records file
    refuses it (only the count was kept, and such an edit was searched without a word)."""
    config = JsonlSinkConfig(path=tmp_path / "emb.jsonl")
    publish(JsonlSink(config), records(4, 1, "a"))
    digest = hashlib.sha256(config.path.read_bytes()).hexdigest()
    lines = config.path.read_bytes().splitlines(keepends=True)
    row = json.loads(lines[1])
    edit(row)
    lines[1] = json.dumps(row).encode() + b"\n"
    config.path.write_bytes(b"".join(lines))
    with pytest.raises(UserError, match=r"emb\.jsonl is not the records file .*another sha256"):
        read_records(config.path, JsonlSink)
    manifest = json.loads(config.path.with_name("emb.manifest.json").read_text())
    assert manifest["outputs"]["sha256"] == {"emb.jsonl": digest}


def test_an_npy_index_changed_in_place_is_refused(tmp_path: Path) -> None:
    config = NpySinkConfig(path=tmp_path / "emb.npy")
    publish(NpySink(config), records(3, 1, "a"))
    index = config.path.with_suffix(".index.jsonl")
    index.write_bytes(index.read_bytes().replace(b'"a-0"', b'"b-0"'))
    with pytest.raises(UserError, match=r"emb\.index\.jsonl is not the index file"):
        read_records(config.path, NpySink)


def test_a_lock_whose_pid_cannot_be_written_is_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk as the lock is taken: the lock file and its flock are not left behind."""
    lock = FileLock(tmp_path / "out" / ".emb.jsonl.lock")
    original = FileLock._open

    def full_disk(self: FileLock) -> Any:
        handle = original(self)

        class Full:
            def __getattr__(self, name: str) -> Any:
                return getattr(handle, name)

            def flush(self) -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            def close(self) -> None:  # the pid still buffered: closing flushes, and fails
                handle.close()
                raise OSError(errno.ENOSPC, "No space left on device")

        return Full()

    monkeypatch.setattr(FileLock, "_open", full_disk)
    with pytest.raises(OSError, match="No space left"):
        lock.try_acquire()
    assert not lock.held
    assert not lock.path.exists()
    assert not (tmp_path / "out").exists()  # the folder made for it taken away again
    monkeypatch.undo()
    again = FileLock(lock.path)
    assert again.try_acquire()  # no flock left held by a leaked handle
    with open(lock.path, "rb") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    again.release()


def test_an_output_path_is_taken_as_a_str_too_and_anything_else_is_a_type_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # read_records("out/emb.jsonl", JsonlSink) said "AttributeError: 'str' object has no
    # attribute 'name'".
    from seamline.contracts.readback import read_errors

    rows = records(3, 1, "a")
    publish(JsonlSink(JsonlSinkConfig(path=tmp_path / "out" / "emb.jsonl")), rows)
    monkeypatch.chdir(tmp_path)
    for given in ("out/emb.jsonl", str(tmp_path / "out" / "emb.jsonl")):
        found = read_records(given, JsonlSink)
        assert found is not None
        assert pairs(found) == expected(rows)
        assert read_errors(given, JsonlSink) == []
    with pytest.raises(TypeError, match=r"read_records\(\) takes the output's path as a str "):
        read_records(b"out/emb.jsonl", JsonlSink)  # type: ignore[arg-type]
