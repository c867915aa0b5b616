"""A progress bar fed by run events: documents/s and tokens/s on a terminal."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from seamline.contracts import BatchDone, ComponentConfig, Event, Monitor, RunFinished


class ProgressMonitor(Monitor[ComponentConfig]):
    """Not a registered component: the CLI adds it to a run when stderr is a terminal."""

    name: ClassVar[str] = "cli-progress"
    contract_version: ClassVar[str] = "1.0"

    def __init__(self, console: Console) -> None:
        super().__init__(ComponentConfig())
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            TextColumn("{task.fields[documents]} docs · {task.fields[docs_rate]:.1f} docs/s"),
            TextColumn("{task.fields[tokens]} tokens · {task.fields[tok_rate]:,.0f} tokens/s"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task(
            "embedding", total=None, documents=0, docs_rate=0.0, tokens=0, tok_rate=0.0
        )
        self.tokens = 0
        self.progress.start()

    def observe(self, event: Event) -> None:
        if isinstance(event, BatchDone):
            self.tokens += event.tokens
            elapsed = self.progress.tasks[0].elapsed or 1e-9
            self.progress.update(
                self.task,
                documents=event.documents,
                docs_rate=event.documents / elapsed,
                tokens=self.tokens,
                tok_rate=self.tokens / elapsed,
            )
        elif isinstance(event, RunFinished):
            self.progress.update(self.task, description="done" if event.ok else "failed")

    def close(self) -> None:
        self.progress.stop()

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name}
