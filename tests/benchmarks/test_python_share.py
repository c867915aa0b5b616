"""python_share.py sorts a GIL profile's samples by the innermost kind of work they name.

Its table is what docs/performance.md says of the interpreter's share of a run; a
sample charged to the outer frame (the run loop) would hide the sink inside it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks.overhead import python_share

LOOP = "thread (1): MainThread;<module> (seamline:10);InFlight.launch (core/in_flight.py:55)"
RAW = "\n".join(
    [
        f"{LOOP};JsonlSink.write_rows (jsonl.py:77);dumps (json/__init__.py:238) 30",
        f"{LOOP};Orchestrator._write (orchestrator.py:352);MonitorHub.emit (hub.py:120) 20",
        # a record written from inside a monitor's event is the sink's work: innermost wins
        f"{LOOP};MonitorHub.emit (core/monitor_hub.py:120);PublishingSink.write (x.py:1) 5",
        "thread (2): seamline-host;HostWork._prepare (host.py:172);TokenWindows.split (w.py:64) 40",
        "thread (1);<module> (seamline:4);_find_and_load (<frozen importlib._bootstrap>:1176) 4",
        f"{LOOP};Orchestrator._write (core/orchestrator.py:355) 1",
        "",
    ]
)


def test_samples_go_to_the_innermost_kind() -> None:
    counts = python_share.samples_by_kind(RAW.splitlines(), "raw")
    assert counts == {
        "writing records (sink)": 35,
        "delivering events to monitors": 20,
        "tokenising and batching": 40,
        "importing modules": 4,
        python_share.OTHER: 1,
    }


def test_a_gzipped_profile_is_read_and_reported(tmp_path: Path) -> None:
    profile = tmp_path / "gil.txt.gz"
    with gzip.open(profile, "wt", encoding="utf-8") as out:
        out.write(RAW)
    assert python_share.main([str(profile), "--rate", "10", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "python_share.json").read_text(encoding="utf-8"))
    assert report["seconds"] == pytest.approx(10.0)
    assert report["kinds"][0] == {
        "kind": "tokenising and batching",
        "samples": 40,
        "seconds": 4.0,
        "share": 0.4,
    }


@pytest.mark.parametrize(
    ("content", "argv"),
    [
        ("frames without a count\n", []),
        ("", []),
        (RAW, ["--rate", "0"]),
    ],
)
def test_a_bad_profile_or_option_exits_2(tmp_path: Path, content: str, argv: list[str]) -> None:
    profile = tmp_path / "gil.txt"
    profile.write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        python_share.main([str(profile), *argv, "--out", str(tmp_path)])
    assert exited.value.code == 2


def test_a_missing_profile_exits_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        python_share.main([str(tmp_path / "absent.txt")])
    assert exited.value.code == 2
