"""The consoles every command prints through, and the lines they all share.

Light on purpose: importing this module imports no part of rich, so that
``seamline --help`` does not pay for it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


class Consoles:
    """Consoles made on each use, so each invocation sees its own terminal and COLUMNS."""

    @property
    def out(self) -> Console:
        from rich.console import Console

        return Console()

    @property
    def err(self) -> Console:
        from rich.console import Console

        return Console(stderr=True)


consoles = Consoles()


def table(*args: Any, **kwargs: Any) -> Table:
    """A rich table, imported when a command first prints one (not for ``--help``)."""
    from rich.table import Table

    return Table(*args, **kwargs)


def plain(text: object) -> str:
    """``text`` with rich markup escaped (``[ray]`` in a message is text, not a tag) and
    control characters shown: a message may quote a file anyone could edit."""
    from rich.markup import escape

    from seamline.contracts.untrusted import visible

    return escape(visible(str(text), keep="\n\t"))


def line(text: str, console: Console | None = None, *, soft_wrap: bool = False) -> None:
    """One line of a command's report on stdout (or ``console``), markup in ``text`` applied.

    Rich folds a long line at the console's width unless ``soft_wrap``, which leaves that
    to the terminal (as for lines that quote paths and hashes). Numbers are not
    highlighted: the report's colours are its own.
    """
    (console or consoles.out).print(text, highlight=False, soft_wrap=soft_wrap)


def error(message: str, label: str = "error") -> None:
    """``error: message`` on stderr (``label`` may say ``failed``); ``message`` is markup."""
    consoles.err.print(f"[bold red]{label}:[/] {message}", highlight=False, soft_wrap=True)


def interrupted() -> None:
    """What Ctrl-C leaves behind."""
    consoles.err.print("[bold yellow]interrupted:[/] nothing was published", highlight=False)


def note(message: str) -> None:
    """A line on stderr beside output that goes to a file or a pipe (``wrote PATH``)."""
    consoles.err.print(message)


def raw(text: str) -> None:
    """Text for a pipe or a file (JSON, Markdown), written as is: never through rich."""
    sys.stdout.write(text)
