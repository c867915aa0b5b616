"""``seamline check``'s progress on a terminal: how many checks are done, and which runs.

A suite takes from seconds to minutes (a kernel in TPU interpret mode, about six), and
the report comes only at its end: until then the terminal stayed blank, and a slow check
looked like a hung one. The bar is a pytest plugin, fed by the run's own hooks, drawn on
standard error and erased when the suite ends, so the report reads as before.

pytest captures file descriptors 1 and 2 around each check (a check's output belongs
to its result), so the bar writes to a copy of the terminal's descriptor made before the
suite starts: drawn where the person watching can see it, never in a check's captured
output. Off a terminal (piped, in CI) there is no bar; ``-v`` shows pytest's own lines
instead.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from seamline.adapters.cli.render.console import on_a_terminal
from seamline.contracts.testing.results import check_name


class CheckProgress:
    """The bar, and the pytest hooks that move it (pass it among pytest's plugins)."""

    def __init__(self, target: str, console: Console) -> None:
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("[bold]checking {task.fields[target]}"),
            BarColumn(bar_width=20),  # room for the check's name on 80 columns
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[check]}"),
            console=console,
            transient=True,
            # A line logged to stderr while the bar is drawn is printed above it; stdout is
            # left alone: it may be a pipe, and the bar's console is the terminal.
            redirect_stdout=False,
        )
        self.task = self.bar.add_task("checks", total=None, target=target, check="")

    def pytest_collection_finish(self, session: Any) -> None:
        self.bar.update(self.task, total=len(session.items))

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.bar.update(self.task, check=check_name(nodeid))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.bar.update(self.task, advance=1, check="")


@contextlib.contextmanager
def shown(target: str, stream: TextIO, *, verbose: bool) -> Iterator[CheckProgress | None]:
    """The bar, drawn on ``stream``'s terminal while the block runs, then erased; None
    where ``stream`` is no terminal (or a dumb one), or ``verbose`` shows pytest's own
    progress."""
    if verbose or not on_a_terminal(stream):
        yield None
        return
    with open(os.dup(stream.fileno()), "w", encoding="utf-8", errors="replace") as terminal:
        console = Console(file=terminal, stderr=True)
        if console.is_dumb_terminal:  # TERM=dumb: rich draws nothing, and leaves a blank line
            yield None
            return
        progress = CheckProgress(target, console)
        with progress.bar:
            yield progress
