"""A checkpoint, a staged run and a published manifest are read as hostile input.

Anyone who can write the output folder can edit them, so a resume must never let
one choose what is opened, truncated, read or deleted, and a malformed one must end
in one clear refusal (``ResumeRefused``: it names the checkpoint and the fix, and
``--restart`` starts over) instead of an ``AttributeError`` or a "machine failure".
A FIFO at any name a sink reads or locks is refused at once, never waited on.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import signal
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import DocumentError, OutputRecord, ResumeRefused, Shard, Sink, UserError
from seamline.contracts.sink_kit import _checkpoint
from seamline.contracts.sink_kit._lock import lock_path
from tests.readback import read_records

MANIFEST = {"seamline_manifest": 1, "pipeline": "trust", "model": {"use": "toy", "with": {}}}
NAMES = {"jsonl": "emb.jsonl", "npy": "emb.npy", "parquet": "emb.parquet", "lancedb": "emb.lance"}
SECRET = b"the victim's file: must never change\n"


def make(kind: str, out: Path) -> Sink[Any]:
    path = out / NAMES[kind]
    if kind == "jsonl":
        return JsonlSink(JsonlSinkConfig(path=path))
    if kind == "npy":
        return NpySink(NpySinkConfig(path=path))
    if kind == "parquet":
        return ParquetSink(ParquetSinkConfig(path=path, row_group_size=2))
    return LanceDbSink(LanceDbSinkConfig(path=path, buffer_rows=2))


def records(count: int, start: int = 0) -> list[OutputRecord]:
    rng = np.random.default_rng(start)
    return [
        OutputRecord(f"d{i}", 0, (0, 4), rng.standard_normal(8).astype(np.float32), {}, f"t{i}")
        for i in range(start, start + count)
    ]


def interrupted(kind: str, out: Path) -> Path:
    """A run that committed twice and died; its checkpoint."""
    sink = make(kind, out)
    sink.start(MANIFEST)
    sink.write(records(3))
    sink.write_error(DocumentError(id="bad", reason="unreadable"))
    sink.commit("c1")
    sink.write(records(2, start=3))
    sink.commit("c2")
    sink.write(records(2, start=5))
    del sink
    gc.collect()
    return out / f".{NAMES[kind]}.checkpoint"


class Hung(BaseException):
    """Raised by :func:`within`'s alarm; not an ``OSError`` (``TimeoutError`` is one), which
    code under test may catch and carry on from, blocking again."""


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: an open() waiting on a FIFO is interrupted after ``seconds``."""

    def expire(signum: int, frame: types.FrameType | None) -> None:
        raise Hung(f"still waiting after {seconds} s: something blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def edit(checkpoint: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    record = json.loads(checkpoint.read_text(encoding="utf-8"))
    changed = change(record)
    checkpoint.write_text(json.dumps(record if changed is None else changed), encoding="utf-8")


def assert_refused(kind: str, out: Path, *said: str) -> str:
    """A resume of ``out`` is refused: one message naming the checkpoint and the way out."""
    checkpoint = out / f".{NAMES[kind]}.checkpoint"
    sink = make(kind, out)
    with within(20), pytest.raises(ResumeRefused) as refused:
        sink.recover(MANIFEST)
    sink.close(complete=False)
    message = str(refused.value)
    assert repr(str(checkpoint)) in message or str(out) in message, message
    assert "--restart" in message, message
    for words in said:
        assert words in message, message
    return message


# --- the checkpoint's fields ---------------------------------------------------------------


def setter(*path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        node = record
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


FIELDS: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "bytes: 'x'": (setter("files", "records", "bytes", value="x"), "files.records.bytes"),
    "bytes: -1": (setter("files", "records", "bytes", value=-1), "files.records.bytes"),
    "bytes: true": (setter("files", "records", "bytes", value=True), "files.records.bytes"),
    "bytes: 1.5": (setter("files", "errors", "bytes", value=1.5), "files.errors.bytes"),
    "files.errors: 5": (setter("files", "errors", value=5), "files.errors"),
    "files: 'junk'": (setter("files", value="junk"), "files"),
    "files: {}": (setter("files", value={}), "records the files []"),
    "files: one more": (
        setter("files", "extra", value={"partial": "", "bytes": 0}),
        "records the files ['errors', 'extra', 'records']",
    ),
    "partial: 5": (setter("files", "records", "partial", value=5), "files.records.partial"),
    "cursor: 5": (setter("cursor", value=5), "cursor"),
    "cursor: []": (setter("cursor", value=[]), "cursor"),
    "sink: npy": (setter("sink", value="npy"), "written by a 'npy' sink"),
    "sink: missing": (lambda r: r.pop("sink") and None, "sink: Field required"),
    "format 1": (setter("seamline_checkpoint", value=1), "format 1"),
    "format 'x'": (setter("seamline_checkpoint", value="x"), "format 'x'"),
    "inputs.pipeline: 'x'": (setter("inputs", value={"pipeline": "x"}), "inputs.pipeline"),
    "inputs.input: []": (setter("inputs", value={"input": []}), "inputs.input"),
    "inputs.input.paths: 5": (
        setter("inputs", value={"input": {"paths": 5, "files": "f"}}),
        "inputs.input.paths",
    ),
    "state: []": (setter("state", value=[]), "state"),
    "state: a field": (setter("state", value={"rows": 1}), "rows: Extra inputs"),
    "a field more": (setter("extra", value=1), "extra: Extra inputs"),
    "a list": (lambda r: [r], "Input should be a valid dictionary"),
    "a string": (lambda r: "checkpoint", "Input should be a valid dictionary"),
}


@pytest.mark.parametrize("case", FIELDS)
def test_a_checkpoint_with_fields_of_the_wrong_kind_is_refused(tmp_path: Path, case: str) -> None:
    change, said = FIELDS[case]
    checkpoint = interrupted("jsonl", tmp_path / "out")
    edit(checkpoint, change)
    assert_refused("jsonl", tmp_path / "out", "is not one this jsonl sink wrote", said)


def test_another_sinks_checkpoint_is_said_to_be_that_before_its_state_is_read(
    tmp_path: Path,
) -> None:
    """``--resume --set sink.use=npy`` over a jsonl run's checkpoint (the same path) was
    refused as ``state.rows: Field required``: the state was checked against the npy
    sink's schema before the checkpoint's sink was read."""
    out = tmp_path / "out"
    interrupted("jsonl", out)
    sink = NpySink(NpySinkConfig(path=out / NAMES["jsonl"]))
    with within(20), pytest.raises(ResumeRefused) as refused:
        sink.recover(MANIFEST)
    sink.close(complete=False)
    assert "it was written by a 'jsonl' sink" in str(refused.value)


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"\xff\xfe not utf-8", b"null", b"1e999999", b'{"a": ' * 10000],
    ids=["empty", "truncated", "not-utf8", "null", "huge-number", "deeply-nested"],
)
def test_a_checkpoint_that_is_not_json_is_refused(tmp_path: Path, content: bytes) -> None:
    checkpoint = interrupted("jsonl", tmp_path / "out")
    checkpoint.write_bytes(content)
    assert_refused("jsonl", tmp_path / "out", "is not one this jsonl sink wrote")


