"""A warning a component logs while ``seamline validate`` builds it is a log line.

``validate`` builds the model (it reads the checkpoint's configuration), and a model may
warn there: a checkpoint's ``default_prompt_name`` that documents do not get, say. With
logging never configured by ``validate``, structlog's fallback printed the bare
``event="..."``, with no level; ``explain`` and ``run`` print the same warning as a log
line (JSON lines when stderr is not a terminal).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts.logs import get_logger
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import ToyConfig, ToyModel, toy_registry
from tests.fresh_logging import logging_as_in_a_fresh_process

log = get_logger("seamline.components")


class WarningToy(ToyModel):
    """The toy model, warning of its checkpoint when it is built."""

    name: ClassVar[str] = "warning-toy"

    def __init__(self, config: ToyConfig) -> None:
        super().__init__(config)
        log.warning("this checkpoint sets a default prompt documents do not get")


def test_a_model_warning_while_validating_is_a_log_line_with_its_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = ComponentInfo(
        "model", "warning-toy", f"{__name__}:WarningToy", "tests", "0", "ok", "",
        WarningToy, "1.0",
    )  # fmt: skip
    registry = Registry([*toy_registry().entries(), info])
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry))
    path = tmp_path / "p.yaml"
    path.write_text(
        "pipeline: p\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: warning-toy}\n"
        "sink: {use: memory}\n",
        encoding="utf-8",
    )
    with logging_as_in_a_fresh_process():
        result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stderr.splitlines() if "default prompt" in x)
    assert json.loads(line)["level"] == "warning", line
