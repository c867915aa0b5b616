"""gelu_cost.py runs end to end at its smallest size, and really swaps the formula.

Its figures back the bfloat16 path's choice of GELU formula (docs/performance.md);
a cell that silently compiled the shipped formula twice would report a tie.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import jax
import pytest

from benchmarks.model import gelu_cost
from benchmarks.model.step_breakdown import WEIGHTS
from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import Document


def test_one_row_in_each_precision_and_formula(tmp_path: Path) -> None:
    argv = ["--rows", "1", "--repeats", "2", "--attention", "native", "--out", str(tmp_path)]
    assert gelu_cost.main(argv) == 0
    report = json.loads((tmp_path / "gelu_cost.json").read_text(encoding="utf-8"))
    cells = {(r["precision"], r["gelu"]): r for r in report["results"]}
    assert set(cells) == {(p, f) for p in gelu_cost.PRECISIONS for f in gelu_cost.FORMULAS}
    assert [key for key, cell in cells.items() if cell["shipped"]] == [
        ("float32", "erfc"),
        ("bfloat16", "erf"),
    ]
    for (precision, _), cell in cells.items():
        assert cell["step_ms"] > 0
        baseline = cells[(precision, "erfc")]["step_ms"]
        assert cell["vs_erfc"] == pytest.approx(baseline / cell["step_ms"])


@pytest.mark.parametrize("formula", gelu_cost.FORMULAS)
def test_the_formula_is_forced_in_either_precision(formula: str) -> None:
    encoder = BertEncoder(Config(weights=WEIGHTS, max_length=64, stride=16))
    batch = encoder.collate(encoder.prepare(Document("d", "a short text")), 1, 16)
    for precision in gelu_cost.PRECISIONS:
        model = encoder.with_precision(precision)
        apply = functools.partial(model.apply, attention=NativeAttention(NativeConfig()))
        with gelu_cost.gelu_formula(formula):
            program = str(jax.make_jaxpr(apply)(model.abstract_params(), batch.arrays))
        assert ("erfc" in program) is (formula == "erfc"), precision


@pytest.mark.parametrize(
    "argv",
    [["--rows", "0"], ["--rows", "x"], ["--repeats", "0"], ["--attention", "no-such-attention"]],
)
def test_a_bad_option_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        gelu_cost.main(argv)
    assert exited.value.code == 2