def test_a_checkpoint_larger_than_the_bound_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = interrupted("jsonl", tmp_path / "out")
    record = json.loads(checkpoint.read_text(encoding="utf-8"))
    record["model"] = {"use": "toy", "padding": "x" * 4096}  # valid, only too long
    checkpoint.write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr(_checkpoint, "MAX_CHECKPOINT_BYTES", 4000)
    assert_refused("jsonl", tmp_path / "out", "larger than 4,000 bytes")


SINK_STATES: dict[str, tuple[str, Callable[[dict[str, Any]], Any], str]] = {
    "npy rows: 'x'": ("npy", setter("state", "rows", value="x"), "state.rows"),
    "npy rows: -1": ("npy", setter("state", "rows", value=-1), "state.rows"),
    "npy dim: 0": ("npy", setter("state", "dim", value=0), "state.dim"),
    "npy dtype: 5": ("npy", setter("state", "dtype", value=5), "state.dtype"),
    "parquet parts: 'x'": ("parquet", setter("state", "parts", value="x"), "state.parts"),
    "parquet part ../": (
        "parquet",
        lambda r: r["state"]["parts"][0].update(name="../../victim.parquet"),
        "state.parts.0.name",
    ),
    "parquet part absolute": (
        "parquet",
        lambda r: r["state"]["parts"][0].update(name="/etc/passwd"),
        "state.parts.0.name",
    ),
    "parquet bytes: -5": (
        "parquet",
        lambda r: r["state"]["parts"][0].update(bytes=-5),
        "state.parts.0.bytes",
    ),
    "parquet columns: junk": ("parquet", setter("state", "columns", value="@@@"), "not an Arrow"),
    "lancedb staged: 'x'": ("lancedb", setter("state", "staged", value="x"), "state.staged"),
    "lancedb staged: 0": ("lancedb", setter("state", "staged", value=0), "state.staged"),
    "lancedb columns: junk": (
        "lancedb",
        setter("state", "columns", value="aGVsbG8="),
        "not an Arrow schema",
    ),
    "lancedb publishing: 'x'": (
        "lancedb",
        setter("state", "publishing", value={"table_version": "x"}),
        "state.publishing.table_version",
    ),
    "lancedb run id ../": (
        "lancedb",
        setter("state", "publishing", value={"table_version": 1, "run_id": "../../victim"}),
        "state.publishing.run_id",
    ),
}


