"""The host side of a run: loaded items in, collated batches out.

:func:`timed_reads` reads a loader through its seam; :class:`HostWork` does the rest.

Everything a run does before the device: ``prepare`` each document through the
model's seam (a document it fails on is set aside, not raised), put its examples
into few batch shapes — packed several to a row when the model allows it, else one
per row (:mod:`seamline.core.batching`) — and ``collate`` each planned batch, with
the text of every example's span beside it for the sink. Every ``checkpoint_every``
items the partly filled batches are flushed and a :class:`Checkpoint` follows them,
so a commit made when the consumer reaches it covers everything read up to its
cursor.

One implementation serves every caller that turns text into batches: the
orchestrator (in its producer thread), the benchmarks that time the model without
the orchestrator, and whoever embeds text in-process. None of them re-derives
bucketing or packing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from seamline.contracts import (
    Batch,
    ContractViolation,
    Document,
    DocumentError,
    Example,
    Loaded,
    Loader,
    Model,
    RunCounts,
    Shard,
)
from seamline.contracts.logs import get_logger
from seamline.contracts.seams import check_batch, check_examples, check_loaded
from seamline.contracts.untrusted import for_telemetry, unicode_problem
from seamline.core.batching import BatchShapes, Bucketer, Packer, Planned
from seamline.core.repeated_ids import YieldedIds
from seamline.core.seams import Seam
from seamline.core.stops import is_interrupt
from seamline.core.telemetry import THREAD_NAME

log = get_logger("seamline.core")

_READ = RunCounts(read=1)
_PREPARED = RunCounts(documents=1)


@dataclass(frozen=True, slots=True)
class Collated:
    """A batch, with the text of each example's span (``batch.examples`` order).

    The texts travel beside the batch rather than inside the examples: an
    :class:`Example` is the model's data, and the text is the sink's (records carry it,
    sink contract 1.2).
    """

    batch: Batch
    texts: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class SetAside:
    """A loaded item that makes no batch: the error, and the stage that set it aside."""

    error: DocumentError
    stage: str
    """``load`` (the loader's error record), ``prepare``, or ``skip`` (a rule)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Everything loaded up to ``cursor`` has been yielded before this.

    ``host`` is what the host work had counted by then (items read, documents
    prepared): it runs ahead of the consumer, which cannot read it at commit time.
    """

    cursor: str
    host: RunCounts


def batcher_for(model: Model[Any], shapes: BatchShapes, packing: bool) -> Bucketer | Packer:
    """Packed rows when ``packing`` is allowed and the model can pack; else one per row."""
    if packing and any(model.packing(length) > 1 for length in shapes.buckets):
        return Packer(shapes, model.packing)
    return Bucketer(shapes)


class HostWork:
    """Turns loaded items into batches for one model and one set of batch shapes.

    ``seam`` is the model's :class:`Seam`: every ``prepare`` crosses it (span,
    timing, monitors). A benchmark that times the bare model passes None. ``counts``
    holds what this host work has read and prepared; it is written by whichever
    thread iterates :meth:`batches` and read by others as a whole value.
    """

    def __init__(
        self,
        model: Model[Any],
        shapes: BatchShapes,
        *,
        seam: Seam | None = None,
        packing: bool = True,
        checkpoint_every: int = 0,
        max_windows: int | None = None,
    ) -> None:
        self.model = model
        self.seam = seam
        self.max_windows = max_windows
        """Keep only a document's first windows (``prepare``'s first examples): 1 embeds a
        text truncated to the model's window, as sentence-transformers does."""
        self.batcher = batcher_for(model, shapes, packing)
        self.checkpoint_every = checkpoint_every
        self.counts = RunCounts()
        self._texts: dict[int, str] = {}
        """The span text of each example waiting in the batcher, by ``id()`` of the example
        object (alive there until it is collated)."""
        self.held: list[Example] = []
        """The examples of the partly filled batches :meth:`batches` held back at the end."""

    def batches(
        self,
        items: Iterable[Loaded],
        hold: Callable[[Sequence[Example]], bool] | None = None,
    ) -> Iterator[Collated | SetAside | Checkpoint]:
        """Batches, set-aside items and checkpoints for ``items``, in order; flushed at the end.

        ``hold``: a partly filled batch of the end's flush whose examples it returns True
        for is not collated; its examples are kept in :attr:`held` instead. An embedder's
        pass over a part of a large request holds its part's last batches so, and puts
        their texts back for the next pass: the request is batched as one pass would
        batch it, not with a partly filled batch (a shape to compile) per pass.
        """
        thread = {THREAD_NAME: threading.current_thread().name}
        every = self.checkpoint_every
        batcher = self.batcher
        for count, loaded in enumerate(items, start=1):
            yield from self._item(loaded, thread)
            if every and count % every == 0:
                # The partly filled batches go out padded: the price of a checkpoint.
                yield from map(self._collate, batcher.flush())
                yield Checkpoint(loaded.cursor, self.counts)
        for planned in batcher.flush():
            if planned.partial and hold is not None and hold(planned.examples):
                self.held.extend(planned.examples)
                for example in planned.examples:
                    self._texts.pop(id(example), None)
            else:
                yield self._collate(planned)

    def _item(self, loaded: Loaded, thread: dict[str, Any]) -> Iterator[Collated | SetAside]:
        """One loaded item: set aside, or prepared into examples and batched.

        A document set aside here carries the loader's ``cursor`` in its metadata: with
        it, a user finds the input again (a jsonl line number, a file's path) to re-run.
        """
        item = loaded.item
        self.counts += _READ
        if isinstance(item, DocumentError):
            yield SetAside(item, item.stage)  # "load", or "skip" for a loader's rule
            return
        examples = self._prepare(item, thread)
        where = {**item.metadata, "cursor": loaded.cursor}
        if isinstance(examples, DocumentError):
            yield SetAside(replace(examples, metadata=where), "prepare")
            return
        if not examples:
            yield SetAside(
                DocumentError(item.id, "the model made no examples of it", where), "skip"
            )
            return
        self.counts += _PREPARED
        for example in examples:
            if item.metadata:  # records carry their document's metadata (path, source...)
                example = replace(example, metadata={**item.metadata, **example.metadata})
            start, end = example.span
            self._texts[id(example)] = item.text[start:end]  # records carry it too
            yield from map(self._collate, self.batcher.add(example))

    def _prepare(self, document: Document, thread: dict[str, Any]) -> list[Example] | DocumentError:
        """The document's examples; a document ``prepare`` fails on is set aside, not raised.

        Whatever ``prepare`` raises but an interrupt (:func:`~.stops.is_interrupt`) sets it
        aside: a Rust library's panic too (a tokenizer's), a ``BaseException`` that is no
        ``Exception``, which ended the run with its traceback."""
        model = self.model
        try:
            if self.seam is None:
                examples = list(model.prepare(document))
            else:
                attributes = {**thread, "seamline.document.id": for_telemetry(document.id)}
                with self.seam.call("prepare", attributes):
                    examples = list(model.prepare(document))
        except ContractViolation:
            raise
        except BaseException as err:  # the span recorded it; the run goes on
            if is_interrupt(err):  # Ctrl-C, sys.exit(): the run stops
                raise
            # A lone surrogate fails in the tokenizer with a message about its types: say
            # what is wrong with the text instead (looked for only once prepare failed).
            reason = unicode_problem(document.text) or (
                f"prepare failed: {type(err).__name__}: {err}"
            )
            return DocumentError(document.id, reason, document.metadata)
        with self._blamed("prepare"):
            check_examples(model.name, examples, model.max_length, document.text)
        return examples if self.max_windows is None else examples[: self.max_windows]

    def _blamed(self, operation: str) -> AbstractContextManager[None]:
        """Around a check of what the model's ``operation`` gave: a failure names the model
        and its distribution (:meth:`Seam.blamed`), not "the pipeline"."""
        return nullcontext() if self.seam is None else self.seam.blamed(operation)

    def _collate(self, planned: Planned) -> Collated:
        model = self.model
        if planned.placement is None:  # as every model before contract 1.2 is called
            batch = model.collate(planned.examples, planned.rows, planned.length)
        else:
            batch = model.collate(planned.examples, planned.rows, planned.length, planned.placement)
        with self._blamed("collate"):
            check_batch(model.name, batch, planned.rows, planned.length)
        return Collated(batch, self._span_texts(planned.examples, batch.examples))

    def _span_texts(
        self, planned: Sequence[Example], collated: Sequence[Example]
    ) -> tuple[str | None, ...]:
        """The texts of ``collated``'s examples, taken out of the waiting texts.

        ``collate`` returns the examples it was given; a model that returns equal copies
        instead is matched by document, window and span.
        """
        texts = {id(example): self._texts.pop(id(example), None) for example in planned}
        if all(id(example) in texts for example in collated):
            return tuple(texts[id(example)] for example in collated)
        by_key = {(e.doc_id, e.index, e.span): texts[id(e)] for e in planned}
        return tuple(by_key.get((e.doc_id, e.index, e.span)) for e in collated)


