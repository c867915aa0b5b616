"""The worker's record of how far its current shard has got, for an executor to ask for.

A worker in another process cannot reach the driver's monitors (the CLI's progress
bar), so it keeps the last counts of the shard it runs where an executor can read
them without waiting for the shard (executor contract 1.2, ``ShardWorker.progress``).
The record is a monitor among the worker's own: it is fed by the events the run emits
anyway, so counting costs the run nothing it does not already do, and it sees no
event twice (the driver's monitors are not the worker's).
"""

from __future__ import annotations

from typing import Any, ClassVar

from seamline.contracts import (
    BatchDone,
    ComponentConfig,
    DocumentFailed,
    Event,
    Monitor,
    RunCounts,
    RunStarted,
)


class ProgressRecorder(Monitor[ComponentConfig]):
    """Not a registered component: the remote worker adds it to its own monitors.

    :attr:`counts` is replaced whole on every event (one value, read by another thread
    without a lock): None before a part's ``RunStarted``, then what the part has read,
    set aside, embedded and batched so far. ``documents`` is the host's count of documents
    prepared (``BatchDone.documents``), ahead of the batches written; the shard's report
    has the exact figures once it ends.
    """

    name: ClassVar[str] = "shard-progress"
    contract_version: ClassVar[str] = "1.6"

    def __init__(self) -> None:
        super().__init__(ComponentConfig())
        self.counts: RunCounts | None = None

    @property
    def observes(self) -> tuple[type[Any], ...]:
        return (RunStarted, BatchDone, DocumentFailed)

    def forget(self) -> None:
        """A new shard begins: nothing is known of it until its ``RunStarted``."""
        self.counts = None

    def observe(self, event: Event) -> None:
        counts = self.counts
        if isinstance(event, RunStarted):
            self.counts = RunCounts()
        elif counts is None:
            return
        elif isinstance(event, BatchDone):
            done = RunCounts(
                documents=event.documents,
                failed_documents=counts.failed_documents,
                skipped_documents=counts.skipped_documents,
                examples=counts.examples + event.examples,
                tokens=counts.tokens + event.tokens,
                batches=counts.batches + 1,
            )
            self.counts = _with_read(done)
        elif isinstance(event, DocumentFailed):
            set_aside = (
                RunCounts(skipped_documents=1)
                if event.stage == "skip"
                else RunCounts(failed_documents=1)
            )
            self.counts = _with_read(counts + set_aside)


def _with_read(counts: RunCounts) -> RunCounts:
    """``counts`` with ``read`` made what the rest accounts for (every item is one of them)."""
    read = counts.documents + counts.failed_documents + counts.skipped_documents
    return counts + RunCounts(read=read - counts.read)
