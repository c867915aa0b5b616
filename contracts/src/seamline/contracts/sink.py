"""The sink seam: where outputs go, published atomically."""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import DocumentError, Shard
from seamline.contracts.versions import Kind

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from seamline.contracts.readback import OutputReader


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """The output for one example: which document, which part of it, and the vector.

    ``text`` (sink contract 1.2) is the part of the document's text the example
    covers, ``document.text[span[0]:span[1]]``. The orchestrator fills it in so that
    a sink can store what each vector stands for (a full-text index, a snippet in
    search results) whatever the loader, not only for documents that name a file.
    It is None where nobody provided it (records made by hand, an older host).
    """

    doc_id: str
    index: int
    span: tuple[int, int]
    vector: npt.NDArray[np.floating[Any]]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    text: str | None = None


@dataclass(frozen=True, slots=True)
class StagedRun:
    """A run whose shards stage their parts at a sink's destination, not yet published."""

    run_id: str
    count: int
    """How many shards the run was split into."""
    finished: frozenset[int] = frozenset()
    """The indexes of the shards whose part is complete."""


SinkConfigT = TypeVar("SinkConfigT", bound=ComponentConfig)


@dataclass(frozen=True, slots=True)
class CommittedRecords:
    """What a resumable sink's recovered output holds, counted from the output itself.

    The host compares it with the counts the commit carries (``examples`` with
    ``outputs``; ``failed_documents + skipped_documents`` with ``set_aside``) and refuses a
    resume where they differ: the output and its commit no longer describe each other.
    """

    checkpoint: str
    """Where the commit is kept (the checkpoint file), as a refusal names it."""
    outputs: int | None = None
    """Output records (one per window) up to the commit; None when not cheap to count."""
    set_aside: int | None = None
    """Error records (documents set aside) up to the commit; None when not counted."""


