"""A re-run keeps the mode of the files it replaces, as ``sed -i`` does.

``chmod 600 m/*`` and a run again to the same output put every file back to 0644
(jsonl, npy, parquet, the lancedb sink's manifest and errors file): publishing set
``0666 & ~umask`` whatever the file it replaced. It also read the umask by setting it
for a moment, which another thread creating a file just then would get wrong.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from seamline.contracts.sink_kit import AtomicFile, _atomic
from tests.components.test_sink_symlinks import MANIFEST, SINKS, records


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def run(out: Path, kind: str) -> None:
    sink = SINKS[kind](out)
    sink.start(MANIFEST)
    sink.write(records(3))
    sink.close(complete=True)


def published_files(out: Path) -> list[Path]:
    return [p for p in out.iterdir() if not p.name.startswith(".") and p.is_file()]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("kind", sorted(SINKS))
def test_a_rerun_keeps_the_mode_the_user_gave_the_outputs(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    run(out, kind)
    files = published_files(out)
    assert files
    assert all(mode(p) == 0o644 for p in files), "new files get 0666 less the umask"
    for path in files:
        path.chmod(0o600)
    files[0].chmod(0o640)
    run(out, kind)
    assert {p.name: mode(p) for p in published_files(out)} == {
        p.name: 0o640 if p == files[0] else 0o600 for p in files
    }


def test_a_new_file_gets_the_umask_s_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic = AtomicFile(tmp_path / "new.jsonl")
        atomic.write(b"{}\n")
        atomic.publish()
    finally:
        os.umask(old)
    assert mode(tmp_path / "new.jsonl") == 0o640


@pytest.mark.usefixtures("umask_022")
def test_another_users_file_passes_no_mode_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    destination = tmp_path / "emb.jsonl"
    destination.write_bytes(b"old\n")
    destination.chmod(0o666)
    monkeypatch.setattr(_atomic, "my_uid", lambda: os.geteuid() + 1)
    atomic = AtomicFile(destination)
    atomic.write(b"new\n")
    atomic.publish()
    assert mode(destination) == 0o644


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="no /proc")
def test_the_umask_is_read_without_setting_it(
    umask_022: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(``umask_022`` first: it sets the umask back after ``monkeypatch`` is undone.)"""

    def umask(mask: int) -> int:
        raise AssertionError("the umask was set: another thread's new file gets that one")

    monkeypatch.setattr(os, "umask", umask)
    atomic = AtomicFile(tmp_path / "new.jsonl")
    atomic.write(b"{}\n")
    atomic.publish()
    assert mode(tmp_path / "new.jsonl") == 0o644