def documents_as_loaded(documents: Iterable[Document]) -> Iterator[Loaded]:
    """Documents not read by a loader, as loaded items (their cursor is their id)."""
    for document in documents:
        yield Loaded(document.id, document)


def repeat_set_aside(document: Document, cursor: str, seam: Seam) -> DocumentError:
    """The error record of a document whose id an earlier document of the read had.

    It names the loader and its distribution (whose promise of unique ids this breaks)
    and the cursor the loader gave the repeat, so that it can be found in the input.
    The id stays the document's (not a place: the first document of that id was read).
    """
    info = seam.info
    origin = f" (from {info.distribution} {info.version})" if info is not None else ""
    reason = (
        f"loader {seam.name!r}{origin} yielded id {document.id!r} again (at cursor "
        f"{cursor!r}) after an earlier document of this run; ids must be unique, so the "
        "repeat is set aside: give each document its own id, or have the loader yield a "
        "DocumentError for a repeat"
    )
    return DocumentError(document.id, reason, {**document.metadata, "cursor": cursor})


def timed_reads(
    loader: Loader[Any], seam: Seam, shard: Shard, after: str | None, chunk: int
) -> Iterator[Loaded]:
    """The loader's checked items, its time in the loader reported per ``chunk`` of items.

    A span per document read would cost more than many loaders' reads, so reads are
    timed per item and reported through the loader's seam per chunk of items (one
    ``seamline.loader.read`` span with ``seamline.loader.items``, one ``SeamCall``).
    Reads interleave with ``prepare``, so a chunk's span starts when its first item is
    asked for and lasts as long as the loader took for the chunk's items together: the
    sum of the reads, not a wall-clock interval.

    A document whose id an earlier document of this read had becomes an error record
    naming the loader (:func:`repeat_set_aside`): a loader's repeat is never two rows.
    """
    seen, warned = YieldedIds(), False
    attributes = {THREAD_NAME: threading.current_thread().name}  # the reading thread
    clock = time.perf_counter_ns
    reader: Iterator[Loaded] | None = None
    items = spent = first = 0

    def report(error: BaseException | None = None) -> None:
        seam.record("read", first, spent, {**attributes, "seamline.loader.items": items}, error)

    try:
        while True:
            if items == 0:
                first = time.time_ns()
            started = clock()
            try:
                if reader is None:
                    reader = iter(loader.read(shard=shard, after=after))
                loaded = check_loaded(loader.name, next(reader))
            except StopIteration:
                spent += clock() - started
                report()
                return
            except BaseException as err:
                spent += clock() - started
                report(err)
                raise
            spent += clock() - started
            items += 1
            if items == chunk:
                report()
                items = spent = 0
            item = loaded.item
            if isinstance(item, Document) and not seen.add(item.id):
                repeat = repeat_set_aside(item, loaded.cursor, seam)
                if not warned:  # once: the errors file lists every repeat
                    warned = True
                    log.warning(f"{repeat.reason} (each later repeat too: see the errors file)")
                loaded = Loaded(loaded.cursor, repeat)
            yield loaded
    finally:  # closed early (a stop): the loader's own finally runs now, in this thread
        close = getattr(reader, "close", None)
        if callable(close):
            close()
