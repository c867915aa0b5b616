"""step_breakdown.py runs end to end at its smallest size and reports what it measured.

The figures in docs/performance.md come from it; a change to the model's ``apply``, the
attention's construction or the measure helpers would otherwise break it unseen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.model import step_breakdown


def test_one_row_in_each_precision_gives_a_share_for_each_attention(tmp_path: Path) -> None:
    argv = ["--rows", "1", "--repeats", "2", "--out", str(tmp_path)]
    attentions = ["cpu-flash", "cpu-flash:isa=baseline,threads=1"]
    assert step_breakdown.main([*argv, *(f"--attention={name}" for name in attentions)]) == 0
    report = json.loads((tmp_path / "step_breakdown.json").read_text(encoding="utf-8"))
    assert report["attentions"] == attentions
    cells = {(r["precision"], r["rows"], r["attention"]): r for r in report["results"]}
    assert set(cells) == {(p, 1, a) for p in ("float32", "bfloat16") for a in attentions}
    for cell in cells.values():
        assert cell["tokens"] == step_breakdown.LENGTH
        assert cell["step_ms"] > 0
        assert cell["without_attention_ms"] > 0
        assert cell["attention_share"] == pytest.approx(
            1 - cell["without_attention_ms"] / cell["step_ms"]
        )


def test_the_stand_in_keeps_the_query_and_key_projections() -> None:
    """Returning v alone let XLA drop q's and k's projections and overstate the share."""
    import jax
    import jax.numpy as jnp

    x, w = jnp.ones((4, 8)), jnp.ones((8, 8))

    def step(x: jax.Array, w: jax.Array) -> jax.Array:
        return step_breakdown.pass_through(x @ w, x @ (w * 2), x)

    compiled = jax.jit(step).lower(x, w).compile().as_text()
    assert compiled.count(" dot(") == 2


def test_an_attention_is_named_with_its_settings() -> None:
    assert step_breakdown.parse_attention("cpu-flash:isa=avx2,threads=1") == (
        "cpu-flash",
        {"isa": "avx2", "threads": "1"},
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--rows", "0"],
        ["--rows", "two"],
        ["--repeats", "0"],
        ["--attention", "cpu-flash:isa"],
        ["--attention", "no-such-attention"],
        ["--attention", "cpu-flash:isa=avx9"],
    ],
)
def test_a_bad_option_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        step_breakdown.main(argv)
    assert exited.value.code == 2
