"""seamline validate refuses a precision the model cannot compute in, as the run refuses it.

``validate --set precision=bfloat16`` of a float32-only model said ok; the run then
exited 2 ("no precision can serve this pipeline (bfloat16: the model computes in float32
only)"). What the hardware runs, and the gate, stay the run's to judge: validate may run
on another machine than the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.precision import records
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import ToyModel, toy_registry

PIPELINE = """\
pipeline: precise
loader: {{use: list, with: {{texts: ["a b", "c d e f g"]}}}}
model: {{use: {model}}}
sink: {{use: memory}}
run: {{batch_size: 4, buckets: [4, 8]}}
precision: {precision}
"""

REASON = (
    "no precision can serve this pipeline (bfloat16: the model computes in float32 only); "
    "use 'precision: auto', which falls back to float32, or add float32 to the list"
)


class Float32Toy(ToyModel):
    """The toy model offering float32 alone, as every model before contract 1.3 did."""

    name: ClassVar[str] = "float32-toy"

    def precisions(self) -> Sequence[str]:
        return ("float32",)


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    info = ComponentInfo(
        "model", Float32Toy.name, f"{__name__}:Float32Toy", "tests", "0", "ok", "", Float32Toy,
        "1.3",
    )  # fmt: skip
    registry = Registry([*toy_registry().entries(), info])
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: registry))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setenv(records.DIRECTORY_VARIABLE, str(tmp_path / "records"))
    monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "tuning"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "p.yaml"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})


def error_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("error:"))


def test_a_precision_the_model_does_not_offer_is_refused_at_its_place(cli: Path) -> None:
    cli.write_text(PIPELINE.format(model="float32-toy", precision="bfloat16"), encoding="utf-8")
    checked = invoke("validate", "p.yaml")
    assert checked.exit_code == 2, checked.output
    assert error_line(checked.output) == f"error: p.yaml:6:12: {REASON}"
    ran = invoke("run", "p.yaml")
    assert ran.exit_code == 2, ran.output
    assert REASON in error_line(ran.output)  # the run's own words
    as_json = json.loads(invoke("validate", "p.yaml", "--format", "json").stdout)
    assert (as_json["ok"], as_json["errors"][0]["line"]) == (False, 6)
    assert as_json["errors"][0]["message"] == REASON


def test_one_given_with_set_is_placed_at_the_set(cli: Path) -> None:
    cli.write_text(PIPELINE.format(model="float32-toy", precision="float32"), encoding="utf-8")
    checked = invoke("validate", "p.yaml", "--set", "precision=bfloat16")
    assert checked.exit_code == 2, checked.output
    assert error_line(checked.output) == f"error: --set precision=bfloat16: {REASON}"


@pytest.mark.parametrize(
    ("model", "precision"),
    [
        ("float32-toy", "auto"),  # falls back to float32
        ("float32-toy", "[bfloat16, float32]"),
        ("float32-toy", "{use: float32}"),
        ("toy", "bfloat16"),  # offered: the hardware and the gate are the run's to judge
    ],
)
def test_a_precision_the_model_may_compute_in_validates(
    cli: Path, model: str, precision: str
) -> None:
    cli.write_text(PIPELINE.format(model=model, precision=precision), encoding="utf-8")
    checked = invoke("validate", "p.yaml")
    assert checked.exit_code == 0, checked.output
