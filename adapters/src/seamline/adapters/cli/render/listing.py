"""The tables of ``components``, ``search`` and ``trace summarize``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.adapters.cli.availability import listed
from seamline.adapters.cli.render.console import Part, consoles, line, table, text
from seamline.contracts.versions import KINDS

if TYPE_CHECKING:
    from rich.table import Table
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


FOLDED_AT_LEAST = 24
"""The least width the wide table leaves ``reason`` and ``file`` each (where they hold
that much); a terminal narrower than that gets the stacked layout."""


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
    rows = [_cells(info) for info in infos]
    fits = _wide_width(rows) <= out.width
    out.print(_wide_table(rows) if fits else _stacked_table(rows))
    if suites:
        rows = [_suite_cells(suite) for suite in suites]
        title = "seamline.conformance (seamline check KIND:NAME)"
        fits = _wide_width(rows) <= out.width
        out.print(_wide_table(rows, title) if fits else _stacked_table(rows, title))
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


COLUMNS = ("kind", "name", "distribution", "version", "contract", "status", "reason", "file")


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


def _wide_width(rows: Sequence[tuple[str, ...]]) -> int:
    """The width the one-line-a-row table needs: its first six columns whole, and
    ``reason`` and ``file`` at least :data:`FOLDED_AT_LEAST` each (less when narrower).

    At 80 columns it was printed all the same: rich cut the status to ``untrust…`` and
    gave ``reason`` and ``file`` no width at all, so why a component was refused was
    not shown.
    """
    from rich.cells import cell_len

    widths = [
        max([cell_len(c), *(cell_len(row[i]) for row in rows)]) for i, c in enumerate(COLUMNS)
    ]
    folded = [min(width, FOLDED_AT_LEAST) for width in widths[6:]]
    return sum(widths[:6]) + sum(folded) + 3 * len(COLUMNS) + 1  # padding and rules


def _wide_table(rows: Sequence[tuple[str, ...]], title: str = "seamline components") -> Table:
    shown = table(title=title)
    for column in COLUMNS[:6]:
        shown.add_column(column, no_wrap=True)
    for column in COLUMNS[6:]:
        shown.add_column(column, overflow="fold")
    for *values, status, reason, file in rows:
        shown.add_row(*map(text, values), _status(status), text(reason), text(file))
    return shown


def _stacked_table(rows: Sequence[tuple[str, ...]], title: str = "seamline components") -> Table:
    """For a narrow terminal: kind, name and status, and in one folded column the
    distribution, version and contract, the reason (when there is one) and the file."""
    shown = table(title=title)
    for column in ("kind", "name", "status"):
        shown.add_column(column, overflow="fold")
    shown.add_column("details", overflow="fold", min_width=FOLDED_AT_LEAST)
    for kind, name, distribution, version, contract, status, reason, file in rows:
        details = [f"{distribution} {version}, contract {contract}"]
        details += [reason] if reason else []
        shown.add_row(text(kind), text(name), _status(status), text("\n".join([*details, file])))
    return shown


def _status(status: str) -> Text:
    return text((status, STATUS_COLOURS.get(status, "")))


def search_hits(query: str, found: Found) -> None:
    """The nearest records, best first, and how they were found.

    What the output stores is data, printed as written (see :mod:`.console`); a snippet
    is the text the output stores, on one line (:meth:`Hit.snippet`).
    """
    shown = table(title=text(f"nearest to {query!r}"), caption=text(found.how))
    for column in ("score", "document", "window", "text"):
        shown.add_column(column, overflow="fold")
    for hit in found.hits:
        snippet = text(hit.snippet()) if hit.text is not None else text(("(no text stored)", "dim"))
        shown.add_row(f"{hit.score:.3f}", text(hit.doc_id), str(hit.window), snippet)
    consoles.out.print(shown)


def trace_summary(file: Path, summary: TraceSummary) -> None:
    """Per span name: count, total, median, p95 and share of the run.

    A span's name is read from the trace file, which anyone may have written: shown as
    written (see :mod:`.console`).
    """
    out = consoles.out
    line(f"{file}: {summary.spans} spans, run {summary.run_seconds:.3f}s", console=out)
    shown = table()
    shown.add_column("span", no_wrap=True)
    for column in ("count", "total s", "median ms", "p95 ms", "share"):
        shown.add_column(column, justify="right", no_wrap=True)
    for row in summary.rows:
        name: list[Part] = [row.name]
        if row.errors:
            name.append((f" ({row.errors} failed)", "red"))
        shown.add_row(
            text(*name),
            str(row.count),
            f"{row.total:.3f}",
            f"{row.median * 1e3:.2f}",
            f"{row.p95 * 1e3:.2f}",
            f"{row.share:.1%}",
        )
    out.print(shown)
    for warning in summary.warnings():  # once per file, after the table they explain
        line(("warning:", "bold yellow"), " ", warning, console=consoles.err, soft_wrap=True)
