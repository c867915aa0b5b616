"""A page installs a plugin into a folder of the reader's own, never a fixed shared path.

docs/writing-a-component.md installed its example plugin with ``--target /tmp/csv-plugin``
and ran ``PYTHONPATH=/tmp/csv-plugin seamline ...``: on a shared machine another user can
make ``/tmp/csv-plugin`` first, and the reader's run imports their code; two checkouts
running the docs tests wrote over each other's. The page now uses ``./csv-plugin``, in the
folder the reader runs from (the docs tests' own folder for each page, ``workdir.py``).
"""

from __future__ import annotations

import re

from tests.docs.collect import CONSOLE_PAGES
from tests.docs.workdir import ROOT, WRITTEN_BY_COMMANDS

SHARED_PATH = re.compile(r"(?:PYTHONPATH=|--target[= ])['\"]?/tmp\b")


def test_no_page_imports_from_a_shared_folder() -> None:
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for pattern in CONSOLE_PAGES
        for page in sorted(ROOT.glob(pattern))
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if SHARED_PATH.search(line)
    ]
    assert found == [], (
        "a page installs or imports a plugin from a fixed path under /tmp, which another "
        "user can make first; use a folder in the reader's working folder (./csv-plugin):\n"
        + "\n".join(found)
    )


def test_the_plugin_folder_is_the_page_folder_s_own() -> None:
    """The docs tests' folder links the checkout's entries: a ``csv-plugin`` left in the
    checkout by a reader must not be linked, or the page would install into it."""
    guide = (ROOT / "docs" / "writing-a-component.md").read_text(encoding="utf-8")
    assert "--target ./csv-plugin" in guide
    assert "csv-plugin" in WRITTEN_BY_COMMANDS


def test_the_install_command_says_the_folder_it_runs_from() -> None:
    """``uv pip install ... examples/plugins/seamline-example-csv`` names the package by a
    path relative to the checkout: from a folder of the reader's own it failed with
    ``Distribution not found``. The section says where to run it, and the form for
    elsewhere."""
    guide = (ROOT / "docs" / "writing-a-component.md").read_text(encoding="utf-8")
    section = guide[guide.index("### Install it and check it is found") :]
    section = section[: section.index("\n### ")]
    before = section[: section.index("--target ./csv-plugin examples/plugins/")]
    assert "from the root of your seamline checkout" in before
    assert "/path/to/seamline/examples/plugins/seamline-example-csv" in before


def test_the_components_listing_shows_the_conformance_table_too() -> None:
    """``seamline components`` prints the ``seamline.conformance`` table under the
    components': the page's sample showed only the first, in a block no test ran."""
    guide = (ROOT / "docs" / "writing-a-component.md").read_text(encoding="utf-8")
    command = "$ COLUMNS=200 PYTHONPATH=./csv-plugin .venv/bin/seamline components --kind loader"
    shown = guide[guide.index(command) :]
    shown = shown[: shown.index("```")]
    assert "seamline.conformance (seamline check KIND:NAME)" in shown
