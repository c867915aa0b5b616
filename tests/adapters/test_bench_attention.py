"""``seamline bench attention`` runs from the installed package and writes its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app

pytestmark = pytest.mark.slow


def test_smallest_sweep_writes_a_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # workers and results are relative to where it starts
    arguments = ["--lengths", "128", "--implementations", "native", "--repeats", "1"]
    result = CliRunner().invoke(
        app, ["bench", "attention", *arguments, "--no-plot", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r" / "attention.json").read_text(encoding="utf-8"))
    text = json.dumps(report)
    assert "native" in text
    assert "128" in text
