"""monitor_cost.py: its arithmetic, and small real runs of each side.

The benchmark's figures are medians over minutes of runs; these check that the ratios
and the per-call costs come out of the right numbers, and that each side runs the
monitor it says it does: none, sampling per batch (no start events delivered), and
sampling around every seam call.
"""

from __future__ import annotations

import argparse
import json

import pytest

from benchmarks.overhead import monitor_cost


def _args(**overrides: object) -> argparse.Namespace:
    values = {"docs": 4, "repeats": 3, "batch_size": 2, "max_length": 64, **overrides}
    return argparse.Namespace(**values)


def _runs(*seconds: float, monitor: float = 0.0) -> list[dict[str, object]]:
    return [
        {"seconds": s, "documents": 10, "batches": 5, "seam_calls": 100, "monitor_seconds": m}
        for s, m in zip(seconds, (monitor, 9.0 * monitor, monitor / 9.0), strict=False)
    ]


def test_ratio_and_monitor_cost_come_from_the_medians() -> None:
    results = {
        "none": _runs(2.0, 1.0, 9.0),  # median 2.0
        "memory-batch": _runs(2.5, 2.1, 2.2, monitor=0.01),
        "memory": _runs(2.6, 2.4, 3.0, monitor=0.2),  # median 2.6; monitor median 0.2
    }
    report = monitor_cost.build_report(_args(), results, {"started": "now"})
    sides = report["sides"]
    assert sides["none"]["ratio_to_none"] == 1.0
    assert sides["none"]["monitor_median_s"] == 0.0
    assert sides["memory-batch"]["ratio_to_none"] == pytest.approx(2.0 / 2.2)
    memory = sides["memory"]
    assert memory["ratio_to_none"] == pytest.approx(2.0 / 2.6)
    assert memory["monitor_median_s"] == pytest.approx(0.2)
    assert memory["monitor_share_of_run"] == pytest.approx(0.2 / 2.6)
    assert memory["monitor_per_seam_call_us"] == pytest.approx(0.2e6 / 100)
    assert memory["monitor_per_batch_us"] == pytest.approx(0.2e6 / 5)
    assert memory["documents_per_s"] == pytest.approx(10 / 2.6)
    assert (memory["min_s"], memory["max_s"]) == (2.4, 3.0)
    json.dumps(report)  # what main() writes


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    workdir = tmp_path_factory.mktemp("monitor-cost")
    corpus = workdir / "corpus"
    corpus.mkdir()
    for index in range(3):
        (corpus / f"doc{index}.txt").write_text(f"document number {index}. " * 5)
    path = monitor_cost.write_pipeline(workdir, corpus, _args())
    return {side: monitor_cost.run_once(path, side) for side in monitor_cost.SIDES}


def test_each_side_runs_the_monitor_it_names(runs: dict[str, dict[str, object]]) -> None:
    assert runs["none"]["monitor_events"] == {}
    batch_only = runs["memory-batch"]["monitor_events"]
    around = runs["memory"]["monitor_events"]
    assert isinstance(batch_only, dict)
    assert isinstance(around, dict)
    assert "SeamStarted" not in batch_only  # not asked for: not delivered
    assert batch_only["SeamCall"] == runs["memory-batch"]["seam_calls"]
    # Every seam call but the loader's chunks (timed after the fact) had a start.
    assert 0 < around["SeamStarted"] < around["SeamCall"]
    assert around["BatchDone"] == runs["memory"]["batches"]
    assert runs["memory"]["monitor_seconds"] > 0


def test_a_run_counts_its_seam_calls(runs: dict[str, dict[str, object]]) -> None:
    for result in runs.values():
        assert result["failed_documents"] == 0
        assert result["documents"] == 3
        # A read chunk, a prepare per document, an apply and a write per batch at least.
        batches = result["batches"]
        assert isinstance(batches, int)
        assert result["seam_calls"] >= 1 + 3 + 2 * batches
        assert 0 < result["seconds"] <= result["wall_seconds"]  # type: ignore[operator]
