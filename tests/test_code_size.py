"""No class over 300 lines and no function over 80 in the distributions (issue 24's measure).

A class or function that long does several jobs, and whoever changes one of them must
read them all. The walk covers every distribution seamline ships or shows as an
example: the four workspace members, the compiled kernels and the example plugins.
A definition's length runs from its first decorator to its last line, docstring and
comments included: what a reader has to get through.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (
    "contracts/src",
    "core/src",
    "components/src",
    "adapters/src",
    "kernels/*/src",
    "examples/*/src",
)
LIMITS = {"class": 300, "function": 80}

KNOWN_OFFENDERS: set[str] = set()
"""Definitions allowed past the limits. Empty since the sinks and the CLI were split (issue
24); a new entry needs a reason in review, not a convenience."""
CLI_MAIN = ROOT / "adapters/src/seamline/adapters/cli/main.py"
"""The typer app and the list of its commands; each command is a module of cli/commands/."""


def source_files() -> list[Path]:
    """Every Python file under the distributions' source folders, in a stable order."""
    folders = [folder for pattern in SOURCES for folder in ROOT.glob(pattern)]
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


def definitions(path: Path) -> Iterator[tuple[str, str, int]]:
    """``(kind, qualified name, lines)`` of every class and function in the file, nested
    ones included (a method is a function of its class)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                lines = (child.end_lineno or child.lineno) - first + 1
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                name = f"{prefix}{child.name}"
                yield kind, name, lines
                yield from walk(child, f"{name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def too_long() -> dict[str, int]:
    """``"kind path::name"`` -> lines, for every definition over its limit."""
    found = {}
    for path in source_files():
        relative = path.relative_to(ROOT).as_posix()
        for kind, name, lines in definitions(path):
            if lines > LIMITS[kind]:
                found[f"{kind} {relative}::{name}"] = lines
    return found


def test_the_walk_sees_every_distribution() -> None:
    # A folder that moves out of the patterns would pass unseen: each must hold sources.
    for pattern in SOURCES:
        folders = list(ROOT.glob(pattern))
        assert folders, f"{pattern} matches nothing"
        assert all(any(folder.rglob("*.py")) for folder in folders), pattern


def test_no_class_over_300_lines_and_no_function_over_80() -> None:
    offenders = {key: lines for key, lines in too_long().items() if key not in KNOWN_OFFENDERS}
    assert not offenders, "split these into parts with one job each:\n" + "\n".join(
        f"  {key}: {lines} lines (limit {LIMITS[key.split()[0]]})"
        for key, lines in sorted(offenders.items())
    )


def test_the_command_lines_main_module_is_under_150_lines() -> None:
    lines = len(CLI_MAIN.read_text(encoding="utf-8").splitlines())
    assert lines < 150, f"{CLI_MAIN.relative_to(ROOT)}: {lines} lines; a command's work goes in "
    "cli/commands/, what it prints in cli/render/"


def test_the_known_offenders_are_still_offending() -> None:
    # Once a split lands, its entry must go, so that the allowlist only ever shrinks.
    fixed = KNOWN_OFFENDERS - set(too_long())
    assert not fixed, f"no longer over the limit, remove from KNOWN_OFFENDERS: {sorted(fixed)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n" + "    x = 1\n" * 80, ["function f"]),  # 81 lines
        ("def f():\n" + "    x = 1\n" * 79, []),  # 80 lines: within the limit
        ("@decorator\ndef f():\n" + "    x = 1\n" * 79, ["function f"]),  # decorators count
        ("class C:\n    def m(self):\n" + "        x = 1\n" * 80, ["function C.m"]),
        ("class C:\n" + "    x = 1\n" * 300, ["class C"]),
    ],
)
def test_lengths_count_decorators_and_nested_definitions(
    source: str, expected: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "module.py"
    path.write_text(source, encoding="utf-8")
    over = [f"{kind} {name}" for kind, name, lines in definitions(path) if lines > LIMITS[kind]]
    assert over == expected
