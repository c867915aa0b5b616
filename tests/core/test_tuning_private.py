"""A tuning folder or entry another user could have written is not trusted, as the compile
cache's are not (:mod:`seamline.core.private_cache`).

An entry decides which kernel runs: with the folder ``chmod 777`` and its entries swapped
and given to ``nobody``, a run ranked by the swapped times, said "from the tuning cache"
and warned of nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.contracts import AttentionChosen
from seamline.contracts.ownership import describe_user
from seamline.core.attention.plan import explain
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import SPEEDS, TWO_CANDIDATES, stop_the_clock

PIPELINE = TWO_CANDIDATES.format(name="private")
AS_ROOT = pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown"
)
NOBODY = 65534
_NOBODY = describe_user(NOBODY)  # "user nobody (uid 65534)", or "uid 65534" with no name
OWNED_BY_NOBODY = (
    f"it is owned by {_NOBODY}"
    if _NOBODY.startswith("user ")
    else f"it is owned by another user ({_NOBODY})"
)
NOT_USED = (
    "tuning cache not used: its folder is not private, and its entries decide which "
    "attention kernel runs; measured again, not kept"
)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tuning folder whose entries were written by a first run, then swapped so that
    the slower ``native`` reads as the faster."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    directory = tmp_path / "tuning"
    monkeypatch.setenv(TUNING_VARIABLE, str(directory))
    stop_the_clock(monkeypatch, SPEEDS)
    run()
    for path in directory.glob("attention-*.json"):
        entry = json.loads(path.read_text(encoding="utf-8"))
        timings = entry["timings"]
        timings["native"], timings["long-only"] = timings["long-only"], timings["native"]
        path.write_text(json.dumps(entry), encoding="utf-8")
    RecordingMonitor.events.clear()
    return directory


def run() -> list[AttentionChosen]:
    registry = toy_registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", registry), registry).run()
    return [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]


def contents(directory: Path) -> dict[str, Any]:
    return {p.name: p.read_bytes() for p in directory.glob("attention-*.json")}


def test_the_swapped_entries_of_a_private_folder_are_read(folder: Path) -> None:
    """What the tests below refuse is read from a folder of the user's own."""
    chosen = run()
    assert {e.chosen for e in chosen} == {"native"}
    assert all("from the tuning cache" in e.reason for e in chosen)


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        pytest.param(lambda p: p.chmod(0o777), "every user can write it (mode 777)", id="open"),
        pytest.param(
            lambda p: os.chown(p, NOBODY, -1),
            OWNED_BY_NOBODY,
            id="owner",
            marks=AS_ROOT,
        ),
    ],
)
def test_a_folder_not_private_is_neither_read_nor_written_and_said_once(
    folder: Path, spoil: Any, why: str
) -> None:
    before = contents(folder)
    spoil(folder)
    with structlog.testing.capture_logs() as logs:
        chosen = run()
    assert {e.chosen for e in chosen} == {"long-only"}
    assert all("measured now" in e.reason for e in chosen)
    (said,) = [e for e in logs if e["event"].startswith("tuning cache not used")]
    assert said["event"] == NOT_USED
    assert said["log_level"] == "warning"
    assert said["why"] == why
    assert TUNING_VARIABLE in said["fix"]
    assert contents(folder) == before  # not saved there


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        pytest.param(
            lambda p: p.chmod(0o666), "it can be written by every user (mode 666)", id="open"
        ),
        pytest.param(
            lambda p: os.chown(p, NOBODY, -1),
            OWNED_BY_NOBODY,
            id="owner",
            marks=AS_ROOT,
        ),
    ],
)
def test_an_entry_not_private_is_measured_over_and_replaced(
    folder: Path, spoil: Any, why: str
) -> None:
    for path in folder.glob("attention-*.json"):
        spoil(path)
    with structlog.testing.capture_logs() as logs:
        chosen = run()
    assert {e.chosen for e in chosen} == {"long-only"}
    ignored = [e for e in logs if e["event"] == "tuning cache entry ignored; measured again"]
    assert [e["why"] for e in ignored] == [why, why]
    for path in folder.glob("attention-*.json"):  # the run's own entries replaced them
        found = path.stat()
        assert found.st_uid == os.getuid()
        assert found.st_mode & 0o022 == 0
    RecordingMonitor.events.clear()
    assert all("from the tuning cache" in e.reason for e in run())


def test_explain_reads_nothing_from_a_folder_not_private(folder: Path) -> None:
    folder.chmod(0o777)
    registry = toy_registry()
    with structlog.testing.capture_logs() as logs:
        plan = explain(parse_pipeline(PIPELINE, "p.yaml", registry), registry)
    (said,) = [e for e in logs if e["event"].startswith("tuning cache not used")]
    assert said["event"].endswith("; the static order applies")
    assert all(b.measured is None for b in plan.buckets)


def test_tune_refuses_a_folder_not_private_before_measuring(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder.chmod(0o777)
    timed = stop_the_clock(monkeypatch, SPEEDS)
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["tune", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(
        f"error: the tuning cache folder {folder} is not private: every user can write it"
    )
    assert f"point ${TUNING_VARIABLE} at a new directory of your own" in line
    assert timed == []


@pytest.mark.parametrize("named", [True, False], ids=["variable", "default"])
def test_the_folder_tune_checks_before_measuring_is_made_private(
    named: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `seamline tune` with a fresh home made ~/.cache/seamline/tuning 0755 (the check that
    # it can be written made it), though a folder seamline makes is promised 0700.
    from seamline.core.attention.tuning import TuningCache

    (tmp_path / "home").mkdir()  # a fresh home: .cache not made yet
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    if named:
        monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "made" / "tuning"))
    else:
        monkeypatch.delenv(TUNING_VARIABLE, raising=False)
    old = os.umask(0o022)
    try:
        cache = TuningCache()
        cache.check_writable()
    finally:
        os.umask(old)
    assert cache.directory is not None
    assert cache.directory.stat().st_mode & 0o777 == 0o700
    assert cache.not_private() is None
