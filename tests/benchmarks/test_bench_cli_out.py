"""Every benchmark refuses an unusable ``--out`` before it measures, in one line, exit 2.

A regular file named as the results folder used to cost the whole measurement (up to a
quarter of an hour) and then end in a ``FileExistsError`` traceback from ``write_json``,
the numbers lost. These tests run each benchmark's ``main`` with such an ``--out``: with
the check in place it stops before anything starts, so they measure nothing.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common.options import EXIT_USAGE, require_folder
from benchmarks.common.paths import ROOT

EXTRA_ARGUMENTS = {
    "benchmarks.overhead.python_share": ["profile.txt"],
    "benchmarks.search.file_scan": ["out/emb.parquet"],
}
"""What a module needs besides ``--out`` to get past argparse."""
WITH_OUT = sorted(
    f"benchmarks.{path.parent.name}.{path.stem}"
    for path in (ROOT / "benchmarks").glob("*/*.py")
    if not path.stem.startswith("_")
    and path.parent.name != "common"
    and re.search(r'"--out"|add_run_options\(', path.read_text(encoding="utf-8"))
)
"""Every benchmark a user runs that takes ``--out``, found in the sources (so that a new
one is held to the check too), and the attention sweep, whose ``--out`` is its CLI's."""


def exit_code(main: Callable[[list[str]], Any], argv: list[str]) -> object:
    """``main(argv)``'s exit code, returned or raised (argparse and the check raise)."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code


def no_process(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a process was started before --out was checked")


def test_the_benchmarks_with_an_out_option_are_found() -> None:
    assert {
        "benchmarks.search.index_recall",
        "benchmarks.search.warm_query",
        "benchmarks.throughput.whole_run",
        "benchmarks.throughput.length_sweep",
        "benchmarks.attention.vs_torch",
    } <= set(WITH_OUT)
    assert len(WITH_OUT) >= 26, WITH_OUT


@pytest.mark.parametrize("module", [*WITH_OUT, "benchmarks.attention.sweep"])
def test_a_regular_file_as_out_is_refused_before_anything_runs(
    module: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(subprocess, "Popen", no_process)  # no worker, no seamline run
    afile = tmp_path / "afile"
    afile.write_text("x\n", encoding="utf-8")
    main = importlib.import_module(module).main
    argv = [*EXTRA_ARGUMENTS.get(module, []), "--out", str(afile)]
    assert exit_code(main, argv) == EXIT_USAGE
    err = capsys.readouterr().err
    refused = rf"error: --out names {re.escape(str(afile))}, which is a regular file: .+\n"
    assert re.fullmatch(refused, err), err
    assert afile.read_text(encoding="utf-8") == "x\n"


def test_a_file_in_the_parent_path_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("x\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        require_folder(tmp_path / "afile" / "results")
    assert stop.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out names {tmp_path}/afile/results, which cannot be written")
    assert err.count("\n") == 1


def test_a_folder_that_cannot_be_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def read_only(*args: Any, **kwargs: Any) -> Any:  # chmod does not stop root
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    with pytest.raises(SystemExit) as stop:
        require_folder(tmp_path, "--keep")
    assert stop.value.code == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"error: --keep names {tmp_path}, which cannot be written to (Permission denied): "
        "name a directory you can write to (it is created when missing)\n"
    )


def test_a_usable_folder_is_made_and_left_empty(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    assert require_folder(out) == out
    assert out.is_dir()
    assert list(out.iterdir()) == []
