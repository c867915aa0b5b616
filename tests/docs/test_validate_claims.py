"""What the guides say ``seamline validate`` builds is what it builds.

docs/writing-a-component.md said "`seamline validate` only validates the configuration"
while cli.md said it builds the model, which it does: an author whose constructor is
slow or raises learned it from ``validate`` failing, not from the guide.
"""

from __future__ import annotations

from typing import Any

import pytest

from seamline.core import check_executor, check_model
from seamline.core.config import parse_pipeline
from tests.core.toy import ListLoader, MemorySink, ToyModel, toy_registry
from tests.docs.workdir import ROOT

GUIDE = ROOT / "docs" / "writing-a-component.md"
PIPELINE = (
    "pipeline: toy\n"
    "loader: {use: list, with: {texts: [a]}}\n"
    "model: {use: toy}\n"
    "attention: {use: native}\n"
    "sink: {use: memory}\n"
)


def test_the_component_guide_says_what_validate_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    assert "only validates the configuration" not in text
    assert "`seamline validate` builds the model and the executor too" in text
    assert "It validates the other components' configurations without building them" in text

    built: list[str] = []
    for cls in (ToyModel, ListLoader, MemorySink):
        original = cls.__init__

        def counting(self: Any, config: Any, _original: Any = original) -> None:
            built.append(self.kind)
            _original(self, config)

        monkeypatch.setattr(cls, "__init__", counting)
    registry = toy_registry()
    resolved = parse_pipeline(PIPELINE, "toy.yaml", registry)
    check_model(resolved, registry)  # what `seamline validate` calls (commands/validate.py)
    check_executor(resolved, registry)
    assert built == ["model"]
