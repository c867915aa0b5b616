"""What the end-to-end tests that run ``seamline`` from a folder of their own share: a
small real checkpoint to copy there, and the one error line a refusal must be."""

from __future__ import annotations

import shutil
from pathlib import Path

CHECKPOINT = Path(__file__).resolve().parents[1] / "golden" / "family" / "e5-mean"
"""A tiny BERT checkpoint (random weights, real files), quick to embed with."""


def copy_checkpoint(folder: Path, name: str = "my-model") -> Path:
    """A copy of :data:`CHECKPOINT` at ``folder / name``, for a pipeline to name."""
    return Path(shutil.copytree(CHECKPOINT, folder / name))


def one_line(output: str) -> str:
    """The single line ``output`` holds (no traceback), its runs of spaces made one."""
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return " ".join(lines[0].split())