@pytest.mark.parametrize("case", SINK_STATES)
def test_a_sinks_own_state_of_the_wrong_kind_is_refused(tmp_path: Path, case: str) -> None:
    kind, change, said = SINK_STATES[case]
    checkpoint = interrupted(kind, tmp_path / "out")
    edit(checkpoint, change)
    assert_refused(kind, tmp_path / "out", f"is not one this {kind} sink wrote", said)


# --- names that lead elsewhere ---------------------------------------------------------------


FOREIGN = {
    "a folder up": "../elsewhere/.emb.jsonl.partial.evil.tmp",
    "absolute": "{tmp}/elsewhere/.emb.jsonl.partial.evil.tmp",
    "a subfolder": "sub/.emb.jsonl.partial.evil.tmp",
    "the destination": "emb.jsonl",
    "the errors file's partial": ".emb.errors.jsonl.partial.evil.tmp",
    "without .tmp": ".emb.jsonl.partial.evil",
    "a NUL": ".emb.jsonl.partial.evil\x00.tmp",
    "dot-dot": "..",
}


@pytest.mark.parametrize("case", FOREIGN)
def test_a_checkpoint_naming_a_file_elsewhere_is_refused_and_the_file_untouched(
    tmp_path: Path, case: str
) -> None:
    """Would a resume open (and cut back to ``bytes``) whatever the checkpoint names, the
    victim there would be truncated: the checkpoint must be refused before any open."""
    out = tmp_path / "out"
    checkpoint = interrupted("jsonl", out)
    name = FOREIGN[case].format(tmp=tmp_path)
    victims = []
    for folder in (out, out / "sub", tmp_path / "elsewhere"):
        folder.mkdir(exist_ok=True)
        for victim_name in (Path(name).name, ".emb.jsonl.partial.evil.tmp", "emb.jsonl"):
            victim = folder / victim_name.replace("\x00", "")
            if victim_name not in ("", "..") and not victim.exists():
                victim.write_bytes(SECRET)
                victims.append(victim)
    edit(checkpoint, setter("files", "records", value={"partial": name, "bytes": 0}))
    assert_refused("jsonl", out, "names files that are not this output's partial files")
    for victim in victims:
        assert victim.read_bytes() == SECRET, f"{victim} was touched"


