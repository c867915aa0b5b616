"""What a benchmark prints and records about its run: tables on stdout, its run's context.

rich is imported inside :func:`print_table`: reference sides in ``.venv-golden`` import
benchmark modules that import this one, and have no rich.
"""

from __future__ import annotations

import datetime
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from seamline.adapters.measure.host import host_info
from seamline.adapters.measure.load import LoadAverages


def run_context(
    started_at: datetime.datetime, started: float, load: LoadAverages, **extra: Any
) -> dict[str, Any]:
    """What a report records about its run: when it started (UTC), how long it took (from
    ``started``, a ``perf_counter``), ``extra`` entries, the host and the load samples."""
    return {
        "started": started_at.isoformat(timespec="seconds"),
        "elapsed_s": time.perf_counter() - started,
        **extra,
        "host": host_info(),
        "load_average": load.as_json(),
        "load_warning": load.exceeded,
    }


def print_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], *, width: int = 120
) -> None:
    """A table on stdout: the first column left-aligned (names), the others right (numbers)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in rows:
        table.add_row(*row)
    Console(width=None if sys.stdout.isatty() else width).print(table)
