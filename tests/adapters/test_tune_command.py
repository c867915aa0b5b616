"""seamline tune fills the tuning cache; seamline explain shows what it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.measure import Timing
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.registry import Registry
from tests.core.toy import toy_registry

PIPELINE = """\
pipeline: tuned
loader: {use: list, with: {texts: ["a b", "c d e f g"]}}
model: {use: toy}
attention: {use: [native, long-only], select: measure}
sink: {use: memory}
run: {batch_size: 4, buckets: [4, 8]}
"""


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "tuning"))
    speeds = {"native": 2e-3, "long-only": 1e-3}

    def fake(attention: Any, specs: Any) -> Timing:
        return Timing(speeds[attention.name], speeds[attention.name], speeds[attention.name], 3)

    monkeypatch.setattr(tuning_module, "time_candidate", fake)
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    return path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "220"})


def test_explain_before_tuning_says_nothing_is_measured(cli: Path) -> None:
    result = invoke("explain", str(cli))
    assert result.exit_code == 0, result.output
    assert "select: measure" in result.output
    assert "not measured yet" in result.output


def test_tune_then_explain_shows_the_times(cli: Path, tmp_path: Path) -> None:
    result = invoke("tune", str(cli))
    assert result.exit_code == 0, result.output
    assert str(tmp_path / "tuning") in result.output
    assert result.output.count("measured; key") == 3  # buckets 4, 8 and 16
    assert "2.000" in result.output
    assert "1.000" in result.output
    assert len(list((tmp_path / "tuning").glob("attention-*.json"))) == 3
    again = invoke("tune", str(cli))
    assert again.output.count("from the cache") == 3
    explained = invoke("explain", str(cli))
    assert explained.exit_code == 0, explained.output
    assert "tuning cache:" in explained.output
    assert "fastest measured: 1 ms (vs native 2 ms), from the tuning cache" in explained.output
    assert "slower, as measured" in explained.output


def test_a_bfloat16_pipeline_is_tuned_and_explained_in_bfloat16_shapes(
    cli: Path, tmp_path: Path
) -> None:
    # The attention specs carry the dtype the model hands the attention; a bfloat16 run
    # looks its timings up by bfloat16 specs, so tune must measure those, and explain
    # must plan them (a kernel that takes only some dtypes is judged on the run's).
    emulated = "precision: {use: bfloat16, verify: false, require_native: false}\n"  # any CPU
    cli.write_text(PIPELINE + emulated, encoding="utf-8")
    tuned = invoke("tune", str(cli))
    assert tuned.exit_code == 0, tuned.output
    explained = invoke("explain", str(cli))
    assert explained.exit_code == 0, explained.output
    assert "xH8:bfloat16:" in explained.output
    assert ":float32:" not in explained.output
    assert "fastest measured: 1 ms (vs native 2 ms), from the tuning cache" in explained.output