def test_a_checkpoint_naming_another_outputs_partial_is_refused(tmp_path: Path) -> None:
    """Two sinks writing one folder: one's checkpoint may not adopt the other's file."""
    out = tmp_path / "out"
    interrupted("jsonl", out)
    other = JsonlSink(JsonlSinkConfig(path=out / "other.jsonl"))
    other.start(MANIFEST)
    other.write(records(1))
    other.commit("o1")
    del other
    gc.collect()
    (theirs,) = out.glob(".other.jsonl.partial.*.tmp")
    before = theirs.read_bytes()
    edit(out / ".emb.jsonl.checkpoint", setter("files", "records", "partial", value=theirs.name))
    assert_refused("jsonl", out, "not this output's partial files")
    assert theirs.read_bytes() == before


# --- what is at a name, instead of a file --------------------------------------------------


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_fifo_at_the_checkpoint_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    checkpoint = interrupted(kind, tmp_path / "out")
    checkpoint.unlink()
    os.mkfifo(checkpoint)
    assert_refused(kind, tmp_path / "out", "a FIFO (named pipe)")
    sink = make(kind, tmp_path / "out")
    with within(20):
        sink.start(MANIFEST)  # a fresh run removes it and starts over
    sink.write(records(1))
    sink.close()
    assert not checkpoint.exists()


def test_a_link_at_the_checkpoint_is_refused_not_followed(tmp_path: Path) -> None:
    checkpoint = interrupted("jsonl", tmp_path / "out")
    real = tmp_path / "real-checkpoint"
    checkpoint.rename(real)
    checkpoint.symlink_to(real)
    assert_refused("jsonl", tmp_path / "out", "a symbolic link")


@pytest.mark.parametrize("kind", sorted(NAMES))
@pytest.mark.parametrize("how", ["start", "recover"])
def test_a_fifo_at_the_lock_is_one_line_naming_it(tmp_path: Path, kind: str, how: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lock = lock_path(out / NAMES[kind])
    os.mkfifo(lock)
    sink = make(kind, out)
    with within(20), pytest.raises(UserError) as refused:
        getattr(sink, how)(MANIFEST)
    sink.close(complete=False)
    message = str(refused.value)
    assert not isinstance(refused.value, ResumeRefused)
    assert f"the lock file {str(lock)!r} is a FIFO (named pipe)" in message, message
    assert "Remove it, then run again" in message
    assert "--resume" not in message, "a FIFO is not another run: resuming would not help"
    assert lock.exists(), "the FIFO is the user's to remove"


@pytest.mark.parametrize("what", ["a directory", "a socket"])
def test_other_things_at_the_lock_are_refused_too(tmp_path: Path, what: str) -> None:
    import socket

    out = tmp_path / "out"
    out.mkdir()
    lock = lock_path(out / "emb.jsonl")
    if what == "a directory":
        lock.mkdir()
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(lock))
    with within(20), pytest.raises(UserError, match=f"is {what}, not a file seamline made"):
        make("jsonl", out).start(MANIFEST)


def test_a_fifo_at_a_partial_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    interrupted("jsonl", out)
    record = json.loads((out / ".emb.jsonl.checkpoint").read_text(encoding="utf-8"))
    partial = out / record["files"]["records"]["partial"]
    partial.unlink()
    os.mkfifo(partial)
    assert_refused("jsonl", out, "is a FIFO (named pipe), not the file this sink wrote")


# --- staged runs and published manifests -----------------------------------------------------


