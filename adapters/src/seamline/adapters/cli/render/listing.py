"""The tables of ``components``, ``search`` and ``trace summarize``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.adapters.cli.availability import listed
from seamline.adapters.cli.render.console import Part, consoles, line, table, text, title
from seamline.adapters.cli.render.fit import Column, fits, fitted, folded
from seamline.contracts.versions import KINDS

if TYPE_CHECKING:
    from rich.text import Text

    from seamline.adapters.search import Found
    from seamline.adapters.trace_summary import TraceSummary
    from seamline.core import ComponentInfo, ListedConformance

STATUS_COLOURS = {
    "ok": "green",
    "broken": "red",
    "refused": "yellow",
    "conflict": "red",
    "untrusted": "magenta",
    "unavailable": "yellow",
}


def components(
    infos: Iterable[ComponentInfo],
    trusted: str | None,
    stray: Sequence[tuple[str, str, str]] = (),
    suites: Sequence[ListedConformance] = (),
) -> None:
    """One row per component; ``trusted``: the distributions trust allows, when it is
    restricted (a line under the table), else None; ``stray``: ``(group, name,
    distribution)`` of each entry point in a group seamline does not read (a line each);
    ``suites``: the ``seamline.conformance`` entry points, in a second table.

    Names, versions and files come from package metadata anyone can publish: shown as
    written (see :mod:`.console`).
    """
    from seamline.core import group_of  # imported by the command already

    out = consoles.out
    rows = [_shown(_cells(info)) for info in infos]
    out.print(fitted(out, COLUMNS, rows, title=title("seamline components"), heading=2))
    if suites:
        rows = [_shown(_suite_cells(suite)) for suite in suites]
        named = title("seamline.conformance (seamline check KIND:NAME)")
        out.print(fitted(out, COLUMNS, rows, title=named, heading=2))
    if trusted is not None:
        line(f"trusted distributions: {trusted}", console=out, soft_wrap=True)
    groups = ", ".join(map(group_of, KINDS))
    for group, name, distribution in stray:
        line(
            ("not read:", "bold yellow"),
            f" {distribution} registers {name!r} in the entry-point group {group!r}, which "
            f"seamline does not read: register it in one of {groups}",
            console=out,
            soft_wrap=True,
        )


COLUMNS = (
    *map(Column, ("kind", "name", "distribution", "version", "contract", "status")),
    Column("reason", whole=False),
    Column("file", whole=False),
)
"""The components' columns: a reason or a path is folded, the rest kept whole; a terminal
too narrow for that gets each component stacked (:mod:`.fit`)."""


def _cells(info: ComponentInfo) -> tuple[str, ...]:
    """A row's values as :data:`COLUMNS` orders them."""
    status, reason = listed(info)
    return (
        info.kind,
        info.name,
        info.distribution,
        info.version,
        info.contract_version or "-",
        status,
        reason,
        info.module_file or "-",
    )


def _suite_cells(suite: ListedConformance) -> tuple[str, ...]:
    """A conformance entry's row in the components' columns: its ``KIND:NAME`` split (a
    name that is not one is shown whole, kind ``-``), no contract, and no file read."""
    entry = suite.entry
    kind, _, name = entry.key.partition(":") if ":" in entry.key else ("-", "", entry.key)
    return (
        kind,
        name,
        entry.distribution,
        entry.version,
        "-",
        suite.status,
        suite.reason,
        entry.module_file or "-",
    )


def _shown(cells: tuple[str, ...]) -> list[Text]:
    """A row's cells as shown: each as written, the status in its colour."""
    *values, status, reason, file = cells
    return [*map(text, values), _status(status), text(reason), text(file)]


def _status(status: str) -> Text:
    return text((status, STATUS_COLOURS.get(status, "")))


HIT_COLUMNS = (
    Column("score"),
    Column("document", whole=False),
    Column("window"),
    Column("text", whole=False),
)
"""A hit's score and window are numbers, never wrapped; its id and text fold (:mod:`.fit`)."""


def search_hits(query: str, found: Found) -> None:
    """The nearest records, best first, and how they were found.

    What the output stores is data, printed as written (see :mod:`.console`); a snippet
    is the text the output stores, on one line (:meth:`Hit.snippet`), and so is an id: a
    newline in one (``nl\\nlevel=error msg=forged``) drew a line of its own under the row.
    A terminal too narrow for the table with its numbers whole gets each hit stacked
    (:func:`.fit.fitted`): ``COLUMNS=20`` split a score over three rows ("0.", "46", "6").
    """
    out = consoles.out
    rows = [
        [
            text(f"{hit.score:.3f}"),
            text(one_line(hit.doc_id)),
            text(str(hit.window)),
            text(hit.snippet()) if hit.text is not None else text(("(no text stored)", "dim")),
        ]
        for hit in found.hits
    ]
    heading = text(f"nearest to {query!r}")
    if not fits(out, HIT_COLUMNS, rows):
        out.print(
            fitted(out, HIT_COLUMNS, rows, title=heading, title_justify="left", labelled=True)
        )
        for line in folded(out, text(found.how)):  # folded at the width, as a caption is
            out.print(line, highlight=False)
        return
    shown = table(title=heading, caption=text(found.how))
    for column in HIT_COLUMNS:
        shown.add_column(column.header, overflow="fold", no_wrap=column.whole)
    for row in rows:
        shown.add_row(*row)
    out.print(shown)


def one_line(value: str) -> str:
    """``value`` with each whitespace character but a space (a newline, a tab, U+2028) made
    a space, one for one: the id stays as long as it is, its spaces as many as they are."""
    return "".join(" " if ch.isspace() else ch for ch in value)


SPAN_COLUMNS = (
    Column("span", whole=False),
    *(
        Column(header, justify="right")
        for header in ("count", "total s", "median ms", "p95 ms", "share")
    ),
)
"""A span's name is folded where it must be; its figures are never cut (:mod:`.fit`)."""


def trace_summary(file: Path, summary: TraceSummary) -> None:
    """Per span name: count, total, median, p95 and share of the run.

    A span's name is read from the trace file, which anyone may have written: shown as
    written (see :mod:`.console`).
    """
    out = consoles.out
    line(f"{file}: {summary.spans} spans, run {summary.run_seconds:.3f}s", console=out)
    rows: list[list[Text]] = []
    for row in summary.rows:
        name: list[Part] = [row.name]
        if row.errors:
            name.append((f" ({row.errors} failed)", "red"))
        figures = (
            str(row.count),
            f"{row.total:.3f}",
            f"{row.median * 1e3:.2f}",
            f"{row.p95 * 1e3:.2f}",
            f"{row.share:.1%}",
        )
        rows.append([text(*name), *map(text, figures)])
    out.print(fitted(out, SPAN_COLUMNS, rows))
    for warning in summary.warnings():  # once per file, after the table they explain
        line(("warning:", "bold yellow"), " ", warning, console=consoles.err, soft_wrap=True)
