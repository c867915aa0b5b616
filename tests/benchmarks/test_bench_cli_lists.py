"""Comma-separated numbers are checked by argparse: a bad list is a usage error, exit 2.

``length_sweep --lengths abc`` (or ``32,,64``) ended in ``int()``'s ``ValueError``
traceback, exit 1, because the list was split by hand after parsing.
"""

from __future__ import annotations

import argparse
import subprocess
from typing import Any

import pytest

from benchmarks.common.options import int_list
from benchmarks.model import batches
from benchmarks.throughput import length_sweep, serve_load
from seamline.adapters.bench_attention import cli


def no_process(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a process was started with a bad option")


@pytest.mark.parametrize("bad", ["abc", "32,,64", "", "32,", "2", "257", "64,x"])
def test_a_bad_length_is_a_usage_error(
    bad: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(subprocess, "Popen", no_process)
    with pytest.raises(SystemExit) as stop:
        length_sweep.parse_arguments(["--lengths", bad])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --lengths: {bad!r}: expected comma-separated whole numbers from 3 to 256" in err
    )
    assert "Traceback" not in err


def test_good_lengths_are_parsed(tmp_path: Any) -> None:
    args = length_sweep.parse_arguments(["--lengths", "32, 64,256", "--out", str(tmp_path)])
    assert args.lengths == [32, 64, 256]
    assert length_sweep.parse_arguments(["--out", str(tmp_path)]).lengths == [32, 64, 128, 256]


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--budgets", "0,abc"], "--budgets"),
        (["--budgets", "-1"], "--budgets"),
    ],
)
def test_the_other_lists_of_numbers_are_checked_alike(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        batches.parse_arguments(argv)
    assert stop.value.code == 2
    assert f"argument {option}" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["1,,8", "a", "0"])
def test_serve_loads_clients_are_checked(
    bad: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(subprocess, "Popen", no_process)
    with pytest.raises(SystemExit) as stop:
        serve_load.main(["--clients", bad])
    assert stop.value.code == 2
    assert "argument --clients: " + repr(bad) + ": expected" in capsys.readouterr().err


def test_int_list_bounds() -> None:
    assert int_list(0)("0,256") == [0, 256]
    assert int_list(1, 64)("1,64") == [1, 64]
    for bad in ("65", "0", "1.5", " "):
        with pytest.raises(argparse.ArgumentTypeError, match="whole numbers from 1 to 64"):
            int_list(1, 64)(bad)


def test_the_attention_sweep_says_what_its_lengths_must_be(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["--lengths", "abc"]) == cli.EXIT_USAGE
    said = capsys.readouterr().err
    assert "'abc': lengths must be comma-separated integers of at least 2" in said