def test_a_manifest_naming_a_run_elsewhere_never_makes_a_sink_delete_it(tmp_path: Path) -> None:
    """The published manifest's ``outputs.run_id`` says which staging folder a publication
    replaces (and deletes): one that leads out of the staging area is not believed."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_bytes(SECRET)
    out = tmp_path / "out"
    out.mkdir()
    manifest = out / "emb.manifest.json"
    for run_id in ("../../victim", str(victim), "..", "a/../../../victim"):
        manifest.write_text(json.dumps({"outputs": {"sink": "jsonl", "run_id": run_id}}))
        driver = make("jsonl", out)
        driver.begin_parts("run1", 1, MANIFEST)
        part = driver.part("run1", Shard(0, 1))
        part.recover(MANIFEST)
        part.write(records(1))
        part.close()
        driver.publish_parts("run1", 1, MANIFEST)
        assert (victim / "keep.txt").read_bytes() == SECRET, run_id
        manifest.write_text(json.dumps({"outputs": {"sink": "jsonl", "run_id": run_id}}))
        make("jsonl", out).begin_parts("run2", 1, MANIFEST)  # a fresh run deletes others
        assert (victim / "keep.txt").read_bytes() == SECRET, run_id


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"run_id": "../../victim"}, "run_id"),
        ({"count": "2"}, "count"),
        ({"count": 0}, "count"),
        ({"count": 10**12}, "count"),
        ({"sink": "npy"}, "of a npy sink"),
        ({"run_id": "another"}, "names run 'another'"),
    ],
)
def test_a_staged_run_record_of_the_wrong_kind_is_refused(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    out = tmp_path / "out"
    make("jsonl", out).begin_parts("run1", 2, MANIFEST)
    record_path = out / ".emb.jsonl.shards" / "run1" / "run.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record_path.write_text(json.dumps({**record, **change}), encoding="utf-8")
    with within(20), pytest.raises(ResumeRefused, match=said) as refused:
        make("jsonl", out).staged_run(MANIFEST)  # count 10**12 used to mean 10**12 stat calls
    assert repr(str(record_path)) in str(refused.value)
    assert "--restart" in str(refused.value)


def test_a_fifo_as_the_published_manifest_does_not_hang_a_run(tmp_path: Path) -> None:
    """Reading the published run id (a staged run) or the table's manifest (lancedb) opened
    the FIFO and waited for ever; both now refuse what is there, as validation does."""
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "emb.manifest.json")
    fifo = r"is a FIFO \(named pipe\), not a regular file"
    with within(20):
        with pytest.raises(UserError, match=fifo):
            make("jsonl", out).begin_parts("run1", 1, MANIFEST)
        table = LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance", mode="append"))
        with pytest.raises(UserError, match=fifo):
            table.start(MANIFEST)
        table.close(complete=False)


# --- a refused resume -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_refused_resume_leaves_the_output_for_the_next_try(tmp_path: Path, kind: str) -> None:
    """ "Restore them, and resume again": a refusal (here a resume with another model) must
    leave the committed state as it was, so that the right resume can still continue it."""
    out = tmp_path / "out"
    interrupted(kind, out)

    def state() -> list[str]:  # the lock file comes and goes with its holder
        return sorted(p.name for p in out.iterdir() if not p.name.endswith(".lock"))

    before = state()
    wrong = make(kind, out)
    with pytest.raises(ResumeRefused, match="another model"):
        wrong.recover({**MANIFEST, "model": {"use": "another"}})
    wrong.close(complete=False)  # the orchestrator closes a sink whose run failed
    assert state() == before
    right = make(kind, out)
    assert right.recover(MANIFEST) == "c2"
    right.write(records(2, start=5))
    right.close()
    found = read_records(out / NAMES[kind])
    assert [r.doc_id for r in found or []] == [f"d{i}" for i in range(7)]


# --- links where a sink keeps its state -------------------------------------------------------


def victim_folder(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_bytes(SECRET)
    (victim / "sub").mkdir()
    (victim / "sub" / "keep.txt").write_bytes(SECRET)
    return victim


def untouched(victim: Path) -> bool:
    return (victim / "keep.txt").read_bytes() == SECRET and (
        victim / "sub" / "keep.txt"
    ).read_bytes() == SECRET


@pytest.mark.parametrize("kind", ["parquet", "lancedb"])
def test_a_link_at_the_staging_folder_is_refused_not_followed(tmp_path: Path, kind: str) -> None:
    """The parts folder (parquet) and staging database (lancedb) a resume continues: a link
    planted there would have the resume delete, read or restore whatever it points at."""
    out = tmp_path / "out"
    checkpoint = interrupted(kind, out)
    staging = out / f".{NAMES[kind]}.partial.tmp"
    shutil.rmtree(staging)
    victim = victim_folder(tmp_path)
    staging.symlink_to(victim, target_is_directory=True)
    if kind == "parquet":  # a checkpoint of no parts: every file "after" it would go
        edit(checkpoint, setter("state", "parts", value=[]))
    else:
        edit(checkpoint, setter("state", "staged", value=1))
    assert_refused(kind, out, "symbolic link")
    assert untouched(victim)
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt", "sub"]


def test_a_link_at_the_staging_area_of_parts_is_never_followed(tmp_path: Path) -> None:
    """``.<name>.shards`` holds the runs split into shards; a fresh run deletes the runs it
    finds there, a resume adopts one: never those of a folder a link leads to."""
    out = tmp_path / "out"
    out.mkdir()
    victim = victim_folder(tmp_path)
    (victim / "sub" / "run.json").write_text(json.dumps({"run_id": "sub"}))
    root = out / ".emb.jsonl.shards"
    root.symlink_to(victim, target_is_directory=True)
    with pytest.raises(ResumeRefused, match="symbolic link"):
        make("jsonl", out).staged_run(MANIFEST)
    make("jsonl", out).begin_parts("run1", 1, MANIFEST)  # a fresh run: the link is replaced
    assert untouched(victim)
    assert root.is_dir()
    assert not root.is_symlink()
    assert (root / "run1" / "run.json").is_file()


def test_a_linked_run_or_part_folder_is_never_adopted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    driver = make("jsonl", out)
    driver.begin_parts("run1", 2, MANIFEST)
    root = out / ".emb.jsonl.shards"
    victim = victim_folder(tmp_path)
    # A staged run of the attacker's, newer than ours, reached through a link.
    shutil.copy(root / "run1" / "run.json", victim / "run.json")
    record = json.loads((victim / "run.json").read_text())
    (victim / "run.json").write_text(json.dumps({**record, "run_id": "zzz"}))
    (root / "zzz").symlink_to(victim, target_is_directory=True)
    staged = make("jsonl", out).staged_run(MANIFEST)
    assert staged is not None
    assert staged.run_id == "run1", "the linked run was adopted"
    # A part folder planted as a link: the part is written in a folder of its own instead.
    (root / "run1" / "part-00000-of-00002").symlink_to(victim, target_is_directory=True)
    part = make("jsonl", out).part("run1", Shard(0, 2))
    part.recover(MANIFEST)
    part.write(records(2))
    part.close()
    assert untouched(victim)
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt", "run.json", "sub"]
    assert not (root / "run1" / "part-00000-of-00002").is_symlink()


def test_a_part_is_finished_only_as_its_sink_left_it(tmp_path: Path) -> None:
    """A resume publishes a finished part as it is, never writing it again: an empty record
    file planted in an unfinished part's folder, or a finished part reached through a link,
    had its shard skipped, and the run published 30 of 40 documents and exited 0."""
    out = tmp_path / "out"
    driver = make("jsonl", out)
    driver.begin_parts("run1", 3, MANIFEST)
    root = out / ".emb.jsonl.shards" / "run1"
    done = make("jsonl", out).part("run1", Shard(0, 3))
    done.recover(MANIFEST)
    done.write(records(3))
    done.close()
    assert (staged := make("jsonl", out).staged_run(MANIFEST)) is not None
    assert staged.finished == {0}, "a part its sink finished is finished"

    planted = root / "part-00001-of-00003"
    planted.mkdir()
    (planted / "emb.jsonl").touch()  # the primary alone: no manifest, no errors file
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root / "part-00000-of-00003", elsewhere)
    (root / "part-00002-of-00003").symlink_to(elsewhere, target_is_directory=True)
    assert (staged := make("jsonl", out).staged_run(MANIFEST)) is not None
    assert staged.finished == {0}, "neither the planted file nor the linked part is finished"
    assert not make("jsonl", out).part("run1", Shard(1, 3)).finished()

    records_file = root / "part-00000-of-00003" / "emb.jsonl"
    records_file.write_bytes(b"".join(records_file.read_bytes().splitlines(True)[:2]))
    with pytest.raises(ResumeRefused) as refused:
        make("jsonl", out).staged_run(MANIFEST)
    message = str(refused.value)
    assert "the finished part" in message
    assert "'emb.jsonl' holds 2 records where its manifest counted 3" in message
    assert "delete that part's folder" in message
