"""mixed_precision.py's int8 rows round as an int8 kernel would, and the script runs.

Those rows decide whether an int8 candidate is worth a kernel (docs/precision.md): a
rounding that quietly kept float32 values would report int8 as harmless.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.model import mixed_precision
from seamline.components.models import bert_math

RNG = np.random.default_rng(7)
READOUT = bert_math.Readout(pooling="mean", normalize=True, dtype="bfloat16")


def test_rounding_keeps_255_levels_per_slice_and_errs_by_half_a_step_at_most() -> None:
    x = RNG.normal(size=(6, 64)).astype(np.float32)
    rounded = np.asarray(mixed_precision.rounded_to_int8(jnp.asarray(x), axis=-1))
    for row, back in zip(x, rounded, strict=True):
        step = np.abs(row).max() / 127
        assert len(np.unique(back)) <= 255
        np.testing.assert_allclose(back / step, np.round(back / step), atol=1e-3)
        assert np.abs(back - row).max() <= step / 2 * (1 + 1e-5)
        assert np.abs(back - row).max() > 0  # it rounded
    assert not np.asarray(mixed_precision.rounded_to_int8(jnp.zeros((2, 8)), axis=-1)).any()


def test_groups_get_scales_of_their_own() -> None:
    x = np.full((1, 64), 0.3, np.float32) + RNG.normal(scale=0.01, size=(1, 64)).astype(np.float32)
    x[0, 0] = 100.0  # an outlier in the first group of 32
    whole = np.asarray(mixed_precision.rounded_to_int8(jnp.asarray(x), axis=-1))
    grouped = np.asarray(mixed_precision.rounded_to_int8(jnp.asarray(x), axis=-1, group=32))
    second = slice(32, 64)
    assert np.abs(grouped[0, second] - x[0, second]).max() < 0.01
    assert np.abs(whole[0, second] - x[0, second]).max() > 0.05  # the outlier's step


def test_the_int8_dense_layer_is_integer_products_scaled_back() -> None:
    x = RNG.normal(size=(2, 5, 48)).astype(np.float32)
    kernel = RNG.normal(size=(48, 24)).astype(np.float32)
    bias = RNG.normal(size=(24,)).astype(np.float32)
    params: bert_math.DenseParams = {"kernel": kernel, "bias": bias}
    dense = mixed_precision.int8_dense(activations=True)
    got = np.asarray(dense(params, jnp.asarray(x), READOUT))

    token_scale = np.abs(x).max(axis=-1, keepdims=True) / 127
    channel_scale = np.abs(kernel).max(axis=0, keepdims=True) / 127
    xq = np.round(x / token_scale).astype(np.int64)
    wq = np.round(kernel / channel_scale).astype(np.int64)
    expected = (xq @ wq) * token_scale * channel_scale + bias
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert np.abs(got - (x @ kernel + bias)).max() > 1e-3  # not the float32 layer


def test_feed_forward_only_quantizes_the_rectangular_kernels() -> None:
    quantized = mixed_precision.int8_dense(activations=True)
    dense = mixed_precision.feed_forward_only(quantized)
    x = jnp.asarray(RNG.normal(size=(1, 3, 16)).astype(np.float32))
    for columns in (16, 64):  # [hidden, hidden] is attention's, [hidden, 4 hidden] feed-forward
        params: bert_math.DenseParams = {
            "kernel": RNG.normal(size=(16, columns)).astype(np.float32),
            "bias": np.zeros(columns, np.float32),
        }
        expected = (quantized if columns != 16 else mixed_precision.ORIGINAL_DENSE)(
            params, x, READOUT
        )
        np.testing.assert_array_equal(np.asarray(dense(params, x, READOUT)), np.asarray(expected))


def test_an_int8_row_runs_end_to_end(tmp_path: Path) -> None:
    argv = ["--documents", "1", "--variants", "int8 dense layers", "--out", str(tmp_path)]
    assert mixed_precision.main(argv) == 0
    report = json.loads((tmp_path / "mixed_precision.json").read_text(encoding="utf-8"))
    rows = {row["variant"]: row for row in report["results"]}
    assert list(rows) == ["float32", "int8 dense layers"]
    assert rows["float32"]["min_cosine"] == pytest.approx(1.0)
    assert 0.99 < rows["int8 dense layers"]["min_cosine"] < 0.99999


@pytest.mark.parametrize("argv", [["--variants", "int4"], ["--documents", "0"]])
def test_a_bad_option_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        mixed_precision.main(argv)
    assert exited.value.code == 2
