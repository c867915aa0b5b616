"""The input fingerprint a resume compares: paths by their type, glob patterns by their marker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seamline.contracts import ComponentConfig, InputGlob
from seamline.core.fingerprint import input_fingerprint


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
    before = input_fingerprint(config)
    assert before is not None
    assert before["paths"] == [pattern]  # the string field beside it is not an input

    (tmp_path / "data" / "notes.txt").write_text("not matched")
    (tmp_path / "data" / "sub.parquet").mkdir()  # a folder that matches is not a file
    assert input_fingerprint(config) == before

    (tmp_path / "data" / "sub" / "b.parquet").write_bytes(b"b")
    added = input_fingerprint(config)
    assert added != before
    os.utime(tmp_path / "data" / "a.parquet", ns=(1, 1))
    assert input_fingerprint(config) not in (before, added)


def test_a_plain_string_is_not_an_input_but_a_path_is(tmp_path: Path) -> None:
    assert input_fingerprint(ComponentConfig()) is None
    (tmp_path / "x.txt").write_text("x")
    fingerprint = input_fingerprint(PathConfig(root=tmp_path))
    assert fingerprint is not None
    assert fingerprint["paths"] == [str(tmp_path)]
