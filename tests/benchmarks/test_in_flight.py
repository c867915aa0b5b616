"""in_flight.py runs end to end at a small size, and its output check can fail.

Its figures back ``run.in_flight``'s default (docs/performance.md); a check that could not
see two different outputs would hide a setting that changed what a run writes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from benchmarks.throughput import in_flight


def test_both_depths_at_one_precision(tmp_path: Path) -> None:
    argv = ["--docs", "12", "--repeats", "1", "--precisions", "float32", "--out", str(tmp_path)]
    assert in_flight.main(argv) == 0
    report = json.loads((tmp_path / "in_flight.json").read_text(encoding="utf-8"))
    assert report["outputs_differ"] == []
    sides = report["sides"]
    assert set(sides) == {"float32/in_flight=0", "float32/in_flight=1"}
    assert sides["float32/in_flight=0"]["speedup_whole"] == 1.0
    for side in sides.values():
        (run,) = side["runs"]
        assert run["precision"] == "float32"
        assert run["seconds"] == side["seconds"]["median_s"] > 0


def write_jsonl(path: Path, vectors: list[list[float]]) -> dict[str, str]:
    rows = [{"id": f"d{i}", "window": 0, "embedding": v} for i, v in enumerate(vectors)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return {"path": str(path)}


def test_a_depth_that_wrote_another_vector_is_reported(tmp_path: Path) -> None:
    sides = {"float32/in_flight=0": ("float32", 0), "float32/in_flight=1": ("float32", 1)}
    same = {
        "float32/in_flight=0": write_jsonl(tmp_path / "a.jsonl", [[1.0, 0.0], [0.0, 1.0]]),
        "float32/in_flight=1": write_jsonl(tmp_path / "b.jsonl", [[1.0, 0.0], [0.0, 1.0]]),
    }
    assert in_flight.compare_outputs(same, sides) == []
    moved = write_jsonl(tmp_path / "c.jsonl", [[1.0, 0.0], [0.0, 0.5]])
    other = {**same, "float32/in_flight=1": moved}
    assert in_flight.compare_outputs(other, sides) == ["float32/in_flight=1"]


@pytest.mark.parametrize("bad", ["1,2", "0,9", "a", ""])
def test_the_depths_must_start_at_the_baseline(bad: str) -> None:
    assert in_flight.parse_depths("1,0,1") == [0, 1]
    with pytest.raises(argparse.ArgumentTypeError):
        in_flight.parse_depths(bad)
