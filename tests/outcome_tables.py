"""The generated tables of docs/reliability.md: where each one sits, and how a cell is written.

Each table is rendered from what a scenario was *observed* to do, by the tests that
run it and by ``python -m tests.outcomes --write``; a test then checks that the page
holds exactly the table its own results render. The page marks each table with a
named pair of comments, so that one command can rewrite any of them::

    <!-- outcomes:NAME:begin (generated: python -m tests.outcomes --write) -->
    | ... |
    <!-- outcomes:NAME:end -->

Cells say what happened: an outcome that differs from the scenario's expectation is
written in bold with what was expected (``**exit 1 (expected 2)**``), never replaced
by the expected text. Whatever differs between machines or runs (temporary paths,
pids) is normalised here, so that a table is the same wherever the tests pass.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

PAGE = Path(__file__).parents[1] / "docs" / "reliability.md"
COMMAND = "python -m tests.outcomes --write"
"""The one command that regenerates every table (``--only NAME`` for one), as the pages'
markers name it."""
RUN_COMMAND = f".venv/bin/python -m {COMMAND.removeprefix('python -m ')}"
"""It as a contributor runs it from the checkout's root (docs/reliability.md): the
environment's Python, not whatever ``python`` is on PATH."""

NOT_RUN_AS_ROOT = "(not run: running as root)"
"""The outcome of a scenario root cannot show (root reads and writes any file)."""


def begin(name: str) -> str:
    return f"<!-- outcomes:{name}:begin (generated: {COMMAND}) -->"


def end(name: str) -> str:
    return f"<!-- outcomes:{name}:end -->"


def block(page: str, name: str) -> str:
    """The table named ``name`` as the page holds it now."""
    start = page.index(begin(name)) + len(begin(name))
    return page[start : page.index(end(name))].strip()


def replace_block(page: str, name: str, table: str) -> str:
    """``page`` with the table named ``name`` replaced by ``table``."""
    start = page.index(begin(name)) + len(begin(name))
    return f"{page[:start]}\n{table}\n{page[page.index(end(name)) :]}"


def page_block(name: str) -> str:
    """The table named ``name`` in docs/reliability.md."""
    return block(PAGE.read_text(encoding="utf-8"), name)


def comparable(table: str, machine_dependent: Iterable[str] = ()) -> list[str]:
    """The rows of ``table`` to hold the page to: all but those naming a machine-dependent case.

    A case only some machines can run (one root cannot show, one that needs a user
    namespace) renders as run on one machine and "not run" on another; the page
    shows it as the machine that regenerated it saw it, and is not held to it elsewhere.
    """
    labels = tuple(f"| {label} |" for label in machine_dependent)
    return [row for row in table.splitlines() if not any(label in row for label in labels)]


def out_of_date(name: str) -> str:
    """The failure message of a page that does not hold what this run renders."""
    return (
        f"docs/reliability.md's table '{name}' is not what this run observed: run "
        f"'{RUN_COMMAND} --only {name}' from the checkout's root, read the difference and "
        "commit the page"
    )


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A markdown table."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_cell(text: str, paths: Mapping[str, str] | None = None) -> str:
    """``text`` as one table cell, in code font: paths replaced, whitespace folded, long
    digit runs shortened (a 5,000-digit number echoed back), pipes escaped.

    ``paths`` maps a path (a temporary directory, a file) to its placeholder
    (``<tmp>``, ``<file>``); longer paths are replaced first, and a path is also
    replaced in its resolved form (``/tmp`` may be a link).
    """
    text = normalise(text, paths)
    return f"`{text.replace('|', chr(92) + '|')}`" if text else "—"


def normalise(text: str, paths: Mapping[str, str] | None = None) -> str:
    """``text`` with machine-dependent paths replaced and whitespace folded to single spaces."""
    pairs: dict[str, str] = {}
    for path, placeholder in (paths or {}).items():
        pairs[path] = placeholder
        pairs.setdefault(str(Path(path).resolve()), placeholder)
    for path in sorted(pairs, key=len, reverse=True):
        text = text.replace(path, pairs[path])
    text = re.sub(r"\d{41,}", lambda m: f"{m[0][:3]}…({len(m[0]):,} digits)", text)
    return re.sub(r"\s+", " ", text).strip()


def expected(observed: object, wanted: object, text: str | None = None) -> str:
    """``text`` (default: the observed value), or it in bold with what was expected."""
    shown = str(observed) if text is None else text
    return shown if observed == wanted else f"**{shown} (expected {wanted})**"


def check(ok: bool, said: str, otherwise: str) -> str:
    """``said`` when ``ok``, else ``otherwise`` in bold: a claim a cell makes only if it held."""
    return said if ok else f"**{otherwise}**"


T = TypeVar("T")


class Observations(ABC, Generic[T]):
    """Each scenario of an area run at most once, on first demand, and its outcome kept.

    The tests of the area and its table share one instance per test session, so a
    scenario whose outcome a test asserts is not run again to render the table;
    ``python -m tests.outcomes`` makes its own.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self._seen: dict[str, T] = {}

    @property
    @abstractmethod
    def keys(self) -> tuple[str, ...]:
        """Every scenario, in the order of the table."""

    @abstractmethod
    def observe(self, key: str, workdir: Path) -> T:
        """Run scenario ``key`` in ``workdir`` (a new, empty folder) and say what it did."""

    def __getitem__(self, key: str) -> T:
        if key not in self.keys:
            raise KeyError(f"no scenario {key!r}; the scenarios are {', '.join(self.keys)}")
        if key not in self._seen:
            workdir = self.workdir(key)
            workdir.mkdir(parents=True)
            self._seen[key] = self.observe(key, workdir)
        return self._seen[key]

    def workdir(self, key: str) -> Path:
        """The folder scenario ``key`` runs in."""
        return self.base / key.replace(":", "-")

    def all(self) -> list[T]:
        """Every scenario's outcome, in table order (running those not yet run)."""
        return [self[key] for key in self.keys]
