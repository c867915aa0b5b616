"""``PublishingSink``: the write lifecycle of a sink that publishes its output whole, once.

Every first-party sink, and a third party's built on this kit, goes through the same
steps, as a Ray Data ``Datasink`` goes through ``on_write_start`` / ``write`` /
``on_write_complete`` / ``on_write_failed``; the template owns them, so that each is
written (and fixed) once:

- ``start`` / ``recover``: take the destination's lock (one run per destination: a
  second run refuses, naming the holder; :mod:`._lock`), then begin afresh or restore
  the last commit from the checkpoint, read as untrusted input (:mod:`._checkpoint`);
- ``write_error``: the errors file, one JSON object per document set aside;
- ``commit``: the partial files made durable, then the checkpoint replaced;
- ``close(complete=True)``: the manifest, the errors file and the primary output
  published in that order (:mod:`._atomic`), the staged runs it replaces removed;
  ``close(complete=False)`` keeps what was committed, for ``--resume``; after a
  refused lock or resume, ``close`` touches nothing;
- staged parts (sink contract 1.3), in :class:`~._staged.StagedParts`.

A sink fills in small hooks: :meth:`~PublishingSink.write_rows` (required), and, for
one that keeps rows outside the byte-stream files (a Parquet file of parts, a table),
:meth:`~PublishingSink.commit_rows`, :meth:`~PublishingSink.restore`,
:meth:`~PublishingSink.reset`, :meth:`~PublishingSink.finish`,
:meth:`~PublishingSink.published` and :meth:`~PublishingSink.abandon_rows`, with a
hidden folder of its own beside the output to keep them in (:attr:`~PublishingSink.store`).
"""

from __future__ import annotations

import abc
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from seamline.contracts.documents import DocumentError
from seamline.contracts.errors import UserError
from seamline.contracts.sink import CommittedRecords, OutputRecord, Sink
from seamline.contracts.sink_kit._atomic import (
    AtomicFile,
    own_directory,
    refuse_anything_planted,
    refuse_unless_yours,
)
from seamline.contracts.sink_kit._checkpoint import (
    NoState,
    ResumableGroup,
    SinkState,
    manifest_bytes,
    partial_path,
    refuse_blocked,
    warn_discarding,
)
from seamline.contracts.sink_kit._config import OutputConfig
from seamline.contracts.sink_kit._lock import DestinationLock
from seamline.contracts.sink_kit._neighbour import describes, refuse_another_output
from seamline.contracts.sink_kit._parts import (
    published_run_id,
    read_published_manifest,
    remove_tree,
    staging_root,
)
from seamline.contracts.sink_kit._records import default_manifest_path, error_line
from seamline.contracts.sink_kit._staged import StagedParts

ConfigT = TypeVar("ConfigT", bound=OutputConfig)


