"""What another user put at a name a sink uses is refused, never written into or resumed.

In a shared output folder (``/tmp/shared``, mode 1777) another user made the parquet
sink's staging folder in advance, mode 0777: the victim's run wrote every part into it
(the attacker read the text and vectors), and published the parts the attacker swapped
in, exit 0. A staging folder, a staging area of parts, a partial file, a checkpoint and
a lock file must each be the user's alone (:mod:`seamline.contracts.ownership`, the
compile cache's rule). A second user cannot be made in a test, so "another user's" is
simulated: the owner check is told that the planted thing's owner is someone else.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.contracts import ResumeRefused, Sink, UserError, ownership
from seamline.contracts.sink_kit._atomic import own_directory
from seamline.contracts.sink_kit._checkpoint import checkpoint_path, partial_path
from seamline.contracts.sink_kit._lock import lock_path
from tests.components.test_sink_symlinks import MANIFEST, SINKS, interrupted_run, records

STAGING = ["parquet", "lancedb"]


def another_users(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> None:
    """Have the owner check take ``paths`` (as they are now) for another user's."""
    planted = {(found.st_dev, found.st_ino) for found in map(os.lstat, paths)}
    real = ownership.owned_by_another

    def owned_by_another(found: os.stat_result) -> str | None:
        if (found.st_dev, found.st_ino) in planted:
            return "it is owned by another user (uid 4002)"
        return real(found)

    monkeypatch.setattr(ownership, "owned_by_another", owned_by_another)


@pytest.mark.parametrize("kind", STAGING)
def test_a_staging_folder_another_user_made_is_refused_before_any_work(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    make: Callable[[Path], Sink[Any]] = SINKS[kind]
    out = tmp_path / "out"
    out.mkdir()
    folder = partial_path(out / ("emb.parquet" if kind == "parquet" else "emb.lance"))
    folder.mkdir(mode=0o777)
    another_users(monkeypatch, folder)
    sink = make(out)
    with pytest.raises(UserError, match=r"staging folder .* belongs to another user") as refused:
        sink.start(MANIFEST)
    assert "nothing was written to it" in str(refused.value)
    assert "write the output to a folder of your own" in str(refused.value)
    sink.close(complete=False)
    assert list(folder.iterdir()) == []


def test_another_users_folder_is_refused_where_a_run_makes_its_staging_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made between the start's check and the first part: refused where it is made."""
    folder = tmp_path / ".emb.parquet.partial.tmp"
    folder.mkdir(mode=0o777)
    another_users(monkeypatch, folder)
    with pytest.raises(UserError, match="belongs to another user"):
        own_directory(folder)


def test_a_staging_folder_others_can_write_is_refused_where_it_is_made(tmp_path: Path) -> None:
    folder = tmp_path / ".emb.parquet.partial.tmp"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(UserError, match=r"every user can write it \(mode 777\).*rm -r"):
        own_directory(folder)
    folder.chmod(0o700)
    own_directory(folder)  # the user's alone: kept (a resumed run's)


@pytest.mark.parametrize("kind", STAGING)
def test_a_resume_from_the_users_own_staging_folder_goes_on(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    interrupted_run(out, SINKS[kind])
    sink = SINKS[kind](out)
    assert sink.recover(MANIFEST) == "c1"
    sink.write(records(2, start=3))
    sink.close(complete=True)


@pytest.mark.parametrize("kind", STAGING)
def test_a_staging_folder_opened_to_others_refuses_the_resume(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    interrupted_run(out, SINKS[kind])
    (folder,) = [p for p in out.iterdir() if p.name.endswith(".partial.tmp") and p.is_dir()]
    folder.chmod(0o777)
    with pytest.raises(ResumeRefused, match=r"every user can write it .*--restart"):
        SINKS[kind](out).recover(MANIFEST)
    sink = SINKS[kind](out)  # --restart: a fresh run deletes it and makes its own
    sink.start(MANIFEST)
    sink.write(records(3))
    sink.commit("c1")
    assert folder.stat().st_mode & 0o777 == 0o700
    sink.close(complete=True)


@pytest.mark.parametrize("kind", STAGING)
def test_another_users_staging_folder_refuses_the_resume(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    interrupted_run(out, SINKS[kind])
    (folder,) = [p for p in out.iterdir() if p.name.endswith(".partial.tmp") and p.is_dir()]
    another_users(monkeypatch, folder)
    with pytest.raises(UserError, match="belongs to another user"):
        SINKS[kind](out).recover(MANIFEST)


def test_another_users_staging_area_of_parts_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    area = out / ".emb.jsonl.shards"
    area.mkdir(mode=0o777)
    another_users(monkeypatch, area)
    sink = JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl"))
    with pytest.raises(UserError, match=r"staging area .* belongs to another user"):
        sink.begin_parts("run1", 2, MANIFEST)
    assert list(area.iterdir()) == []


def test_another_users_partial_file_refuses_the_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    interrupted_run(out, SINKS["jsonl"])
    partial = next(out.glob(".emb.jsonl.partial.*.tmp"))
    before = partial.read_bytes()
    another_users(monkeypatch, partial)
    with pytest.raises(ResumeRefused, match=r"partial .* owned by another user .*--restart"):
        SINKS["jsonl"](out).recover(MANIFEST)
    assert partial.read_bytes() == before


def test_a_partial_file_others_can_write_refuses_the_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    interrupted_run(out, SINKS["jsonl"])
    next(out.glob(".emb.jsonl.partial.*.tmp")).chmod(0o666)
    with pytest.raises(ResumeRefused, match=r"every user can write it \(mode 666\)"):
        SINKS["jsonl"](out).recover(MANIFEST)


def test_another_users_checkpoint_refuses_the_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    interrupted_run(out, SINKS["jsonl"])
    another_users(monkeypatch, checkpoint_path(out / "emb.jsonl"))
    refused = r"checkpoint .* could have been changed by someone else, so it is not trusted: "
    with pytest.raises(ResumeRefused, match=refused + "it belongs to another user, "):
        SINKS["jsonl"](out).recover(MANIFEST)


def test_a_checkpoint_others_can_write_is_refused_as_exposed_not_as_another_sinks(
    tmp_path: Path,
) -> None:
    # The sink wrote it (0600); its mode changed since. "Not one this jsonl sink wrote"
    # sent the user looking for another sink's file.
    out = tmp_path / "out"
    interrupted_run(out, SINKS["jsonl"])
    checkpoint_path(out / "emb.jsonl").chmod(0o602)
    with pytest.raises(ResumeRefused) as refused:
        SINKS["jsonl"](out).recover(MANIFEST)
    message = str(refused.value)
    assert "could have been changed by someone else, so it is not trusted: every user" in message
    assert "is not one this jsonl sink wrote" not in message


def test_another_users_lock_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lock = lock_path(out / "emb.jsonl")
    lock.write_bytes(b"")
    lock.chmod(0o666)
    another_users(monkeypatch, lock)
    sink = SINKS["jsonl"](out)
    with pytest.raises(UserError, match=r"lock file .* belongs to another user"):
        sink.start(MANIFEST)
    assert lock.read_bytes() == b"", "the run's pid was written into another user's file"
