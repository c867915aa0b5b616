"""seamline explain judges precision as a run would: it refuses what a run refuses, and
shows the gate's recorded figures, so that explaining a pipeline never says more (or
less) than running it would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.precision import records
from seamline.core.precision.hardware import BF16_CPU_FEATURES, HIDDEN_VARIABLE
from seamline.core.registry import Registry
from tests.core.toy import toy_registry

PIPELINE = """\
pipeline: precise
loader: {{use: list, with: {{texts: ["a b", "c d e f g", "h i j", "k l m n"]}}}}
model: {{use: toy}}
sink: {{use: memory}}
run: {{batch_size: 4, buckets: [4, 8]}}
precision: {precision}
"""

REFUSED = "no precision can serve this pipeline"
LOOSE = "{use: [bfloat16, float32], require_native: false, gate: {min_cosine: 0.5}}"
"""Any CPU: bfloat16 is accepted though emulated, and passes a gate that any vectors do."""


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy registry, the gate's records and the tuning cache in ``tmp_path``."""
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setenv(records.DIRECTORY_VARIABLE, str(tmp_path / "records"))
    monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "tuning"))
    monkeypatch.delenv(HIDDEN_VARIABLE, raising=False)
    return tmp_path / "p.yaml"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})


def with_precision(path: Path, precision: str) -> Path:
    path.write_text(PIPELINE.format(precision=precision), encoding="utf-8")
    return path


def error_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("error:"))


@pytest.mark.parametrize("format_", ["text", "json"])
def test_an_explicit_precision_the_hardware_refuses_is_refused_as_the_run_refuses_it(
    cli: Path, monkeypatch: pytest.MonkeyPatch, format_: str
) -> None:
    # explain said ok and exited 0, its tables planned in float32, a precision the
    # pipeline never listed; the run exits 2 before any work.
    monkeypatch.setenv(HIDDEN_VARIABLE, ",".join(BF16_CPU_FEATURES))
    with_precision(cli, "bfloat16")
    ran = invoke("run", str(cli))
    assert ran.exit_code == 2, ran.output
    explained = invoke("explain", str(cli), "--format", format_)
    assert explained.exit_code == 2, explained.output
    assert error_line(explained.output) == error_line(ran.output)
    assert REFUSED in error_line(explained.output)
    assert ":float32:" not in explained.output
    if format_ == "json":
        document = json.loads(explained.stdout)
        assert document["ok"] is False
        assert document["buckets"] == []
        assert document["errors"][0]["message"] == error_line(ran.output).removeprefix("error: ")
        assert document["name"] == "precise"
        candidates = document["precision"]["candidates"]
        assert [(c["name"], c["ok"]) for c in candidates] == [("bfloat16", False)]
        assert "no bfloat16 instructions" in candidates[0]["reasons"][0]


def test_a_gate_record_that_refuses_the_only_candidate_is_refused_as_the_run_refuses_it(
    cli: Path,
) -> None:
    # An earlier run's gate measured bfloat16 (and passed it under its loose threshold);
    # under min_cosine 1.0 the same record refuses it, in the run and in explain alike.
    with_precision(cli, LOOSE)
    first = invoke("run", str(cli))
    assert first.exit_code == 0, first.output
    strict = "{use: bfloat16, require_native: false, gate: {min_cosine: 1.0}}"
    with_precision(cli, strict)
    ran = invoke("run", str(cli))
    assert ran.exit_code == 2, ran.output
    assert "below precision.gate.min_cosine 1.0" in error_line(ran.output)
    explained = invoke("explain", str(cli))
    assert explained.exit_code == 2, explained.output
    assert error_line(explained.output) == error_line(ran.output)
    assert ":float32:" not in explained.output


def test_explain_plans_in_the_precision_that_can_serve_and_exits_0(cli: Path) -> None:
    # The refusal is only for a pipeline no candidate serves: a list ending in float32
    # still explains, planned in float32 (a precision the pipeline listed).
    with_precision(cli, "[bfloat16, float32]")
    explained = invoke("explain", str(cli), "--format", "json")
    assert explained.exit_code == 0, explained.output
    document = json.loads(explained.stdout)
    assert document["ok"] is True
    chosen = next(c["name"] for c in document["precision"]["candidates"] if c["ok"])
    assert all(f":{chosen}:" in bucket["signature"] for bucket in document["buckets"])


def test_the_text_shows_the_gate_figures_a_run_recorded_and_where(
    cli: Path, tmp_path: Path
) -> None:
    # The text said only "gate passed earlier for this pipeline"; the JSON had the
    # figures and the record's path, which the text now shows too.
    with_precision(cli, LOOSE)
    ran = invoke("run", str(cli))
    assert ran.exit_code == 0, ran.output
    explained = invoke("explain", str(cli))
    assert explained.exit_code == 0, explained.output
    shown = next(line for line in explained.output.splitlines() if "  bfloat16: " in line)
    document = json.loads(invoke("explain", str(cli), "--format", "json").stdout)
    recorded = document["precision"]["candidates"][0]
    figures = recorded["figures"]
    assert "can serve" in shown
    assert "gate passed earlier for this pipeline (" in shown
    assert f"min cosine {figures['min_cosine']:.6f} over {figures['windows']} windows" in shown
    if figures["neighbours"] is not None:
        assert f"{figures['neighbours']:.1%} of top-{figures['top_k']} neighbours kept" in shown
    assert f"recorded in {recorded['recorded']})" in shown
    assert recorded["recorded"].startswith(str(tmp_path / "records"))


def test_a_sample_too_small_for_the_neighbour_check_says_so_once(cli: Path) -> None:
    # With a record of a sample of few windows, the line said "(cosine only: a top-k
    # neighbour check is not possible on 6 windows)" after the reason and again in the
    # figures: twice in one line.
    with_precision(cli, LOOSE)
    assert invoke("run", str(cli)).exit_code == 0
    explained = invoke("explain", str(cli))
    assert explained.exit_code == 0, explained.output
    shown = next(line for line in explained.output.splitlines() if "  bfloat16: " in line)
    assert shown.count("a top-k neighbour check is not possible") == 1, shown
    assert "min cosine" in shown
    assert "recorded in" in shown
