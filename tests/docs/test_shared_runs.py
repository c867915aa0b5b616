"""A page's ``make run`` that another page ran this session is a copy of that run.

(tests/docs/shared_runs.py; the fake run below stands for ``make run``.)
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest

from tests.docs import shared_runs


class FakeMakeRun:
    """Writes out/ and build/ in the page's folder and prints a line, as ``make run`` does."""

    def __init__(self, returncode: int = 0) -> None:
        self.calls = 0
        self.returncode = returncode

    def __call__(self, workdir: Path) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        (workdir / "out" / "embeddings.lance").mkdir(parents=True)
        (workdir / "out" / "embeddings.lance" / "data").write_text("rows\n", encoding="utf-8")
        (workdir / "build" / "corpus").mkdir(parents=True)
        return subprocess.CompletedProcess("make run", self.returncode, "done embed-docs\n")


@pytest.fixture
def session_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "session"
    folder.mkdir()
    monkeypatch.setenv(shared_runs.FOLDER_VARIABLE, str(folder))
    return folder


def pages(tmp_path: Path, count: int) -> list[Path]:
    made = [tmp_path / f"page{i}" for i in range(count)]
    for page in made:
        page.mkdir()
    return made


@pytest.mark.usefixtures("session_folder")
def test_the_second_page_gets_the_first_runs_folders_and_printed_lines(tmp_path: Path) -> None:
    make_run = FakeMakeRun()
    first, second = pages(tmp_path, 2)
    ran = shared_runs.run_once("make run", first, lambda: make_run(first))
    copied = shared_runs.run_once("make run", second, lambda: make_run(second))
    assert make_run.calls == 1
    assert (copied.returncode, copied.stdout) == (0, ran.stdout)
    assert (second / "out" / "embeddings.lance" / "data").read_text(encoding="utf-8") == "rows\n"
    assert (second / "build" / "corpus").is_dir()


@pytest.mark.usefixtures("session_folder")
def test_a_failed_run_is_not_kept_and_other_commands_always_run(tmp_path: Path) -> None:
    failing, page, other = pages(tmp_path, 3)
    failed = shared_runs.run_once("make run", failing, lambda: FakeMakeRun(2)(failing))
    assert failed.returncode == 2
    make_run = FakeMakeRun()
    shared_runs.run_once("make run", page, lambda: make_run(page))
    assert make_run.calls == 1  # the failure was not handed on: this page ran it
    search = FakeMakeRun()
    for attempt in ("one", "two"):
        (other / attempt).mkdir()
        folder = other / attempt
        shared_runs.run_once("seamline search out/x q", folder, functools.partial(search, folder))
    assert search.calls == 2


def test_without_the_session_folder_every_page_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(shared_runs.FOLDER_VARIABLE, raising=False)
    make_run = FakeMakeRun()
    for page in pages(tmp_path, 2):
        shared_runs.run_once("make run", page, functools.partial(make_run, page))
    assert make_run.calls == 2
