"""matmul_rates.py times what it says: int8 sums exactly in int32, every cell is measured.

Its table is the evidence that XLA's int8 matmul buys nothing here (docs/precision.md);
an "int8" side that computed in float would measure the wrong thing.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.model import matmul_rates

BY_NAME = {precision.name: precision for precision in matmul_rates.PRECISIONS}


def test_int8_sums_exactly_in_int32_where_float32_would_round() -> None:
    inner = 2047  # 127 * 127 * 2047 is odd and above 2**24: float32 cannot hold it
    a = jnp.full((1, inner), 127, jnp.int8)
    b = jnp.full((inner, 1), 127, jnp.int8)
    summed = matmul_rates.compiled(BY_NAME["int8"])(a, b)
    assert summed.dtype == jnp.int32
    assert int(summed[0, 0]) == 127 * 127 * inner
    as_float = matmul_rates.compiled(BY_NAME["float32"])(
        a.astype(jnp.float32), b.astype(jnp.float32)
    )
    assert float(as_float[0, 0]) != 127 * 127 * inner


def test_every_cell_is_timed_and_compared_with_bfloat16(tmp_path: Path) -> None:
    argv = ["--positions", "8", "--repeats", "2", "--roofline", "64", "--out", str(tmp_path)]
    assert matmul_rates.main(argv) == 0
    report = json.loads((tmp_path / "matmul_rates.json").read_text(encoding="utf-8"))
    names = [row["matmul"] for row in report["results"]]
    assert names == [
        "query, key, value, attention output",
        "feed-forward in",
        "feed-forward out",
        "a layer's six matmuls",
        "roofline",
    ]
    rows = {row["matmul"]: row for row in report["results"]}
    shapes = matmul_rates.shapes(8, 64)
    assert rows["a layer's six matmuls"]["operations"] == sum(
        s.operations * s.per_layer for s in shapes
    )
    assert rows["roofline"]["operations"] == 2 * 64**3
    assert [row["shape"] for row in report["results"]] == [
        "8x384x384",
        "8x384x1536",
        "8x1536x384",
        "the six above",
        "64x64x64",
    ]
    for row in report["results"]:
        cells = row["precisions"]
        assert set(cells) == set(BY_NAME)
        assert cells["bfloat16"]["vs_bfloat16"] == pytest.approx(1.0)
        for cell in cells.values():
            assert 0 < cell["min_ms"] <= cell["median_ms"] <= cell["max_ms"]
            assert cell["g_per_s"] == pytest.approx(row["operations"] / cell["median_ms"] / 1e6)


def test_operands_are_the_same_integers_in_every_precision() -> None:
    a, b = matmul_rates.operands(matmul_rates.Shape("s", 4, 8, 2, 1))
    assert a.dtype == b.dtype == np.int8
    assert np.abs(a).max() <= 127
    for precision in matmul_rates.PRECISIONS:
        np.testing.assert_array_equal(np.asarray(jnp.asarray(a, precision.operands), np.int64), a)


@pytest.mark.parametrize("argv", [["--positions", "0"], ["--repeats", "x"], ["--roofline", "-1"]])
def test_a_bad_option_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        matmul_rates.main(argv)
    assert exited.value.code == 2
