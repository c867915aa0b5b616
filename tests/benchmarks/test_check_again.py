"""check_again.py times ``seamline check`` with and without its compile cache, and says
when a side's cache did not do what the side is for: its ratios would then compare a
check with itself."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.overhead import check_again


def runs(none: int, first: int, again: int) -> dict[str, list[dict[str, float]]]:
    return {
        "no cache": [{"seconds": 50.0, "entries_added": none}],
        "first check": [{"seconds": 52.0, "entries_added": first}],
        "again": [{"seconds": 11.0, "entries_added": again}],
    }


def test_each_way_a_cache_can_fail_its_side_is_said() -> None:
    assert check_again.misbehaved(runs(0, 168, 1)) == []  # deterministic's fresh compile
    assert check_again.misbehaved(runs(3, 168, 1)) == [
        "no cache: --no-compile-cache wrote compiled programs"
    ]
    assert check_again.misbehaved(runs(0, 0, 0)) == [
        "first check: the check kept no compiled program",
        "again: the check found none of the programs its first check kept",
    ]
    assert check_again.misbehaved(runs(0, 168, 168)) == [
        "again: the check found none of the programs its first check kept"
    ]


def test_a_round_of_real_checks(tmp_path: Path) -> None:
    argv = ["--select", "deterministic", "--repeats", "1", "--out", str(tmp_path)]
    assert check_again.main(argv) == 0
    report = json.loads((tmp_path / "check_again.json").read_text(encoding="utf-8"))
    sides = report["sides"]
    assert list(sides) == ["no cache", "first check", "again"]
    added = {side: sides[side]["runs"][0]["entries_added"] for side in sides}
    assert added["no cache"] == 0
    assert 0 <= added["again"] < added["first check"], added
    assert report["problems"] == []
