"""A progress bar fed by run events, on a terminal: a bar with a total, a rate and the
time left when the loader says how many documents it will read, a spinner when not.

The total comes with ``RunStarted.expected`` (the loader's ``size``, loader contract
1.1; monitor contract 1.5). What is done is every item read: the documents prepared
(``BatchDone.documents``) and those set aside (``DocumentFailed``), so a corpus with
blank or broken files still ends at its total. A worker that runs several shards one
after another starts each with a ``RunStarted``: the bar keeps counting toward the
whole input's total. When the shards run in other processes (``ray``), the driver shows
it their progress as one run (:mod:`seamline.core.driver_progress`): one ``RunStarted``,
``BatchDone`` events whose ``documents`` are every item read so far, and ``RunFinished``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from seamline.contracts import (
    BatchDone,
    ComponentConfig,
    DocumentFailed,
    Event,
    Monitor,
    RunFinished,
    RunStarted,
)

RATES = "{task.fields[docs_rate]:.1f} docs/s · {task.fields[tok_rate]:,.0f} tokens/s"


def spinner_columns() -> tuple[ProgressColumn, ...]:
    """No total: what is done so far and how fast, under a spinner."""
    return (
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TextColumn("{task.completed:.0f} docs"),
        TextColumn(RATES),
        TimeElapsedColumn(),
    )


def bar_columns() -> tuple[ProgressColumn, ...]:
    """A total: the bar, done of total, percent, the rates, time spent and time left."""
    return (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn(RATES),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )


class ProgressMonitor(Monitor[ComponentConfig]):
    """Not a registered component: the CLI adds it to a run when stderr is a terminal."""

    name: ClassVar[str] = "cli-progress"
    contract_version: ClassVar[str] = "1.5"

    def __init__(self, console: Console) -> None:
        super().__init__(ComponentConfig())
        self.progress = Progress(*spinner_columns(), console=console, transient=False)
        self.task = self.progress.add_task("embedding", total=None, docs_rate=0.0, tok_rate=0.0)
        self.tokens = 0
        self.documents = 0
        """Documents prepared by earlier parts (shards) and this one's last batch."""
        self.earlier = 0
        """Items read by the parts (shards) this worker finished before the current one."""
        self.set_aside = 0
        self.progress.start()

    def observe(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, BatchDone):
            self.tokens += event.tokens
            self.documents = event.documents
            self._show()
        elif isinstance(event, DocumentFailed):
            self.set_aside += 1
            self._show()
        elif isinstance(event, RunFinished):
            self.progress.update(self.task, description="done" if event.ok else "failed")

    def _started(self, event: RunStarted) -> None:
        """A part begins: fold the last part's items into ``earlier``; show a total if known."""
        self.earlier = self._read()
        self.documents = self.set_aside = 0
        if event.expected is not None and self.progress.tasks[0].total is None:
            self.progress.columns = bar_columns()
            self.progress.update(self.task, total=event.expected)

    def _read(self) -> int:
        return self.earlier + self.documents + self.set_aside

    def _show(self) -> None:
        elapsed = self.progress.tasks[0].elapsed or 1e-9
        read = self._read()
        self.progress.update(
            self.task,
            completed=read,
            docs_rate=read / elapsed,
            tok_rate=self.tokens / elapsed,
        )

    def close(self) -> None:
        self.progress.stop()

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name}
