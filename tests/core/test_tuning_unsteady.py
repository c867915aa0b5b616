"""Timings whose calls varied as under contention rank the run but are not kept.

Three runs at once saved ``native`` at 2.1, 4.5 and 2.4 ms, and whichever was saved was
trusted for ever: a kernel 5x faster than the others ranked fourth on every later run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog

from seamline.contracts import AttentionChosen
from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.measure import Timing, unsteady
from seamline.core.attention.plan import tune
from seamline.core.attention.tuning import TUNING_VARIABLE, TuningCache
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import TWO_CANDIDATES

PIPELINE = TWO_CANDIDATES.format(name="unsteady")
STEADY = {"native": Timing(2e-3, 1.8e-3, 2.4e-3, 5), "long-only": Timing(1e-3, 9e-4, 3e-3, 5)}
CONTENDED = {**STEADY, "long-only": Timing(4.5e-3, 1e-3, 9e-3, 5)}


def clock(monkeypatch: pytest.MonkeyPatch, timings: dict[str, Timing]) -> list[str]:
    timed: list[str] = []

    def fake(attention: Any, specs: Any) -> Timing:
        timed.append(attention.name)
        return timings[attention.name]

    monkeypatch.setattr(tuning_module, "time_candidate", fake)
    return timed


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    directory = tmp_path / "tuning"
    monkeypatch.setenv(TUNING_VARIABLE, str(directory))
    return directory


def run() -> list[AttentionChosen]:
    RecordingMonitor.events.clear()
    registry = toy_registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", registry), registry).run()
    return [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]


def test_what_counts_as_unsteady() -> None:
    assert not unsteady(Timing(1.3e-3, 1e-3, 30e-3, 5))  # one slow call: the median holds
    assert unsteady(Timing(4.5e-3, 0.6e-3, 12e-3, 5))  # cpu-flash under 3 runs at once
    assert not unsteady(Timing(30e-6, 10e-6, 90e-6, 5))  # microseconds: jitter, not contention


def test_contended_timings_rank_the_run_but_are_not_kept_and_it_is_said_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timed = clock(monkeypatch, CONTENDED)
    with structlog.testing.capture_logs() as logs:
        chosen = run()
    assert {e.chosen for e in chosen} == {"native"}  # by this run's (slowed) times
    assert list(folder.glob("attention-*.json")) == []
    (said,) = [e for e in logs if e["event"].startswith("attention timings varied too much")]
    assert said["event"].endswith("not kept; the next run measures again")
    assert said["log_level"] == "warning"
    assert (said["candidate"], said["median_ms"], said["fastest_ms"]) == ("long-only", 4.5, 1.0)
    timed.clear()
    clock(monkeypatch, STEADY)
    with structlog.testing.capture_logs() as logs:
        chosen = run()  # a quiet machine: measured again, kept
    assert {e.chosen for e in chosen} == {"long-only"}
    assert len(list(folder.glob("attention-*.json"))) == 2
    assert not [e for e in logs if e["event"].startswith("attention timings varied")]
    assert all("from the tuning cache" in e.reason for e in run())


def test_tune_keeps_contended_timings_and_says_so(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock(monkeypatch, CONTENDED)
    registry = toy_registry()
    with structlog.testing.capture_logs() as logs:
        tune(parse_pipeline(PIPELINE, "p.yaml", registry), registry, TuningCache())
    assert len(list(folder.glob("attention-*.json"))) >= 2
    (said,) = [e for e in logs if e["event"].startswith("attention timings varied too much")]
    assert "kept all the same" in said["event"]
