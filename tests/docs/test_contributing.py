"""A contributor finds CONTRIBUTING.md, and the architecture's table says where a loader goes.

A tester who added a built-in loader from the docs alone found no CONTRIBUTING file and
learned most steps (the conformance entry point, ``make setup`` for a new entry point,
the hostile-input rows) from failing tests. CONTRIBUTING.md's commands are docs tests
(``collect.CONSOLE_PAGES``), so they stay runnable.
"""

from __future__ import annotations

from tests.docs.collect import CONSOLE_PAGES
from tests.docs.workdir import ROOT


def test_the_readme_links_contributing_and_its_commands_are_docs_tests() -> None:
    assert "[CONTRIBUTING.md](CONTRIBUTING.md)" in (ROOT / "README.md").read_text("utf-8")
    assert "CONTRIBUTING.md" in CONSOLE_PAGES


def test_contributing_says_how_a_component_is_registered_and_seen() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for needed in (
        "docs/architecture.md",
        "components/pyproject.toml",
        '[project.entry-points."seamline.conformance"]',
        "make setup",
        "tests/hostile/corpus.py",
        "SEAMLINE_DOCS_UPDATE=1",
        ".venv/bin/python -m tests.outcomes --write",
    ):
        assert needed in text, needed


def test_the_architecture_table_has_a_loader_row() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| a loader |")]
    assert "seamline.conformance" in row
    assert "tests/hostile/run.py" in row
