"""A tuning folder that cannot be written: a run warns and goes on; ``seamline tune`` refuses.

The cache only saves time later, so a run that cannot keep its timings still ranks by
them (as a precision record that cannot be kept only warns); ``seamline tune`` exists to
write it, so there it is a one-line user error. Neither is a traceback, and neither
blames the run's output.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.contracts import AttentionChosen
from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.tuning import TUNING_VARIABLE, folder_trouble
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import SPEEDS, TWO_CANDIDATES, stop_the_clock

PIPELINE = TWO_CANDIDATES.format(name="unwritable")


@pytest.fixture
def unwritable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tuning folder every write to fails as one under ``/proc/1`` does (as root)."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    directory = tmp_path / "tuning"
    monkeypatch.setenv(TUNING_VARIABLE, str(directory))

    def refuse(path: Path, data: bytes) -> None:
        temporary = path.parent / f".{path.name}.x1y2.tmp"
        raise FileNotFoundError(2, "No such file or directory", str(temporary))

    stop_the_clock(monkeypatch, SPEEDS)
    monkeypatch.setattr(tuning_module, "write_bytes_atomically", refuse)
    return directory


def test_a_run_warns_once_and_goes_on_with_what_it_measured(unwritable: Path) -> None:
    registry = toy_registry()
    resolved = parse_pipeline(PIPELINE, "p.yaml", registry)
    with structlog.testing.capture_logs() as logs:
        summary = Orchestrator(resolved, registry).run()
    assert set(summary.attention.values()) == {"long-only"}
    assert len(MemorySink.records) == 2
    chosen = [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]
    assert chosen
    assert all(e.chosen == "long-only" and "measured now" in e.reason for e in chosen)
    (said,) = [e for e in logs if e["event"].startswith("tuning cache not kept")]
    assert said["log_level"] == "warning"
    assert str(unwritable) in said["why"]
    assert TUNING_VARIABLE in said["why"]


def test_tune_refuses_in_one_line_naming_the_folder_and_the_fix(
    unwritable: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["tune", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: the tuning cache folder {unwritable} cannot be written")
    assert f"point {TUNING_VARIABLE} at a folder you can write" in line


@pytest.fixture
def xdg_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """``$XDG_CACHE_HOME`` a regular file, ``$SEAMLINE_TUNING_DIR`` unset: the tuning folder
    ``<file>/seamline/tuning`` can be neither read nor made."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(afile))
    monkeypatch.delenv(TUNING_VARIABLE, raising=False)
    return afile, stop_the_clock(monkeypatch, SPEEDS)


def test_a_folder_that_cannot_be_read_is_one_line_naming_its_cause(
    xdg_file: tuple[Path, list[str]],
) -> None:
    """Each shape warned 'tuning cache entry ignored' (Errno 20), then the save blamed
    $SEAMLINE_TUNING_DIR, which the user never set."""
    afile, _ = xdg_file
    registry = toy_registry()
    resolved = parse_pipeline(PIPELINE, "p.yaml", registry)
    with structlog.testing.capture_logs() as logs:
        Orchestrator(resolved, registry).run()
    (said,) = [e for e in logs if "tuning" in e["event"]]
    assert said["event"] == "tuning cache folder cannot be read; every shape measured and not kept"
    assert said["why"] == f"{afile} is a file, not a folder"
    assert "point XDG_CACHE_HOME at a folder you can write" in said["fix"]
    assert "unset" not in said["fix"]


def test_tune_checks_the_folder_before_it_measures(
    xdg_file: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    afile, timed = xdg_file
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["tune", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line == (
        f"error: the tuning cache folder {afile}/seamline/tuning cannot be written ({afile} "
        f"is a file, not a folder): it is under $XDG_CACHE_HOME ({afile}): point "
        f"XDG_CACHE_HOME at a folder you can write, or set {TUNING_VARIABLE} to one"
    )
    assert timed == []  # nothing measured first


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a folder to another user")
def test_another_users_folder_is_named_with_its_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "home" / ".cache" / "seamline" / "tuning"
    folder.mkdir(parents=True, mode=0o700)
    os.chown(folder, 54321, 54321)
    monkeypatch.delenv(TUNING_VARIABLE, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    why, fix = folder_trouble(folder, PermissionError(13, "Permission denied"))
    assert why == f"Permission denied: {folder} belongs to user 54321"
    assert fix == f"set {TUNING_VARIABLE} to a folder you can write"