class PublishingSink(StagedParts[ConfigT], Sink[ConfigT], Generic[ConfigT]):
    """A resumable, stageable sink of ``path``, its errors file and its manifest.

    Subclass it with an :class:`OutputConfig` subclass as ``Config``, and implement
    :meth:`write_rows`; the byte-stream files are the errors file and those :meth:`streams`
    names (by default the primary file at ``path``), created on first use under hidden
    names, cut back to the last commit on a resume, and published in order, primary last."""

    resumable: ClassVar[bool] = True
    stageable: ClassVar[bool] = True
    State: ClassVar[type[SinkState]] = NoState
    """What the checkpoint records beyond the files' lengths (the sink's own schema)."""
    primary: ClassVar[str] = "records"
    """The purpose of ``path`` in the manifest's ``outputs.files``."""
    appends_primary: ClassVar[bool] = True
    """Whether ``path`` is a byte stream this template writes (appended to, cut back on a
    resume); False: the sink writes, recovers and publishes it itself (:meth:`finish`)."""
    line_streams: ClassVar[frozenset[str]] = frozenset()
    """The :meth:`streams` of one record a line (as the errors file): a resume cuts them only
    after a newline, and counts their records. Others a sink checks in :meth:`restore`."""
    digested_streams: ClassVar[frozenset[str]] = frozenset()
    """The :meth:`streams` a reader pairs row by row: the manifest keeps their sha256."""

    def __init__(self, config: ConfigT) -> None:
        super().__init__(config)
        own = None if self.appends_primary else (self.primary, config.path)
        files = [("errors", config.resolved_errors_path()), *self.streams()]
        # Files are created on first use, so building a sink (to validate a pipeline, say)
        # leaves no trace on disk.
        self._group: ResumableGroup[Any] = ResumableGroup(
            self.name,
            config.manifest_path(),
            files,
            state=self.State,
            primary=own,
            lines={"errors", *self.line_streams},
            digested=self.digested_streams,
        )
        self._group.details = dict(self.output_details())
        self.store = partial_path(config.path)
        """A hidden folder of the sink's own beside the output, for rows kept outside the
        files (``out/.emb.parquet.partial.tmp``): see :meth:`make_store`."""
        self._closed = False
        self._destination_lock: DestinationLock | None = None
        self._recover_refused = False
        """Set when :meth:`recover` or a check raised: the output is left as it was found."""

    # -- hooks ---------------------------------------------------------------------------

    def streams(self) -> list[tuple[str, Path]]:
        """The byte-stream files besides the errors file, ``(purpose, path)``, primary last."""
        return [(self.primary, self.config.path)] if self.appends_primary else []

    @abc.abstractmethod
    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        """Write a non-empty batch of records (``files``: the partial files by purpose)."""

    def commit_rows(self) -> SinkState:
        """Make the rows held outside the files durable; what the checkpoint records."""
        return self.State()

    def restore(self, state: Any) -> None:
        """A resume: take up the rows a commit recorded in ``state`` (of :attr:`State`).

        Whatever it raises refuses the resume, and ``close`` then leaves every file as it
        was found (the refusal says to restore what changed, and resume again)."""

    def reset(self) -> None:
        """Forget rows an interrupted run kept outside the files (a start over, no commit)."""

    def undo_publication(self) -> None:
        """Before a run: undo a publication that a run which died while publishing left half
        done (a rename cannot be half done: only a sink that publishes otherwise has one)."""

    def finish(self) -> Sequence[AtomicFile]:
        """Before publishing: put the rows where they are published; files to publish last."""
        return ()

    def published(self) -> None:
        """After publishing: tidy what the sink kept beside the output."""

    def abandon_rows(self) -> None:
        """A failed run: keep the committed rows for a resume, drop the rest."""

    def committed_outputs(self) -> int | None:
        """After a resume: the records up to the commit; None: not counted. The default
        counts the primary file's lines, when it is one of :attr:`line_streams`."""
        lines = self.appends_primary and self.primary in self.line_streams
        return self._group.recovered_lines()[self.primary] if lines else None

    def output_details(self) -> Mapping[str, Any]:
        """More for the manifest's ``outputs`` than the sink and its files (settings a
        reader applies)."""
        return {}

    def check_destination(self) -> None:
        """Before the run's work (``start``, ``recover``, ``begin_parts``): refuse a ``path``
        that can never be this sink's output, so the run fails at once rather than at its
        end, when it publishes (:meth:`OutputConfig.occupied`: a directory where a file is
        published; for a sink whose output is a folder, ``Config.path_is_folder``,
        anything at its name but a folder, a symbolic link included: the output is never
        written through a link, which could point anywhere). The pipeline's validation
        asks the same first. Another user's staging folder too (:func:`_not_yours`)."""
        for _, problem in self.config.occupied():
            raise UserError(f"{self.name} sink: {problem}")
        _not_yours(self.store, self.config.path)
        manifest = self.config.manifest_path()
        own = {manifest, self.config.resolved_errors_path()}
        refuse_another_output(manifest, self.name, self.primary, self.destination, own)

    # -- the run -------------------------------------------------------------------------

    def start(self, manifest: Mapping[str, Any]) -> None:
        self._lock()  # one run per destination: refuse before touching anything
        self._recover_refused = True  # until it passes: close leaves what was refused alone
        self.check_destination()
        self._recover_refused = False
        self._group.manifest = manifest
        self.undo_publication()
        warn_discarding(self._group)  # what an interrupted run committed: said, not silent
        self._group.clear()  # a fresh run: forget what an interrupted one left behind
        self.reset()

    def begin_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        self.check_destination()  # a staged run's shards embed nothing for a bad path
        super().begin_parts(run_id, count, manifest)

    def recover(self, manifest: Mapping[str, Any]) -> str | None:
        """Lock the output, then restore its last commit (or start over without one)."""
        self._lock()
        try:
            self.check_destination()
            self._group.manifest = manifest
            self.undo_publication()
            recovered = self._group.recover(manifest)
            if recovered is None:
                self.reset()
                return None
            cursor, state = recovered
            self.restore(state)
            return cursor
        except BaseException:
            self._recover_refused = True
            self._group.abandon()  # the files a checkpoint names stay as they were
            raise

    def committed_records(self) -> CommittedRecords | None:
        """What the recovered output holds: its records, and its errors file's lines."""
        errors = self._group.recovered_lines()["errors"]
        return CommittedRecords(str(self._group.checkpoint), self.committed_outputs(), errors)

    def write(self, records: Sequence[OutputRecord]) -> None:
        files = self.open_files()
        if records:
            self.write_rows(records, files)

    def write_error(self, error: DocumentError) -> None:
        self.open_files()["errors"].write_json_line(error_line(error))

    def commit(self, cursor: str) -> None:
        self.open_files()
        self._group.commit(cursor, self.commit_rows())

    def close(self, complete: bool = True) -> None:
        if self._closed:
            return
        try:
            if self.untouchable:  # another run owns the destination, or a resume was refused
                return
            if complete:
                self.open_files()
                _publish(self)  # errors, ..., primary, the manifest last
                if not self.is_part:  # the staged runs at the destination are of no more use
                    remove_tree(staging_root(self.config.path))
                self.published()
            else:
                self.abandon_rows()
                self._group.abandon()
        finally:
            self._closed = True
            self._unlock()

    def open_files(self) -> dict[str, AtomicFile]:
        """The partial files by purpose, created on first use; refused after ``close``."""
        if self._closed:
            raise RuntimeError(f"{self.name} sink: write after close")
        return self._group.open()

    @property
    def untouchable(self) -> bool:
        """Whether ``close`` must leave the output alone: another run holds it, or this one's
        resume was refused."""
        lock = self._destination_lock
        return (lock is not None and lock.refused) or self._recover_refused

    def _lock(self) -> None:
        """On a part: wait for, then hold, the part's lock. On a whole output: take the
        destination's lock, or refuse at once when another run holds it."""
        if self._part_lock is not None:
            self._part_lock.acquire()
            return
        if self._destination_lock is None:
            self._destination_lock = DestinationLock(self.name, self.config.published_names())
        self._destination_lock.acquire()

    def _unlock(self) -> None:
        if self._part_lock is not None:
            self._part_lock.release()
        if self._destination_lock is not None:
            self._destination_lock.release()

    # -- for sinks that keep rows outside the files --------------------------------------

    @property
    def manifest(self) -> Mapping[str, Any]:
        """The run's manifest (from ``start`` or ``recover``; a staged run's, publishing it)."""
        return self._group.manifest

    @manifest.setter
    def manifest(self, manifest: Mapping[str, Any]) -> None:
        self._group.manifest = manifest

    @property
    def committed(self) -> bool:
        """Whether a checkpoint of this output is on disk (made or recovered here)."""
        return self._group.committed

    def manifest_for(self, run_id: str | None = None) -> dict[str, Any]:
        """The manifest as published, ``outputs`` included (``run_id``: of a staged run)."""
        outputs = self._group.outputs() | ({"run_id": run_id} if run_id else {})
        return {**self._group.manifest, "outputs": outputs}

    def manifest_file(self, run_id: str | None = None) -> AtomicFile:
        """The manifest (:meth:`manifest_for`) written to its unpublished file."""
        written = AtomicFile(self._group.manifest_path, purpose="manifest")
        written.write(manifest_bytes(self.manifest_for(run_id)))
        return written

    def record_in_checkpoint(self, **fields: Any) -> None:
        """Set ``fields`` of the checkpoint's state, what it covers unchanged: what the sink
        is about to do that a crash must undo (see :meth:`undo_publication`)."""
        self._group.annotate(**fields)

    def recorded_state(self) -> Any:
        """The state of the checkpoint on disk (of :attr:`State`), or None (none, or invalid)."""
        return self._group.recorded_state()

    def forget_run(self) -> None:
        """Delete the checkpoint and the partial files of an unfinished run."""
        self._group.clear()

    def describes_this_output(self, manifest: Mapping[str, Any]) -> bool | None:
        """Whether a published ``manifest`` (read as untrusted) is this output's own; None
        when it lists no outputs (written before manifests did: not judged)."""
        outputs = manifest.get("outputs")
        if not isinstance(outputs, dict):
            return None
        return describes(outputs, self.name, self.primary, self.destination)

    def published_manifest(self) -> dict[str, Any] | None:
        """The manifest published at the destination, read as untrusted (None: none readable)."""
        return read_published_manifest(default_manifest_path(self.destination))

    def published_changes(self, run_id: str) -> Mapping[str, int] | None:
        """The published manifest's ``outputs.changes`` if that manifest is run ``run_id``'s:
        counts of documents by kind, each a non-negative integer (else None: read as
        untrusted, a manifest anyone could have edited)."""
        manifest = self.published_manifest() or {}
        outputs = manifest.get("outputs")
        changes = outputs.get("changes") if isinstance(outputs, dict) else None
        if manifest.get("run_id") != run_id or not isinstance(changes, dict):
            return None
        counts = {k: v for k, v in changes.items() if isinstance(k, str) and type(v) is int}
        if len(counts) != len(changes) or any(v < 0 for v in counts.values()):
            return None
        return counts

    def published_run(self) -> str | None:
        """The staged run the published manifest names, if a plain run id (else None)."""
        return published_run_id(default_manifest_path(self.destination))

    def make_store(self) -> Path:
        """:attr:`store`, made if missing: a folder of this process's, never a planted link."""
        own_directory(self.store)
        return self.store

    def resumed_store(self, what: str) -> Path:
        """:attr:`store` on a resume, refused if planted (link, FIFO, another user's)."""
        refuse_anything_planted(self.store, what)
        return self.store

    def drop_store(self) -> None:
        """Delete :attr:`store` and what it holds (a link there is not followed)."""
        shutil.rmtree(self.store, ignore_errors=True)

    def staging_targets(self) -> tuple[Path, list[tuple[str, Path]]]:
        targets = list(self._group.targets)
        if not self.appends_primary:
            targets.append((self.primary, self.config.path))
        return self._group.manifest_path, targets


def _not_yours(store: Path, path: Path) -> None:
    """Refuse a sink's staging folder ``store``, or the staging area of parts of ``path``,
    that another user made (in a shared folder, to read and swap what a run stages there),
    before any work. One of the user's own that others can write is not refused here: a
    fresh run deletes it and makes it again, private (:func:`._atomic.own_directory`)."""
    refuse_unless_yours(store, "staging folder", only_owner=True)
    refuse_unless_yours(staging_root(path), "staging area", only_owner=True)


def _publish(sink: PublishingSink[Any]) -> None:
    """Publish ``sink``'s files, the ones :meth:`PublishingSink.finish` makes included.

    A folder in the way of any file is refused first, before ``finish`` makes a file or
    changes anything (the lancedb sink's table), naming it (:func:`refuse_blocked`).
    """
    folder = sink.config.path_is_folder or sink.is_part  # a part: in a folder of its own
    last = [] if folder else [(sink.primary, sink.config.path)]
    refuse_blocked(sink._group, last)
    sink._group.publish(sink.finish())
