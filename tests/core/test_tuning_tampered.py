"""A tuning entry that fits the schema but lies is ignored, with a warning, and measured over.

The cache folder is anyone's with the user's rights: an entry that times a candidate
that cannot serve here (``tpu-flash`` on a CPU, or a name like ``../../etc``), times
another shape, has figures no measurement makes, or repeats a key (Python keeps the
last; another reader may keep the first) must not order the candidates.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from seamline.core.attention.plan import explain
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import SPEEDS, TWO_CANDIDATES, stop_the_clock

PIPELINE = TWO_CANDIDATES.format(name="tampered")
FAST = {"median": 1e-9, "fastest": 1e-9, "slowest": 1e-9, "calls": 3}


@pytest.fixture
def timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A tuning folder of this test's own, and a clock where each candidate takes
    SPEEDS[name]; returns who was timed."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "tuning"))
    return stop_the_clock(monkeypatch, SPEEDS)


def run() -> None:
    registry = toy_registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", registry), registry).run()


def tamper(folder: Path, change: Callable[[dict[str, Any]], str]) -> None:
    """Rewrite every entry in ``folder`` as ``change`` says (it returns the file's text)."""
    files = list(folder.glob("attention-*.json"))
    assert len(files) == 2  # the buckets the run used: 4 and 8
    for path in files:
        path.write_text(change(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")


def with_timing(name: str, timing: dict[str, Any]) -> Callable[[dict[str, Any]], str]:
    def change(entry: dict[str, Any]) -> str:
        entry["timings"][name] = timing
        return json.dumps(entry)

    return change


def with_figures(**figures: Any) -> Callable[[dict[str, Any]], str]:
    def change(entry: dict[str, Any]) -> str:
        entry["timings"]["long-only"].update(figures)
        return json.dumps(entry)

    return change


def with_signature(entry: dict[str, Any]) -> str:
    entry["signature"] = entry["signature"].replace("float32", "float16")
    return json.dumps(entry)


def with_timings_twice(entry: dict[str, Any]) -> str:
    """A first ``timings`` that says native is fastest; the real one last, as Python reads."""
    text = json.dumps(entry)
    first = json.dumps({"native": FAST})
    return '{"timings": ' + first + ", " + text[1:]


@pytest.mark.parametrize(
    "change",
    [
        with_timing("never", FAST),  # registered, but refuses these shapes
        with_timing("tpu-flash", FAST),  # not even a candidate here
        with_timing("../../etc", FAST),
        with_signature,
        with_figures(fastest=5e-3),  # above the median
        with_figures(slowest=1e-4),  # below the median
        with_figures(calls=10**30),
        with_timings_twice,
    ],
    ids=[
        "non-serving",
        "foreign",
        "path-like-name",
        "signature",
        "fastest-above-median",
        "slowest-below-median",
        "calls",
        "duplicate-key",
    ],
)
def test_an_entry_that_lies_is_ignored_with_a_warning_and_measured_over(
    timed: list[str], tmp_path: Path, change: Callable[[dict[str, Any]], str]
) -> None:
    run()
    tamper(tmp_path / "tuning", change)
    timed.clear()
    with structlog.testing.capture_logs() as logs:
        run()
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]
    ignored = [e for e in logs if e["event"] == "tuning cache entry ignored; measured again"]
    assert len(ignored) == 2
    assert all(e["log_level"] == "warning" for e in ignored)


def test_an_entry_that_leaves_out_a_candidate_that_could_not_be_timed_is_kept(
    timed: list[str], tmp_path: Path
) -> None:
    """Timings name a subset of the serving candidates: one that failed to run is left out."""
    run()

    def without_native(entry: dict[str, Any]) -> str:
        del entry["timings"]["native"]
        return json.dumps(entry)

    tamper(tmp_path / "tuning", without_native)
    timed.clear()
    run()
    assert timed == []


def test_explain_says_an_ignored_entry_is_not_measured_again(
    timed: list[str], tmp_path: Path
) -> None:
    """``explain`` never measures, so it must not say that it will."""
    run()
    tamper(tmp_path / "tuning", with_timing("tpu-flash", FAST))
    registry = toy_registry()
    with structlog.testing.capture_logs() as logs:
        plan = explain(parse_pipeline(PIPELINE, "p.yaml", registry), registry)
    ignored = [e for e in logs if e["event"].startswith("tuning cache entry ignored")]
    assert len(ignored) == 2  # the third bucket (the model's max_length) was never measured
    assert all(
        e["event"] == "tuning cache entry ignored; the static order applies" for e in ignored
    )
    assert all("tpu-flash" in e["why"] for e in ignored)
    assert all(b.measured is None and "tpu-flash" not in b.reason for b in plan.buckets)
