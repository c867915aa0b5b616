"""lancedb_cache.py: the growth it reports, and a small real run of each side in-process."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchmarks.memory import lancedb_cache

MiB = 1 << 20


def test_growth_is_from_the_first_reading_and_over_the_second_half() -> None:
    readings = [
        (1, 100 * MiB),
        (50, 110 * MiB),
        (100, 150 * MiB),
        (150, 151 * MiB),
        (200, 170 * MiB),
    ]
    grown = lancedb_cache.growth({"readings": readings})
    assert grown == {"growth_mib": 70.0, "second_half_growth_mib": 20.0}  # from commit 100


def _run(growth: float, commit_s: float) -> dict[str, object]:
    return {
        "growth_mib": growth,
        "second_half_growth_mib": growth / 2,
        "median_commit_s": commit_s,
        "publish_s": 1.0,
    }


def test_the_report_compares_the_medians() -> None:
    results = {
        "bounded": [_run(10, 0.010), _run(30, 0.012), _run(20, 0.011)],
        "lancedb-default": [_run(200, 0.011), _run(220, 0.011), _run(100, 0.011)],
    }
    args = argparse.Namespace(commits=10, rows=2, repeats=3)
    report = lancedb_cache.build_report(args, results, {"started": "now"})
    bounded = report["sides"]["bounded"]
    assert (bounded["growth_mib"], bounded["growth_min_mib"], bounded["growth_max_mib"]) == (
        20,
        10,
        30,
    )
    assert report["growth_default_over_bounded"] == pytest.approx(200 / 20)
    assert report["commit_time_bounded_over_default"] == pytest.approx(11 / 11)
    assert bounded["median_commit_ms"] == pytest.approx(11.0)


@pytest.mark.parametrize("side", lancedb_cache.SIDES)
def test_a_side_commits_reads_and_publishes(side: str) -> None:
    result = lancedb_cache.one_side(side, commits=6, rows=2, every=3)
    assert [commit for commit, _ in result["readings"]] == [1, 3, 6]
    assert all(rss > 0 for _, rss in result["readings"])
    assert result["cache_bytes"] == lancedb_cache.CACHE_BYTES[side]
    assert result["publish_s"] > 0


def test_a_run_started_in_another_folder_writes_where_out_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each repeat is a fresh process of this module (`python -m`, run in the repository
    # root wherever the driver started); `--out` is relative to the driver's own folder.
    monkeypatch.chdir(tmp_path)
    arguments = ["--commits", "2", "--rows", "2", "--every", "1", "--repeats", "1"]
    assert lancedb_cache.main([*arguments, "--out", "results"]) == 0
    report = json.loads((tmp_path / "results" / "lancedb_cache.json").read_text("utf-8"))
    for side in lancedb_cache.SIDES:
        (run,) = report["sides"][side]["runs"]
        assert [commit for commit, _ in run["readings"]] == [1, 2]
