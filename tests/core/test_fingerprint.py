"""The input fingerprint a resume compares: paths by their type, glob patterns by their marker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts import ComponentConfig, InputGlob
from seamline.contracts.sink_kit._input_change import COMPARED
from seamline.core.fingerprint import input_fingerprint


def compared(config: ComponentConfig) -> dict[str, Any] | None:
    """What of the input's fingerprint a resume compares (not when it was listed)."""
    fingerprint = input_fingerprint(config)
    return None if fingerprint is None else {key: fingerprint[key] for key in COMPARED}


class PatternConfig(ComponentConfig):
    path: InputGlob
    label: str = "not an input"


class PathConfig(ComponentConfig):
    root: Path


@pytest.mark.parametrize("spelling", ["relative", "absolute"])
def test_a_glob_pattern_is_fingerprinted_by_the_files_it_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "a.parquet").write_bytes(b"a")
    pattern = "data/**/*.parquet" if spelling == "relative" else f"{tmp_path}/data/**/*.parquet"
    config = PatternConfig(path=pattern)
    before = compared(config)
    assert before is not None
    assert before["paths"] == [pattern]  # the string field beside it is not an input

    (tmp_path / "data" / "notes.txt").write_text("not matched")
    (tmp_path / "data" / "sub.parquet").mkdir()  # a folder that matches is not a file
    assert compared(config) == before

    (tmp_path / "data" / "sub" / "b.parquet").write_bytes(b"b")
    added = compared(config)
    assert added != before
    os.utime(tmp_path / "data" / "a.parquet", ns=(1, 1))
    assert compared(config) not in (before, added)


def test_a_plain_string_is_not_an_input_but_a_path_is(tmp_path: Path) -> None:
    assert input_fingerprint(ComponentConfig()) is None
    (tmp_path / "x.txt").write_text("x")
    fingerprint = input_fingerprint(PathConfig(root=tmp_path))
    assert fingerprint is not None
    assert fingerprint["paths"] == [str(tmp_path)]


def test_an_edit_keeping_size_and_time_is_not_seen_as_the_docs_say(tmp_path: Path) -> None:
    """pipelines.md "Checkpoints and resume": contents are not read, so a file rewritten to
    the same size with its time put back (``cp -p``, ``touch -r``) leaves the fingerprint
    as it was, and the docs send such an edit to ``--restart``. Should contents ever be
    read, this fails: update that paragraph."""
    note = tmp_path / "note.txt"
    note.write_text("paid by card 4921")
    config = PathConfig(root=tmp_path)
    before = compared(config)
    kept = note.stat()
    note.write_text("paid by card 4922")
    os.utime(note, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert compared(config) == before
    page = (Path(__file__).resolve().parents[2] / "docs" / "pipelines.md").read_text("utf-8")
    assert "an edit that keeps a file's size and modification time is not" in " ".join(page.split())


class BothConfig(ComponentConfig):
    root: Path
    pattern: InputGlob


def test_the_listing_says_when_how_many_and_which_are_patterns(tmp_path: Path) -> None:
    """``listed`` is what a refused resume names the changed files by: when the files were
    listed (before listing: a file edited meanwhile counts as after), the newest file's
    time, how many there were, and which paths are glob patterns (a fingerprint's paths
    are strings)."""
    (tmp_path / "a").mkdir()
    for name in ("x.txt", "y.txt"):
        (tmp_path / "a" / name).write_text(name)
    (tmp_path / "b.parquet").write_bytes(b"b")
    before = time.time_ns()
    fingerprint = input_fingerprint(
        BothConfig(root=tmp_path / "a", pattern=f"{tmp_path}/*.parquet")
    )
    assert fingerprint is not None
    listed = fingerprint["listed"]
    assert before <= listed["at"] <= time.time_ns()
    assert listed["newest"] == max(
        path.stat().st_mtime_ns for path in (tmp_path / "a" / "x.txt", tmp_path / "b.parquet")
    )
    assert listed["count"] == 3
    assert listed["patterns"] == [1]


def test_the_module_imports_first_in_a_process_of_its_own() -> None:
    """It imported the pipeline's configuration, whose overlap check imported it back for
    ``named_input_paths``: imported first (a script using it, as the tests here do with
    seamline loaded already), it failed with "partially initialized module"."""
    code = "import seamline.core.fingerprint"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
