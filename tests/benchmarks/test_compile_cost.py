"""compile_cost.py runs end to end at its smallest size, and each variant gets its flags.

Its figures say where a first run's time goes on a GPU (benchmarks/results/h200/); a
variant whose XLA flags never reached its process would report a tie as a finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.overhead import compile_cost


def test_each_variant_measures_every_program_under_its_own_flags(tmp_path: Path) -> None:
    argv = ["--variants", "default,no-autotune", "--batch", "1", "--length", "8"]
    assert compile_cost.main([*argv, "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "compile_cost.json").read_text(encoding="utf-8"))
    assert [r["variant"] for r in results] == ["default", "no-autotune"]
    default, no_autotune = results
    assert "--xla_gpu_autotune_level=0" not in default["xla_flags_seen"]
    assert "--xla_gpu_autotune_level=0" in no_autotune["xla_flags_seen"]
    for result in results:
        names = [p["program"] for p in result["programs"]]
        assert names == [name for name, _, _ in compile_cost.programs(1, 8)]
        for program in result["programs"]:
            assert program["compile_s"] > 0
            assert program["lower_s"] > 0
        assert result["process_s"] > result["backend_start_s"] > 0


def test_a_variant_out_of_time_is_reported_and_fails_the_run(tmp_path: Path) -> None:
    argv = ["--variants", "default", "--timeout", "0.01", "--out", str(tmp_path)]
    assert compile_cost.main(argv) == 1
    results = json.loads((tmp_path / "compile_cost.json").read_text(encoding="utf-8"))
    assert results == [{"variant": "default", "failed": "out of time after 0 s"}]


def test_an_unknown_variant_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        compile_cost.main(["--variants", "default,fastest", "--out", str(tmp_path)])
    assert stop.value.code == 2
