"""A Ctrl-C that Python dropped while ``seamline run`` started stops it before it begins.

A SIGTERM or Ctrl-C in a run's first second lands while JAX is imported, often inside
its garbage-collection callback, whose exceptions Python prints ("Exception ignored in")
and drops: the run went on, published over the last output and exited 0 (6 of 25
SIGTERMs between 0.45 and 0.75 s). The fixture plugin drops one the same way while it
is imported, during discovery, in a real ``seamline run`` subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

from tests.faults.component_scenarios import published
from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import write_pipeline

if TYPE_CHECKING:
    from pathlib import Path


def test_a_stop_dropped_during_start_up_stops_the_run_before_it_begins(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", "run", pipeline.name],
        cwd=tmp_path,
        env=fault_environment(SEAMLINE_FAULT_DROP_STOP="1"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stdout == ""
    said = " ".join(done.stderr.split())
    assert "interrupted: nothing was published; the run had not begun" in said, done.stderr
    assert published(tmp_path / "out") is None, "a stopped run published"


def test_a_stop_dropped_during_start_up_stops_tune_before_it_measures(tmp_path: Path) -> None:
    # The same dropped Ctrl-C let `seamline tune` measure every bucket and exit 0.
    pipeline = write_pipeline(tmp_path, "relative")
    tuning = tmp_path / "tuning"
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", "tune", pipeline.name],
        cwd=tmp_path,
        env=fault_environment(SEAMLINE_FAULT_DROP_STOP="1", SEAMLINE_TUNING_DIR=str(tuning)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "interrupted" in done.stderr
    assert not list(tuning.glob("attention-*.json")), "a stopped tune kept measuring"
