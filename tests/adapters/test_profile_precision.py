"""seamline profile says which precision the profiled run computed in, as run does: the
decision is never silent, and a profile's timings mean little without it."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.core.precision import records
from seamline.core.precision.hardware import BF16_CPU_FEATURES, HIDDEN_VARIABLE
from seamline.core.registry import Registry
from tests.core.toy import toy_registry

PIPELINE = """\
pipeline: profiled
loader: {use: list, with: {texts: ["a b", "c d e"]}}
model: {use: toy}
attention: {use: native}
sink: {use: memory}
run: {batch_size: 2, buckets: [4]}
precision: auto
"""


def test_profile_prints_the_precision_line_run_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setenv(records.DIRECTORY_VARIABLE, str(tmp_path / "records"))
    # bfloat16 refused on any CPU: the decision, and its line, are the same everywhere.
    monkeypatch.setenv(HIDDEN_VARIABLE, ",".join(BF16_CPU_FEATURES))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    runner = CliRunner()
    out = tmp_path / "profile"
    # The log lines are captured, whatever another test of the session left structlog
    # doing (its defaults print to stdout): the summaries' lines are all stdout holds.
    with structlog.testing.capture_logs():
        ran = runner.invoke(app, ["run", str(pipeline)], env={"COLUMNS": "400"})
        profiled = runner.invoke(
            app, ["profile", str(pipeline), "--out", str(out)], env={"COLUMNS": "400"}
        )
    assert ran.exit_code == 0, ran.output
    expected = next(line for line in ran.stdout.splitlines() if "precision:" in line)
    assert expected.startswith("  precision: float32 (bfloat16 refused: this CPU has no bfloat16")
    assert profiled.exit_code == 0, profiled.output
    lines = profiled.stdout.splitlines()
    assert lines[0].startswith("done profiled:")
    assert lines[1] == expected
