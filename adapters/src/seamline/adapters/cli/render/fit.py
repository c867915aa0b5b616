"""Tables that fit the terminal: a value is folded onto more lines, never cut.

rich cuts a cell that cannot have the width it needs (``nati…``, ``100.…``, a column
of zero width), and a table wider than the terminal is cropped at its right edge, each
line losing the same characters. A value cut so says nothing of what it was: a
candidate's name, a share, a path, why a component was refused. So a table here is
printed one of two ways. Where its whole columns (names, numbers, verdicts) fit whole
beside some :data:`FOLDED_AT_LEAST` columns for each folded one (reasons, paths), it is
a table, the folded columns wrapping within their width. Elsewhere it is stacked: each
row a heading line, then one line per field, ``header: value``, wrapped at the
terminal's width like any line, at any width.

Light on purpose, as :mod:`.console`: rich is imported when a table is printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

FOLDED_AT_LEAST = 24
"""The least width a table leaves each folded column (where its values need that much);
a terminal narrower than that gets the stacked layout."""


@dataclass(frozen=True)
class Column:
    """A column's header, whether its values are kept whole on one line (``whole``: names,
    numbers, verdicts) or folded to the width left (reasons, paths, messages), and how
    they are aligned."""

    header: str
    whole: bool = True
    justify: Literal["left", "right"] = "left"


def fitted(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Text]],
    *,
    title: Text | None = None,
    title_justify: Literal["left", "center"] = "center",
    heading: int = 1,
    labelled: bool = False,
) -> RenderableType:
    """``rows`` as a table where it fits ``console`` whole, else stacked: each row's first
    ``heading`` cells on a line, then each other non-empty cell on its own line.

    ``labelled``: the heading's cells are named as the other fields are (``score:
    0.326``), for a heading that is a number, which says nothing alone (a name does)."""
    if fits(console, columns, rows):
        return _table(columns, rows, title, title_justify)
    return _stacked(console, columns, rows, title, heading, labelled=labelled)


def fits(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[Text]]) -> bool:
    """Whether ``rows`` fit ``console`` as a table, their whole columns whole (else
    :func:`fitted` stacks them)."""
    return _table_width(columns, rows) <= console.width


def _widest(cell: Text) -> int:
    from rich.cells import cell_len

    return max((cell_len(part) for part in cell.plain.splitlines()), default=0)


def _table_width(columns: Sequence[Column], rows: Sequence[Sequence[Text]]) -> int:
    """The width the table needs: its whole columns whole (header included), the others
    :data:`FOLDED_AT_LEAST` each (less where their values are narrower), and the rules
    and padding rich puts around each cell."""
    from rich.cells import cell_len

    width = 3 * len(columns) + 1
    for index, column in enumerate(columns):
        widest = max([cell_len(column.header), *(_widest(row[index]) for row in rows)])
        width += widest if column.whole else min(widest, FOLDED_AT_LEAST)
    return width


def _table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Text]],
    title: Text | None,
    title_justify: Literal["left", "center"],
) -> RenderableType:
    from rich.table import Table

    shown = Table(title=title, title_justify=title_justify)
    for column in columns:
        if column.whole:
            shown.add_column(column.header, justify=column.justify, no_wrap=True)
        else:
            shown.add_column(column.header, justify=column.justify, overflow="fold")
    for row in rows:
        shown.add_row(*row)
    return shown


def _stacked(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[Text]],
    title: Text | None,
    heading: int,
    *,
    labelled: bool = False,
) -> RenderableType:
    """Each field wrapped here, two columns in, and each of its lines indented: rich's
    ``Padding`` would pad every line with spaces to the terminal's width."""
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = list(folded(console, title)) if title is not None else []
    width = max(console.width - 2, 1)
    for row in rows:
        cells = row[:heading]
        if labelled:
            cells = [_field(column, cell) for column, cell in zip(columns, cells, strict=False)]
        head = Text(" ").join(cells)
        head.stylize("bold")
        parts.append(head)
        for column, cell in zip(columns[heading:], row[heading:], strict=True):
            if cell.plain:
                parts.extend(
                    Text("  ") + line for line in folded(console, _field(column, cell), width)
                )
    return Group(*parts)


def _field(column: Column, cell: Text) -> Text:
    """``header: value``, the header dim."""
    from rich.text import Text

    return Text.assemble((f"{column.header}: ", "dim"), cell)


def folded(console: Console, shown: Text, width: int | None = None) -> list[Text]:
    """``shown`` wrapped at ``width`` (the console's), one ``Text`` a line, without the space
    a line broke at: printed as rich wraps it, a title or caption kept that space at the
    end of each folded line (``nearest to 'note `` into a pipe, with ``COLUMNS=20``)."""
    lines = list(shown.wrap(console, width or console.width))
    for line in lines:
        line.rstrip()
    return lines
