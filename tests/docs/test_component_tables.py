"""The docs' ``seamline components`` tables name the contract versions installed today.

The docs tests compare a table's body rows by their number of cells only (the rows
depend on what is installed), so a row's numbers drifted unseen: cli.md listed the
sinks at contract 1.4 long after they declared 1.5. Here each row of an installed,
first-party component is checked against the registry: its distribution, version and
contract. Rows of components the page itself makes up (a third party's, fixtures that
fail on purpose) are not installed here and are left alone.
"""

from __future__ import annotations

import re

import pytest

from seamline.core.registry import Registry
from seamline.core.trust import EVERYONE
from tests.docs.workdir import ROOT

ROW = re.compile(
    r"^│ (attention|model|loader|sink|monitor|executor) +│ (\S+) +│ (\S+) +│ (\S+) +│ (\S+) +│ ok "
)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def rows() -> list[tuple[str, tuple[str, ...]]]:
    """``(page:line, (kind, name, distribution, version, contract))`` of each row."""
    found = []
    for page in PAGES:
        suites = False  # the seamline.conformance table's rows are suites, not components
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip() == "seamline.conformance (seamline check KIND:NAME)":  # its title
                suites = True
            elif line.startswith("└"):
                suites = False
            match = None if suites else ROW.match(line)
            if match:
                found.append((f"{page.relative_to(ROOT)}:{number}", match.groups()))
    return found


@pytest.fixture(scope="module")
def installed() -> dict[tuple[str, str], tuple[str, str, str]]:
    return {
        (info.kind, info.name): (info.distribution, info.version, info.contract_version or "-")
        for info in Registry.discover(EVERYONE).entries()
    }


def test_the_pages_have_component_rows_to_check() -> None:
    assert len(rows()) >= 20, "the pattern no longer finds the components tables"


@pytest.mark.parametrize(("where", "row"), rows(), ids=str)
def test_a_row_says_what_is_installed(
    where: str, row: tuple[str, ...], installed: dict[tuple[str, str], tuple[str, str, str]]
) -> None:
    kind, name, distribution, version, contract = row
    live = installed.get((kind, name))
    if live is None or live[0] != distribution:
        pytest.skip(f"{kind} {name!r} of {distribution} is the page's own example")
    assert (distribution, version, contract) == live, f"{where}: the row is out of date"
