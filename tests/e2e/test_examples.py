"""Every example pipeline in the repository validates against the installed components."""

from __future__ import annotations

from pathlib import Path

import pytest

from seamline.core.config import load_pipeline
from seamline.core.registry import Registry

EXAMPLES = sorted((Path(__file__).parents[2] / "examples" / "pipelines").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_validates(path: Path, registry: Registry) -> None:
    resolved = load_pipeline(path, registry, environ={})
    expected = "mpnet-encoder" if "mpnet" in path.stem else "bert-encoder"
    assert resolved.model.name == expected
