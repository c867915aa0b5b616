"""step_profile.py: how it sorts XLA's traced operations, and one small run end to end.

The shares in docs/performance.md come from this sorting; an operation put in the
wrong kind, or runtime bookkeeping counted as work, would move them unseen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.model import step_profile


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ynn_fusion.56", "matmul"),
        ("xnn_fusion", "matmul"),
        ("dot.4", "matmul"),
        ("ffi_call.10", "attention"),
        ("custom-call.2", "attention"),
        ("convert_bitcast_fusion.30", "other"),
        ("add_add_fusion", "other"),
        ("copy.3", "other"),
        ("ThunkExecutor::Execute", None),
        ("ThunkExecutor::Execute (wait for completion)", None),
        ("ParseArguments", None),
        ("end: ynn_fusion.56", None),
        ("$api.py:2479 block_until_ready", None),
    ],
)
def test_each_traced_name_gets_its_kind(name: str, kind: str | None) -> None:
    assert step_profile.kind_of(name) == kind


def test_only_complete_operation_events_are_summed() -> None:
    events = [
        {"ph": "X", "name": "ynn_fusion.1", "dur": 30.0},
        {"ph": "X", "name": "ynn_fusion.2", "dur": 10.0},
        {"ph": "X", "name": "ffi_call.1", "dur": 15.0},
        {"ph": "X", "name": "convert_bitcast_fusion", "dur": 5.0},
        {"ph": "X", "name": "ThunkExecutor::Execute", "dur": 1000.0},
        {"ph": "i", "name": "ynn_fusion.3", "dur": 99.0},
    ]
    assert step_profile.summed_by_kind(events) == {"matmul": 40.0, "attention": 15.0, "other": 5.0}


def test_one_small_step_is_profiled(tmp_path: Path) -> None:
    argv = ["--rows", "1", "--calls", "2", "--out", str(tmp_path)]
    assert step_profile.main(argv) == 0
    report = json.loads((tmp_path / "step_profile_bfloat16.json").read_text(encoding="utf-8"))
    kinds = {k["kind"]: k for k in report["kinds"]}
    assert set(kinds) == set(step_profile.KINDS)
    assert sum(k["share"] for k in kinds.values()) == pytest.approx(1.0)
    assert kinds["matmul"]["ms_per_step"] > 0
    assert kinds["attention"]["ms_per_step"] > 0  # cpu-flash is a custom call


@pytest.mark.parametrize(
    "argv", [["--rows", "0"], ["--calls", "0"], ["--precision", "float16"], ["--attention", "x"]]
)
def test_a_bad_option_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        step_profile.main(argv)
    assert exited.value.code == 2
