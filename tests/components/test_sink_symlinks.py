"""A link planted at any name a sink would write is never followed.

An attacker who can write in the output folder (a shared one, /tmp) plants symbolic
links, pointing at a file of the victim's, at every name the sink is known to use:
the outputs, the checkpoint, the lock, the names of partial files the old code
used, and the very partial names an earlier run of the same sink chose (the
unpredictable names must not repeat). Every sink must write, commit, resume and
publish without touching the link's target, and publish real files, not links.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import DocumentError, OutputRecord, Sink, UserError
from seamline.contracts.sink_kit import AtomicFile

MANIFEST = {"pipeline": "p", "model": {"use": "bert-encoder", "with": {"weights": "w"}}}
SECRET = b"the victim's file: must never change\n"

SINKS: dict[str, Callable[[Path], Sink[Any]]] = {
    "jsonl": lambda out: JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl")),
    "npy": lambda out: NpySink(NpySinkConfig(path=out / "emb.npy")),
    "parquet": lambda out: ParquetSink(ParquetSinkConfig(path=out / "emb.parquet")),
    "lancedb": lambda out: LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance")),
}


def records(count: int, start: int = 0) -> list[OutputRecord]:
    rng = np.random.default_rng(start)
    return [
        OutputRecord(
            doc_id=f"doc-{i}",
            index=0,
            span=(0, 5),
            vector=rng.standard_normal(8).astype(np.float32),
            metadata={"n": i},
            text=f"text {i}",
        )
        for i in range(start, start + count)
    ]


def interrupted_run(out: Path, make: Callable[[Path], Sink[Any]]) -> set[str]:
    """Write, commit, write again, stop: the names present then (partial state included)."""
    sink = make(out)
    sink.start(MANIFEST)
    sink.write(records(3))
    sink.write_error(DocumentError(id="bad", reason="unreadable"))
    sink.commit("c1")
    sink.write(records(2, start=3))
    names = {p.name for p in out.iterdir()}
    sink.close(complete=False)
    return names


def plant(out: Path, names: set[str], victim: Path, *, hard: bool = False) -> list[Path]:
    """A link to ``victim`` at each of ``names`` not already taken; the links planted.

    ``hard``: a hard link (another name of the victim's file) instead of a symbolic one.
    """
    out.mkdir(parents=True, exist_ok=True)
    planted = []
    for name in sorted(names):
        link = out / name
        if not os.path.lexists(link):
            if hard:
                os.link(victim, link)
            else:
                link.symlink_to(victim)
            planted.append(link)
    return planted


def predictable_names(out: Path, make: Callable[[Path], Sink[Any]], scratch: Path) -> set[str]:
    """Every name a clean run of the sink used or published, plus the old fixed partials."""
    reference = scratch / out.name
    names = interrupted_run(reference, make)
    sink = make(reference)
    sink.recover(MANIFEST)
    sink.write(records(1, start=5))
    sink.close(complete=True)
    names |= {p.name for p in reference.iterdir()}
    published = [n for n in names if not n.startswith(".")]
    names |= {f".{n}.partial.tmp" for n in published}  # what the old code always used
    return names


@pytest.mark.parametrize("kind", sorted(SINKS))
def test_planted_links_are_never_followed(tmp_path: Path, kind: str) -> None:
    make = SINKS[kind]
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    out = tmp_path / "out"
    names = predictable_names(out, make, tmp_path / "reference")
    names.discard("emb.lance")  # a link at a table's own name is refused: see below
    planted = plant(out, names, victim)
    assert planted, "there must be names to plant links at"

    sink = make(out)
    sink.start(MANIFEST)  # a fresh run clears what it knows of: plant again after it
    plant(out, names, victim)
    sink.write(records(3))
    sink.write_error(DocumentError(id="bad", reason="unreadable"))
    sink.commit("c1")
    sink.close(complete=False)
    plant(out, ({p.name for p in out.iterdir()} | names) - {"emb.lance"}, victim)  # new names
    resumed = make(out)
    assert resumed.recover(MANIFEST) == "c1"
    resumed.write(records(2, start=3))
    resumed.close(complete=True)

    assert victim.read_bytes() == SECRET, "a planted link was written through"
    assert not victim.is_symlink()
    published = [p for p in out.iterdir() if not p.name.startswith(".")]
    assert published
    for path in published:
        if path.is_symlink():
            assert path.resolve() != victim.resolve(), f"{path.name} is the attacker's link"
    outputs = {p.name for p in published if not p.is_symlink()}
    assert any(name.startswith("emb") for name in outputs), outputs


def test_new_temporary_files_are_created_exclusively(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    destination = tmp_path / "out" / "emb.jsonl"
    destination.parent.mkdir()
    first = AtomicFile(destination, prefix=".emb.jsonl.partial.")
    second = AtomicFile(destination, prefix=".emb.jsonl.partial.")
    assert first.temporary != second.temporary, "names must not repeat"
    assert first.temporary.name.startswith(".emb.jsonl.partial.")
    assert (first.temporary.stat().st_mode & 0o777) == 0o600
    first.discard()
    second.discard()


def test_a_partial_file_replaced_by_a_link_is_refused_on_resume(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    out = tmp_path / "out"
    interrupted_run(out, SINKS["jsonl"])
    partial = next(out.glob(".emb.jsonl.partial.*.tmp"))
    partial.unlink()
    partial.symlink_to(victim)
    with pytest.raises(UserError, match="symbolic link"):
        SINKS["jsonl"](out).recover(MANIFEST)
    assert victim.read_bytes() == SECRET


def test_a_link_at_a_lancedb_table_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_bytes(SECRET)
    out = tmp_path / "out"
    out.mkdir()
    (out / "emb.lance").symlink_to(victim, target_is_directory=True)
    sink = LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance", mode="append"))
    with pytest.raises(UserError, match="symbolic link"):
        sink.start(MANIFEST)  # append adopts the table it finds: a link is refused here
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("kind", sorted(SINKS))
def test_planted_hard_links_are_never_written_through(tmp_path: Path, kind: str) -> None:
    """A hard link is no link to ``O_NOFOLLOW``: it is the victim's file under a new name.

    The lock's name is fixed: a planted hard link there had the pid written over the
    victim's contents.
    """
    make = SINKS[kind]
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    victim.chmod(0o600)
    out = tmp_path / "out"
    names = predictable_names(out, make, tmp_path / "reference") - {"emb.lance"}
    assert plant(out, names, victim, hard=True), "there must be names to plant links at"

    sink = make(out)
    sink.start(MANIFEST)
    plant(out, names, victim, hard=True)
    sink.write(records(3))
    sink.commit("c1")
    sink.close(complete=False)
    plant(out, ({p.name for p in out.iterdir()} | names) - {"emb.lance"}, victim, hard=True)
    resumed = make(out)
    assert resumed.recover(MANIFEST) == "c1"
    resumed.write(records(2, start=3))
    resumed.close(complete=True)

    assert victim.read_bytes() == SECRET, "a planted hard link was written through"
    assert (victim.stat().st_mode & 0o777) == 0o600, "the victim's mode was changed"


def test_a_partial_file_replaced_by_a_hard_link_is_refused_on_resume(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    out = tmp_path / "out"
    interrupted_run(out, SINKS["jsonl"])
    for partial in out.glob(".emb*.partial.*.tmp"):
        partial.unlink()
        os.link(victim, partial)
    with pytest.raises(UserError, match="hard links"):
        SINKS["jsonl"](out).recover(MANIFEST)
    assert victim.read_bytes() == SECRET


def lancedb_interrupted(out: Path) -> Path:
    """A lancedb run stopped after a commit: its staging database (a folder it resumes)."""
    interrupted_run(out, SINKS["lancedb"])
    (store,) = [p for p in out.iterdir() if p.name.startswith(".emb.lance.") and p.is_dir()]
    return store


def move_behind_a_link(folder: Path, elsewhere: Path) -> None:
    """``folder``'s content moved to ``elsewhere``, a symbolic link left in its place."""
    shutil.move(folder, elsewhere)
    folder.symlink_to(elsewhere, target_is_directory=True)


def test_a_link_inside_a_lancedb_staging_table_refuses_the_resume(tmp_path: Path) -> None:
    """Only the staging folder itself was checked: links inside it (its ``data`` and
    ``_versions``) had the resume's new data files written to the folder they named."""
    out = tmp_path / "out"
    store = lancedb_interrupted(out)
    (data,) = [p for p in store.rglob("data") if p.is_dir()]
    elsewhere = tmp_path / "elsewhere"
    move_behind_a_link(data, elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    with pytest.raises(UserError, match=r"holds '.*data', a symbolic link, which this sink"):
        SINKS["lancedb"](out).recover(MANIFEST)
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_a_link_inside_a_lancedb_table_refuses_an_append(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = SINKS["lancedb"](out)
    first.start(MANIFEST)
    first.write(records(3))
    first.close(complete=True)
    elsewhere = tmp_path / "elsewhere"
    move_behind_a_link(out / "emb.lance" / "data", elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    sink = LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance", mode="append"))
    with pytest.raises(UserError, match=r"cannot append into .*: the table holds '.*data', a"):
        sink.start(MANIFEST)
    sink.close(complete=False)
    assert sorted(p.name for p in elsewhere.iterdir()) == before
