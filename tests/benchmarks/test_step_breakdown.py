"""step_breakdown.py runs end to end at its smallest size and reports what it measured.

The figures in docs/performance.md come from it; a change to the model's ``apply``, the
attention's construction or the measure helpers would otherwise break it unseen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.model import step_breakdown


def test_one_row_in_each_precision_gives_a_share_for_the_attention(tmp_path: Path) -> None:
    assert step_breakdown.main(["--rows", "1", "--repeats", "2", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "step_breakdown.json").read_text(encoding="utf-8"))
    assert report["attention"] == "cpu-flash"
    cells = {(r["precision"], r["rows"]): r for r in report["results"]}
    assert set(cells) == {("float32", 1), ("bfloat16", 1)}
    for cell in cells.values():
        assert cell["tokens"] == step_breakdown.LENGTH
        assert cell["step_ms"] > 0
        assert cell["without_attention_ms"] > 0
        assert cell["attention_share"] == pytest.approx(
            1 - cell["without_attention_ms"] / cell["step_ms"]
        )


@pytest.mark.parametrize("argv", [["--rows", "0"], ["--rows", "two"], ["--repeats", "0"]])
def test_a_bad_option_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        step_breakdown.main(argv)
    assert exited.value.code == 2
