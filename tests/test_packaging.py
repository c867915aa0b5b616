"""What each distribution declares is true of its code: the floors of its requirements.

A packager installs the built wheels with ``uv pip install --resolution lowest-direct``;
every floor written here was found false that way once (an import that exists only from a
later release) and is checked against what the code needs. ``.ci/lowest`` runs the
commands themselves at those floors.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
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
    # seamline.core.registry subclasses ExtensionManager[Any] (generic from stevedore 5.6)
    # and overrides _load_one_plugin with the arguments it has from 5.6 (5.2 had one more).
    ("core", "stevedore", "5.6"),
]
"""(distribution, requirement, the lowest release the code works with)."""


@pytest.mark.parametrize(("folder", "name", "needed"), NEEDED)
def test_a_declared_floor_is_not_below_what_the_code_needs(
    folder: str, name: str, needed: str
) -> None:
    declared = floor(requirements(folder)[name])
    assert declared is not None, f"{folder} requires {name} with no lower bound"
    assert declared >= Version(needed), f"{folder}: {name}>={declared}, but it needs {needed}"


SOURCES = {folder: ROOT / folder / "src" for folder in DISTRIBUTIONS}
OPTIONAL = {("adapters", "matplotlib")}
"""Imports a distribution tries and goes on without (with a message): the bench's picture."""


def _name(text: str) -> str:
    return text.lower().replace("_", "-").replace(".", "-")


def _closure(folder: str) -> set[str]:
    """The distributions ``folder`` declares (extras too) and all that they require in turn:
    seamline's own from their pyprojects, third parties' from their installed metadata."""
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    todo = [Requirement(t) for t in [*project["dependencies"], *(t for e in extras for t in e)]]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = _name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        own = {_name(f"seamline-{f.split('/')[-1]}"): f for f in DISTRIBUTIONS}
        if name in own:
            seen |= _closure(own[name])
            continue
        try:
            texts = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [Requirement(t.split(";")[0]) for t in texts if "extra ==" not in t]
    return seen


def _imports(source: Path) -> dict[str, str]:
    """Each third-party top-level module the source imports, with one file importing it."""
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                if top not in sys.stdlib_module_names and top not in {
                    "seamline",
                    "seamline_cpu_flash",
                    "__future__",
                }:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_every_module_a_distribution_imports_is_declared(folder: str) -> None:
    """adapters imported psutil, and contracts structlog, without declaring them: an install
    of the wheels alone (no other seamline distribution to bring them) failed there."""
    declared = _closure(folder)
    providers = importlib.metadata.packages_distributions()
    undeclared = {
        top: where
        for top, where in _imports(SOURCES[folder]).items()
        if (folder, top) not in OPTIONAL
        and not {_name(d) for d in providers.get(top, [top])} & declared
    }
    assert not undeclared, f"{folder} imports, undeclared: {undeclared}"


def _version(folder: str) -> Version:
    return Version(
        tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]["version"]
    )


@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_seamlines_own_distributions_require_each_other_within_one_release_series(
    folder: str,
) -> None:
    """Unversioned, a seamline distribution accepted any other release of the ones it is
    built with: each requires theirs as ``>=X.Y,<X.Y+1``, X.Y being the required one's
    version in this checkout (0.x releases may break what they share)."""
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    own = {f"seamline-{f.split('/')[-1]}": f for f in DISTRIBUTIONS}
    for text in [*project["dependencies"], *(t for e in extras for t in e)]:
        requirement = Requirement(text)
        if requirement.name in own:
            release = _version(own[requirement.name]).release
            series = f">={release[0]}.{release[1]},<{release[0]}.{release[1] + 1}"
            assert requirement.specifier == SpecifierSet(series), (
                f"{folder}: {text} (want {series})"
            )


@pytest.mark.parametrize("folder", DISTRIBUTIONS)
def test_each_distribution_carries_the_license_and_a_readme_of_its_own(folder: str) -> None:
    """Every distribution declared License-Expression: Apache-2.0 and carried no license
    text (there was none in the repository); the four workspace ones' description was one
    line linking ../README.md, broken on an index. Each ships a copy of the root LICENSE
    and a README that stands alone."""
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    assert project["license-files"] == ["LICENSE"]
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text
    assert (ROOT / folder / "LICENSE").read_text(encoding="utf-8") == license_text
    readme = (ROOT / folder / project["readme"]).read_text(encoding="utf-8")
    assert "](../" not in readme
    assert len(readme.splitlines()) > 5
