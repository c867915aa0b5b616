"""``seamline trace``: read traces written by the jsonl span exporter."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli.conventions import Command, Group
from seamline.adapters.cli.errors import user_errors

app = typer.Typer(
    help="Read traces written by the jsonl span exporter.", no_args_is_help=True, cls=Group
)

TraceFile = Annotated[
    Path,
    typer.Argument(
        help="A jsonl trace (OTEL_TRACES_EXPORTER=jsonl).", metavar="FILE", show_default=False
    ),
]


@app.command("summarize", cls=Command)
def summarize(file: TraceFile) -> None:
    """Per span name (seam): count, total, median, p95 and share of the run."""
    from seamline.adapters.cli.render.listing import trace_summary
    from seamline.adapters.trace_summary import summarize as read_summary

    trace_summary(file, user_errors(lambda: read_summary(file)))
