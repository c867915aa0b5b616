"""What each distribution declares is true of its code: the floors of its requirements.

A packager installs the built wheels with ``uv pip install --resolution lowest-direct``;
every floor written here was found false that way once (an import that exists only from a
later release) and is checked against what the code needs. ``.ci/lowest`` runs the
commands themselves at those floors.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ["contracts", "core", "components", "adapters", "kernels/cpu-flash"]


def requirements(folder: str) -> dict[str, Requirement]:
    """The distribution's own requirements (not its extras), by name."""
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    return {(r := Requirement(text)).name: r for text in project["dependencies"]}


def floor(requirement: Requirement) -> Version | None:
    """The lowest version ``requirement`` admits, or None when it names none."""
    lows = [
        Version(s.version.rstrip(".*"))
        for s in requirement.specifier
        if ">" in s.operator or s.operator in ("==", "~=")
    ]
    return max(lows, default=None)


NEEDED = [
    # seamline.adapters.cli.conventions subclasses typer's own click (typer._click).
    ("adapters", "typer", "0.26"),
]
"""(distribution, requirement, the lowest release the code works with)."""


@pytest.mark.parametrize(("folder", "name", "needed"), NEEDED)
def test_a_declared_floor_is_not_below_what_the_code_needs(
    folder: str, name: str, needed: str
) -> None:
    declared = floor(requirements(folder)[name])
    assert declared is not None, f"{folder} requires {name} with no lower bound"
    assert declared >= Version(needed), f"{folder}: {name}>={declared}, but it needs {needed}"