class Sink(Component[SinkConfigT], abc.ABC):
    """Receives records and errors; what it writes becomes visible all at once.

    Until ``close(complete=True)`` nothing is visible under the final name, so a
    reader never sees a half-written output. ``close(complete=False)`` (a failed
    run) must not publish.

    Since contract 1.1 a sink may also be *resumable*: the orchestrator calls
    :meth:`commit` now and then with the loader cursor reached, and a later run
    started with ``resume`` calls :meth:`recover` instead of :meth:`start` and reads
    on from the cursor it returns. Together they give exactly-once output across a
    crash (the process dying between a write and the next commit, with no
    ``close`` at all): what was written after the last commit is discarded and
    written again. On a resumable sink:

    - ``start()`` begins a fresh run: it discards any stale partial state that an
      earlier run with the same destination left behind;
    - ``close(complete=False)`` publishes nothing but keeps the committed state,
      so the run can still be resumed;
    - ``close(complete=True)`` publishes and removes the checkpoint state.

    Only one run at a time may write to one destination.

    Since contract 1.2 each record carries the text of its span
    (:attr:`OutputRecord.text`); a sink written for 1.2 may rely on it.

    Since contract 1.3 a resumable sink may also *stage* (``stageable = True``): a
    run split into shards, each on its own worker, writes every shard's part
    through a sink of its own (:meth:`part`) into a staging area beside the
    destination, with the usual commits; the driver publishes all the parts at once
    under one manifest (:meth:`publish_parts`) when every part is finished. Nothing
    is visible under the output's names before that.

    Since contract 1.4 a sink says how its published output is read back: its
    :attr:`reader` (see :mod:`seamline.contracts.readback`), which ``seamline search``
    finds through the registry by the name the output's manifest gives the sink.

    Since contract 1.6 a stageable sink can hold its destination for the driver of a
    staged run (:meth:`hold_destination`), so that "one run at a time" holds for a
    run split into shards too.
    """

    kind: ClassVar[Kind] = "sink"
    resumable: ClassVar[bool] = False
    """Whether this sink implements :meth:`commit` and :meth:`recover`, so that an
    interrupted run can be continued. A sink that leaves it False is never committed,
    and resuming a run that writes to it is refused."""
    stageable: ClassVar[bool] = False
    """Whether this sink implements :meth:`begin_parts`, :meth:`part`,
    :meth:`staged_run` and :meth:`publish_parts` (contract 1.3), so a run can be split
    into shards that write in parallel. A stageable sink must be resumable."""
    reader: ClassVar[type[OutputReader] | None] = None
    """How this sink's published output is read back (contract 1.4), or None: readers
    (``seamline search``) then refuse its output, saying so."""

    def start(self, manifest: Mapping[str, Any]) -> None:
        """Receive the run's manifest (pipeline, model and its config, versions) before any write.

        A sink that keeps it beside its output lets readers (``seamline search``)
        rebuild the model that made the vectors. The default ignores it.

        The host may complete the mapping it hands ``start`` or :meth:`recover` before
        ``close(complete=True)``: a resumed run's ``run_id`` and ``resumed``, learnt from
        the commit :meth:`recover` returns. A sink that publishes the manifest reads the
        mapping when it publishes (one that copied it at start publishes what it was then).
        """

    @abc.abstractmethod
    def write(self, records: Sequence[OutputRecord]) -> None:
        """Accept a batch of records, in order."""

    @abc.abstractmethod
    def write_error(self, error: DocumentError) -> None:
        """Keep the record of a document that was set aside."""

    @abc.abstractmethod
    def close(self, complete: bool = True) -> None:
        """Publish everything written (``complete``) or discard it.

        A resumable sink keeps its committed state on ``complete=False`` (and still
        publishes nothing); ``complete=True`` publishes and removes that state.
        """

    def commit(self, cursor: str) -> None:
        """Make every record and error written so far durable, together with ``cursor``.

        ``cursor`` is an opaque string that stands for the last loaded item whose
        outputs have all been written (the host packs the :attr:`Loaded.cursor` and the
        counts so far into it); :meth:`recover` returns it unchanged, and a resumed run
        reads on right after that item. When
        this returns, a crash at any later point loses nothing before the cursor. A
        commit publishes nothing: no file appears under the final names. Called only
        on a resumable sink; the default does nothing.
        """

    def recover(self, manifest: Mapping[str, Any]) -> str | None:
        """Continue an interrupted run: called *instead of* :meth:`start` when resuming.

        Restore the state of the last :meth:`commit` (discarding anything written
        after it, so nothing is output twice) and return its cursor; return None when
        nothing was committed, and the run starts from the beginning with an empty
        output. ``manifest`` is the resumed run's manifest, as :meth:`start` gets it.
        Called only on a resumable sink; the default returns None.
        """
        return None

    def committed_records(self) -> CommittedRecords | None:
        """After :meth:`recover` returned a commit: what the output holds up to it, counted.

        Optional (contract 1.5): the default, None, says the sink cannot tell. A sink that can count
        cheaply (lines, a row count it recorded) lets the host check the commit's counts
        against the output, and name the checkpoint in a refusal.
        """
        return None

    def published_changes(self, run_id: str) -> Mapping[str, int] | None:
        """What publishing run ``run_id`` changed in the output, in documents by kind (the
        lancedb sink's ``mode: sync``: added, replaced, unchanged, deleted, kept), as the
        sink measured it; None when it does not measure it, or the output published now is
        not that run's. Asked after the run, on a fresh instance; the default returns None.
        Keys that count what the output keeps besides (the lancedb sink's, without
        ``prune``): ``older_versions`` and ``older_versions_bytes``, the bytes only they use,
        and ``older_versions_masked_rows``, rows the newest version masks in its files,
        which pruning frees too (the bytes are then a lower bound); the host moves them out
        of the documents (``RunSummary.older_versions``).
        """
        return None

    def published_problem(self, run_id: str) -> str | None:
        """What publishing run ``run_id`` left undone that its user must see to, in one
        message naming the fix (the lancedb sink's: an index that failed to build, older
        versions that outlived ``prune``); None when nothing is, or the output published
        now is not that run's.

        Asked after the run, on a fresh instance, after :meth:`published_changes`: the
        output stands, so the run reports what it did (its summary) and then fails with
        this (a ``UserError``, exit code 2). A sink that raised it from ``close`` instead
        lost the summary, and with it counts measured only then. The default returns None.
        """
        return None

    # -- staged parts (contract 1.3, stageable sinks) -------------------------------------

    def begin_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Open the staging area of run ``run_id``, split into ``count`` parts (driver side).

        Discards whatever an earlier, unpublished staged run left at this destination;
        a published output stays readable until :meth:`publish_parts` replaces it.
        """
        raise NotImplementedError(f"sink {self.name!r} cannot stage parts")

    def staged_run(self, manifest: Mapping[str, Any]) -> StagedRun | None:
        """The unpublished staged run at this destination (to resume it), or None.

        Raises a ``UserError`` when that run was made by another model configuration
        (``manifest`` is the resuming run's).
        """
        raise NotImplementedError(f"sink {self.name!r} cannot stage parts")

    def part(self, run_id: str, shard: Shard) -> Sink[Any]:
        """A sink for ``shard``'s part of run ``run_id``, in the run's staging area.

        The part is a resumable sink of its own: ``recover`` it (a part with nothing
        committed starts empty), write, ``commit``, and ``close(complete=True)``
        *finishes* the part inside the staging area; nothing becomes visible under
        the output's names. A part that is already finished says so in
        :meth:`finished`; recovering it again is an error.
        """
        raise NotImplementedError(f"sink {self.name!r} cannot stage parts")

    def finished(self) -> bool:
        """For a part: whether it is complete (closed with ``complete=True`` by some process)."""
        return False

    def hold_destination(self) -> AbstractContextManager[None]:
        """Hold the destination for the driver of a staged run (contract 1.6).

        The driver enters it before :meth:`staged_run` or :meth:`begin_parts` and leaves
        it once :meth:`publish_parts` has returned or the run has failed. Meanwhile
        another run writing this destination (or a file its output is published under)
        must be refused, as :meth:`start` refuses a second writer, and this one must be
        refused, raising a ``UserError``, while another run holds it. The parts' sinks
        (:meth:`part`) do not take it. The default holds nothing: two runs could then
        stage into one destination at once, each publishing over the other.
        """
        return contextlib.nullcontext()

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Publish every part of run ``run_id`` together, under one manifest, atomically.

        Every part must be finished (a ``ContractViolation`` otherwise: the host
        asked too early). A reader sees the previous output or this one, never a mix.
        """
        raise NotImplementedError(f"sink {self.name!r} cannot stage parts")
