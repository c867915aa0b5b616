"""``lancedb``: the outputs as rows of an embedded LanceDB table, searchable with an index.

``path`` is the table's folder, ``<database>/<table>.lance``: the database is the
folder it lies in, opened in-process with ``lancedb.connect`` (no server). Rows
have the layout of :mod:`._columns`. The lifecycle (lock, checkpoint, errors file,
publication, staged parts) is the sink kit's
(:class:`~seamline.contracts.sink_kit.PublishingSink`); what LanceDB does is in
:mod:`._lance_table`, and :mod:`._lance_reader` reads the table back.

**Nothing is visible before the run ends.** A Lance table is versioned: every
``add`` commits a new version, atomically, and readers open the latest. So the run
does not add to the table itself but to a *staging* table of the same name in a
hidden database beside it (``<database>/.<table>.lance.partial.tmp/``). A commit
adds the rows written since the last one to the staging table and records the
staging table's version in the checkpoint (with the errors file's length and the
loader cursor). Recovering restores the staging table to
that version (``restore`` makes a new version with its content), which drops
whatever was added after the commit, and the run writes on: every row exactly once.

**Publishing is one version of the table.** At the end, the staging table's rows
go into the table in one commit: ``overwrite`` replaces its content (older
versions stay readable by version number until pruned), ``append`` adds them, and
``upsert`` merges them by ``(id, window_index)`` and deletes the windows of the
documents it saw that no longer exist (a document now shorter), so re-embedding a
changed corpus replaces the rows of the documents it saw again instead of
duplicating them. ``sync`` makes the table exactly this run's input in the same one
merge, deleting every row not written again except those of documents set aside by a
failure, and counts the documents added, replaced, unchanged and deleted into the
manifest (:mod:`._lance_sync`). Before that commit the checkpoint records the table's version
(``publishing``); publishing the manifest and the errors file then deletes the
checkpoint, which is the moment the run is done. A run that dies in between (while
building the indexes, below, included) left
the checkpoint: the next run on this path (resumed or fresh) first restores the
table to the recorded version, so an ``append`` can never be applied twice.

**Deleted is masked, unless pruned.** A row a publication deletes or replaces leaves the
version searches read, but not the disk: Lance masks it with a deletion file in its data
file, and every older version keeps it (``table.checkout(n)`` reads it back). With
``prune: true`` the table is compacted before its indexes are built (written anew where
a row was deleted, :func:`~._lance_table.compacted`) and, once the manifest names that
version, every older version is removed with the files only they used
(:func:`~._lance_table.prune_versions`): the deleted rows' text and vectors are gone
(erasure), and so is time travel to older versions. Until the manifest is out no version
is removed, so an interrupted publication is undone as any other; a stop while pruning
leaves the manifest's version (LanceDB never removes the newest) and older ones the next
run with ``prune`` removes. LanceDB prunes by age: an older version written after the
clock's now is kept, and the run fails naming it once its summary is out
(:meth:`LanceDbSink.published_problem`; the publication stands).

Before the manifest is published, the sink builds the configured vector index
(IVF-PQ or HNSW, cosine distance) and the full-text index on ``text``, each a further
version (see :mod:`._lance_index`), and records the table's version then in the
manifest (``outputs.table_version``): readers read the table at that version
(:mod:`._lance_reader`), so the rows a search reads are always those the manifest it
embedded its query by describes, never a newer run's committed a moment before its
manifest. A failed index build still publishes the rows (that version, without the
index), and records why in the manifest (``outputs.index_failure``): the run fails saying
so once its summary is out (:meth:`LanceDbSink.published_problem`). A run that wrote no
rows where there was no table creates none: it publishes an empty folder at ``path`` and
``table_version: 0``, which the reader reads as no rows (a table that exists is emptied
under ``overwrite``, a version of it, as any other publication).

**Staged parts** (sink contract 1.3, a run split into shards).
Each shard writes its part through a lancedb sink of its own, relocated into the
part's directory: its rows go into the part's own staging table, with the commits
and resume above, and finishing the part moves that staging table into the part's
directory (``part-.../<table>.lance``, the part's "finished" mark) after its errors
file. A part never touches the real table and builds no index. For ``append`` and
``upsert`` a part adopts the real table's columns when it starts, and refuses a
table of another model, precision or version there, before any work. When every
part is finished, the driver publishes them as a whole run publishes its staging
table: the parts' rows, in shard order, stream into the table in **one** commit with
the configured mode (their columns merged first, see :mod:`._unify`), under the same
``publishing`` checkpoint, now naming the run; the indexes are built once, then the
errors file and the manifest (``outputs.run_id`` naming the run, ``outputs.table_version``
the version) are published, the checkpoint deleted and the staging area deleted. The
manifest is the mark that the publication completed: an interrupted one whose
manifest is not out is undone (the table restored) by the next attempt, a retried
publication or a fresh run, and one whose manifest is out is not undone and not
applied again (a resumed run finds no staged run left to publish). Readers see one
ordinary table.

Memory holds ``buffer_rows`` rows while writing, and the LanceDB session the sink
connects through holds at most ``cache_bytes`` in each of its two caches: with
LanceDB's default session they grew with every version of the staging table, by
219 MiB over 1,000 commits (``benchmarks/memory/lancedb_cache.py``). Publishing streams the staging
rows into the table; ``upsert`` also holds the set of the run's document ids, and
its delete condition lists them (``id IN (...)``): a run over millions of
documents builds a filter of that size. ``sync`` holds a digest per document of the table
and of the run while it publishes, and lists only the documents set aside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from seamline.components.sinks._columnar import ColumnarConfig, ColumnarSink
from seamline.components.sinks._columns import SchemaText
from seamline.components.sinks._lance_index import (
    INDEX_FAILURE,
    VectorIndexConfig,
    check_index_fits,
    check_temporary_folder,
    indexed_version,
    temporary_files,
)
from seamline.components.sinks._lance_reader import LanceReader
from seamline.components.sinks._lance_sync import publish_synced
from seamline.components.sinks._lance_table import (
    LanceDatabases,
    compacted,
    left_by_prune,
    older_versions,
    prune_versions,
    publish_rows,
    table_ids,
    table_rows,
)
from seamline.components.sinks._unify import conformed, unified_schema
from seamline.contracts import OutputRecord, UserError
from seamline.contracts.logs import get_logger
from seamline.contracts.manifest import shown_index_failure
from seamline.contracts.sink_kit import (
    AtomicFile,
    RunId,
    SinkState,
    fsync_directory,
    made_by_another,
    planted_inside,
    publish_staged,
    refuse_blocked_parts,
    stops_deferred,
)
from seamline.contracts.workdir import as_written

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb.table import Table

log = get_logger("seamline.sink.lancedb")
_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_MiB = 1 << 20


class Publishing(SinkState):
    """A publication into the table that has begun: the table's version before it."""

    table_version: PositiveInt | None
    """None: there was no table (the publication creates it)."""
    run_id: RunId | None = None
    """The staged run being published (None: a whole run's staging table)."""


class LanceState(SinkState):
    """What the lancedb sink's checkpoint adds: the staging table's version, the columns,
    and a publication under way."""

    staged: PositiveInt | None = None
    """The staging table's version at the commit (None: no row staged yet)."""
    columns: SchemaText | None = None
    """The rows' Arrow schema (None before the first row), base64 of its IPC form."""
    publishing: Publishing | None = None


class LanceDbSinkConfig(ColumnarConfig):
    """The ``with:`` block of the ``lancedb`` sink: ``path`` is the table's folder,
    ``<database>/<table>.lance``: the table is named after the folder and the database is
    the folder it lies in (``lancedb.connect('<database>').open_table('<table>')``)."""

    path_is_folder: ClassVar[bool] = True
    folder_kind: ClassVar[str] = "LanceDB table folder"

    mode: Literal["overwrite", "append", "upsert", "sync"] = Field(
        default="overwrite",
        description="What a run does to an existing table: overwrite replaces its rows; "
        "append adds this run's rows; upsert replaces the rows of every document this run "
        "embedded (by id) and adds the rest; sync makes the table hold exactly this run's "
        "input: new documents added, changed ones replaced, documents no longer in the input "
        "deleted, in one commit (a document set aside by a failure keeps its rows), and the "
        "run reports how many of each. append, upsert and sync need the table to be made as "
        "this run makes its vectors: the same model configuration, precision and versions.",
    )
    buffer_rows: int = Field(
        default=4096,
        ge=1,
        description="Rows held in memory before they are added to the staging table (each "
        "addition is a version of it); a commit adds what is held whatever its size.",
    )
    index: VectorIndexConfig | None = Field(
        default=None,
        description="The vector index built at the end of the run; null builds none (search "
        "then scans every row, exactly).",
    )
    cache_bytes: int | None = Field(
        default=16 * _MiB,
        ge=0,
        description="Bound, in bytes, on each of the two caches (index and metadata) of the "
        "LanceDB session this sink writes through. Every staged addition is a table version, "
        "and LanceDB's default caches (gigabytes) keep what each version read: a long run's "
        "memory grew with every commit (benchmarks/memory/lancedb_cache.py). The sink never "
        "searches, so a small bound costs it nothing measurable. null: LanceDB's defaults.",
    )
    full_text_index: bool = Field(
        default=False,
        description="Build a full-text (BM25) index on the 'text' column at the end of the "
        "run, for LanceDB's keyword and hybrid search. Needs text: true.",
    )
    prune: bool = Field(
        default=False,
        description="After each publication, leave on disk no trace of the rows it deleted or "
        "replaced: the table is compacted (written anew where a row was deleted, since a "
        "deletion only masks rows in their file) and every older version is removed, with "
        "every file only they used. Their text and vectors are then gone (erasure); so are "
        "the older versions: no checkout or restore of them (time travel) afterwards. Off: "
        "deleted and replaced rows stay in the table's files and older versions.",
    )

    @field_validator("path")
    @classmethod
    def _a_table_folder(cls, path: Path) -> Path:
        if path.suffix != ".lance" or not _TABLE_NAME.fullmatch(path.stem):
            raise ValueError(
                f"{str(path)!r} is not a table folder: give '<database>/<table>.lance', for "
                "example out/embeddings.lance (a table name of ASCII letters, digits, '_', '-' "
                "and '.', not beginning with '-' or '.')"
            )
        return path

    @model_validator(mode="after")
    def _text_for_full_text(self) -> LanceDbSinkConfig:
        if self.full_text_index and not self.text:
            raise ValueError("full_text_index needs the text column: set text: true, or drop it")
        return self


class LanceDbSink(ColumnarSink[LanceDbSinkConfig]):
    """Writes records as rows of a LanceDB table, staged until the run completes."""

    name: ClassVar[str] = "lancedb"
    contract_version: ClassVar[str] = "1.6"
    Config = LanceDbSinkConfig
    State = LanceState
    primary: ClassVar[str] = "table"
    reader = LanceReader

    def __init__(self, config: LanceDbSinkConfig) -> None:
        super().__init__(config)
        needs = temporary_files(config.mode, config.index)
        if needs is not None:  # before any work, not once every document is embedded
            check_temporary_folder(os.environ, needs)
        self._lance = LanceDatabases(self.name, config.path.stem, config.cache_bytes)
        self._staging: Table | None = None
        """The staging table in :attr:`store` (the hidden staging database)."""

    def output_details(self) -> Mapping[str, Any]:
        config = self.config
        return {
            "mode": config.mode,
            "index": None if config.index is None else config.index.model_dump(mode="json"),
            "full_text_index": config.full_text_index,
        }

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "mode": self.config.mode}

    def published_changes(self, run_id: str) -> Mapping[str, int] | None:
        """The kit's counts (``sync``'s documents), and what older versions keep (:func:`_kept`)."""
        return _kept(self, super().published_changes(run_id), run_id)

    def published_problem(self, run_id: str) -> str | None:
        """Why its indexes were not built (:func:`_unindexed`) and, with ``prune``, the older
        versions it left (:func:`_left_by_prune`): raised from ``close``, each lost the summary."""
        manifest = self.published_manifest() or {}
        if manifest.get("run_id") != run_id:
            return None
        problems = [_unindexed(manifest), _left_by_prune(self, manifest)]
        return " Also, ".join(problem for problem in problems if problem) or None

    # -- the hooks of the kit's lifecycle ----------------------------------------------------

    def undo_publication(self) -> None:
        if self._undo_interrupted_publication():
            self.record_in_checkpoint(publishing=None)

    def reset(self) -> None:
        self.drop_store()
        self._adopt_the_table()

    def restore(self, state: LanceState) -> None:
        self._restore_staging(state.staged)
        if state.columns is not None:
            self.adopt_columns(state.columns)
        else:
            self._adopt_the_table()

    def committed_outputs(self) -> int | None:  # the staging table's, as committed
        return 0 if self._staging is None else self._staging.count_rows()

    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        fresh = self._layout.schema is None
        held = self.hold(records)
        if fresh and self.config.index is not None and self._layout.dim:
            check_index_fits(self.config.index, self._layout.dim)
        if held >= self.config.buffer_rows:
            self._stage_held()

    def commit_rows(self) -> LanceState:
        self._stage_held()
        staged = None if self._staging is None else self._staging.version
        return LanceState(staged=staged, columns=self.columns())

    def finish(self) -> Sequence[AtomicFile]:
        """A whole run: the staging table's rows into the table, as one version of it."""
        self._stage_held()
        if self.is_part:
            return ()
        table = self._lance.open(self._database)
        # Recorded before the table changes; publishing deletes it (the run is then done).
        self.record_in_checkpoint(
            publishing={"table_version": None if table is None else table.version}
        )
        staged, schema = self._staging, self._layout.schema
        rows = None
        if staged is not None and schema is not None:
            rows = _reader(schema, lambda: table_rows(staged, self.config.buffer_rows))
        errors = self.open_files()["errors"]
        table = self._publish_rows(
            table,
            rows,
            lambda: set() if staged is None else table_ids(staged, self.config.buffer_rows),
            lambda: _written(errors),
        )
        self._index_and_pin(table)
        return ()

    def published(self) -> None:
        if self.is_part:
            _finish_part(self)
            return
        self._drop_staging()
        _prune(self)

    def abandon_rows(self) -> None:
        """Keep the committed staging rows for a resume, or nothing."""
        self.take_held()
        if not self.committed:
            self._drop_staging()

    # -- staged parts ------------------------------------------------------------------------

    def begin_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """A fresh staged run: undo an interrupted publication, forget an interrupted whole run."""
        self.manifest = manifest
        self._undo_interrupted_publication()
        self.forget_run()
        self.drop_store()
        super().begin_parts(run_id, count, manifest)

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Every finished part's rows, in shard order, into the table as one version of it."""
        staging = self.staging()
        parts = staging.finished_parts(run_id, count)
        refuse_blocked_parts(  # before the table changes
            [("errors", self.config.resolved_errors_path()), ("manifest", self._table_manifest)],
            staging.root,
        )
        self.manifest = {**manifest, "run_id": run_id}
        if self._undo_interrupted_publication():  # an earlier try of this publication died
            self.forget_run()
        sources = [
            (f"shard {index} of {count}", found)
            for index, files in enumerate(parts)
            if (found := self._lance.open(files["table"].parent)) is not None
        ]
        table = self._lance.open(self._database)
        if table is not None and self.config.mode != "overwrite":
            self._adopt_the_table()  # the parts adopted it too: this checks it did not change
            schema = table.schema
        else:
            labelled = [(label, part.schema) for label, part in sources]
            schema = unified_schema(self.name, labelled, text=self.config.text)
        self.record_in_checkpoint(
            publishing={"table_version": None if table is None else table.version, "run_id": run_id}
        )
        rows, size = None, self.config.buffer_rows
        if sources and schema is not None:
            fitted = schema

            def part_rows() -> Iterator[pa.RecordBatch]:
                for label, part in sources:
                    for batch in table_rows(part, size):
                        yield conformed(batch, fitted, self.name, label)

            rows = _reader(schema, part_rows)
        table = self._publish_rows(
            table,
            rows,
            lambda: {i for _, part in sources for i in table_ids(part, size)},
            lambda: [files["errors"].read_bytes() for files in parts],
        )
        self._index_and_pin(table)
        _complete(self, parts, run_id)  # the publication is complete: never undone
        staging.discard_all()
        _prune(self)

    # -- the staging table -------------------------------------------------------------------

    @property
    def _database(self) -> Path:
        """The real table's database: the one published into, adopted by append and upsert."""
        return self.destination.parent

    def _stage_held(self) -> None:
        """Add the records held in memory to the staging table: one new version of it."""
        table = self.take_held()
        if table is None:
            return
        if self._staging is None:
            store = self.make_store()  # a planted link is never followed
            self._staging = self._lance.connect(store).create_table(
                self._lance.name, data=table, schema=self._layout.schema
            )
        else:
            self._staging.add(table)

    def _restore_staging(self, version: int | None) -> None:
        """Bring the staging table back to the version a commit recorded (None: no rows yet)."""
        if version is None:
            self.drop_store()
            return
        staging = self._lance.open(self.resumed_store("staging database"))
        versions = [] if staging is None else [v["version"] for v in staging.list_versions()]
        if staging is None or version not in versions:
            raise UserError(
                f"cannot resume: the staging table of {self._where} in "
                f"{str(self.store)!r} has no version {version}, which its checkpoint "
                "recorded; it was changed after the checkpoint. Run again without resuming to "
                "start over"
            )
        if staging.version != version:
            staging.restore(version)  # a new version with the committed rows only
        self._staging = staging

    def _drop_staging(self) -> None:
        self._staging = None
        self.drop_store()

    # -- the table ---------------------------------------------------------------------------

    def _publish_rows(
        self,
        table: Table | None,
        rows: pa.RecordBatchReader | None,
        ids: Callable[[], set[str]],
        errors: Callable[[], list[bytes]],
    ) -> Table | None:
        """``rows`` into the table in one commit; under sync, with the documents set aside
        by a failure (read from ``errors``, the run's errors files) kept as they were and
        the counts of what changed in the manifest's ``outputs.changes``."""
        mode, size = self.config.mode, self.config.buffer_rows
        if mode != "sync":
            return publish_rows(self._lance, self._database, table, rows, ids, mode)
        table, changes = publish_synced(
            self._lance, self._database, table, rows, ids, errors(), size
        )
        self._group.details["changes"] = changes.as_dict()
        return table

    def _undo_interrupted_publication(self) -> bool:
        """Restore the table to its version before a publication that did not finish.

        The checkpoint records ``publishing`` just before the rows go into the table,
        and publishing deletes the checkpoint once the manifest and the errors file
        are out: if it is still there, that run died in between, and the table may or
        may not hold its rows. Restoring the version it recorded (or dropping a table
        it created) makes the table as if that run had never published.
        """
        state = self.recorded_state()
        publishing = None if state is None else state.publishing
        if publishing is None:
            return False
        run_id = publishing.run_id
        if run_id is not None and run_id == self.published_run():
            return True  # a staged run's publication that completed: only the checkpoint was left
        before = publishing.table_version
        table = self._lance.open(self._database)
        if table is not None:
            if before is None:
                self._lance.connect(self._database).drop_table(self._lance.name)
            elif table.version != before:
                table.restore(before)
        return True

    def _adopt_the_table(self) -> None:
        """For append, upsert and sync, write rows of the existing table's schema and model.
        A part of a staged run adopts the real table (its destination's), not its own."""
        if self.config.mode == "overwrite":
            return
        _refuse_planted(self.destination, f"cannot {self.config.mode} into {self._where}")
        table = self._lance.open(self._database)
        if table is None:
            return
        published = self.published_manifest() or {}
        other = None if self.describes_this_output(published) is not False else published
        found = _another_maker(published, self.manifest, other, self._table_manifest)
        if found is not None:
            raise UserError(
                f"lancedb sink: cannot {self.config.mode} into {self._where}: the table {found}"
            )
        self._layout.adopt(table.schema, f"the table {self._where}")
        self.check_same_columns(f"lancedb sink: cannot {self.config.mode} into")

    @property
    def _table_manifest(self) -> Path:
        """The manifest the real table was published with (beside it)."""
        return self.destination.with_name(f"{self.destination.stem}.manifest.json")

    def _index_and_pin(self, table: Table | None) -> None:
        """The indexes built, and the version the table is then at recorded in the manifest
        (``outputs.table_version``), before the manifest goes out (:func:`indexed_version`);
        why the indexes failed, if they did, recorded there too (``outputs.index_failure``),
        for :meth:`published_problem` to fail the run with once its summary is out."""
        if table is None:  # the run wrote no rows where there was no table
            self._group.details["table_version"] = _no_table(self.destination)
            return
        config = self.config
        if config.prune:  # the version the manifest names, all of whose files prune keeps
            table = compacted(self._lance, self._database, table, config.buffer_rows)
        version, failure = indexed_version(
            table, config.index, config.full_text_index, _named(self)
        )
        self._group.details["table_version"] = version
        if failure is not None:  # the rows are published, without the index
            self._group.details[INDEX_FAILURE] = str(failure)


def _complete(sink: LanceDbSink, parts: Sequence[Mapping[str, Path]], run_id: str) -> None:
    """A staged run's rows in the table: its errors file, then its manifest published
    (:func:`publish_staged`: a failed rename puts the previous errors file back), then the
    checkpoint of its ``publishing`` deleted. A stop waits for the end of the three: one in
    between left the checkpoint of a publication that was complete."""
    errors = sink.merged_errors(parts)
    try:
        manifest = sink.manifest_file(run_id)
    except BaseException:
        errors.discard()
        raise
    with stops_deferred():
        publish_staged(sink.staging().root, run_id, [errors], manifest)
        sink.forget_run()


def _kept(
    sink: LanceDbSink, changes: Mapping[str, int] | None, run_id: str
) -> Mapping[str, int] | None:
    """``changes`` and, where ``prune`` is off, what the table's older versions keep on disk
    (``older_versions``, ``older_versions_bytes``, and ``older_versions_masked_rows`` where
    the newest version masks rows in its files: :func:`older_versions`), measured now,
    after run ``run_id`` (None: the output published now is another run's).

    Every publication keeps a full copy of the rows it rewrote and of the indexes it built
    anew (a ``sync`` of a few edits rewrites every row it read), and nothing said so: a
    daily sync's table grew by about its own size each day, unseen until the disk filled.
    """
    if sink.config.prune or (sink.published_manifest() or {}).get("run_id") != run_id:
        return changes
    table = sink._lance.open(sink._database)
    if table is None:
        return changes
    count, size, masked = older_versions(table, sink.destination)
    if count == 0 or (size == 0 and masked == 0):  # none, or only the commits of its indexes
        return changes
    older = {"older_versions": count, "older_versions_bytes": size}
    if masked:  # the bytes are a lower bound: pruning compacts the masked rows away too
        older["older_versions_masked_rows"] = masked
    return {**(changes or {}), **older}


def _finish_part(sink: LanceDbSink) -> None:
    """A part: its staging table moved into place inside the part directory, after its
    errors file and manifest.

    The table's folder appearing under ``path`` is the part's "finished" mark, so it
    is moved last; a part that wrote no rows gets an empty folder. A crash before the
    move leaves no checkpoint (publishing deleted it): the part is then redone.
    """
    staged = sink.store / f"{sink._lance.name}.lance"
    if sink._staging is not None and staged.is_dir():
        os.replace(staged, sink.config.path)
    else:
        sink.config.path.mkdir(parents=True, exist_ok=True)
    fsync_directory(sink.config.path.parent)
    sink._drop_staging()


def _prune(sink: LanceDbSink) -> None:
    """With ``prune``, every older version of the table removed, once the manifest naming
    its newest is out (:func:`prune_versions`): a stop in between leaves them, and the
    next run with ``prune`` removes them. A failure here is logged, and the versions it
    left fail the run once its summary is out (:func:`_left_by_prune`): the publication
    stands."""
    table = sink._lance.open(sink._database) if sink.config.prune else None
    if table is None:
        return
    try:
        prune_versions(table, _named(sink))
    except (RuntimeError, OSError, ValueError) as err:
        log.warning(
            f"lancedb sink: the rows are published in {_named(sink)}, but removing its older "
            "versions failed: fix what the error says, and run again with prune",
            error=str(err),
        )


def _unindexed(manifest: Mapping[str, Any]) -> str | None:
    """Why the indexes of the publication ``manifest`` describes were not built, as the run
    recorded it (``outputs.index_failure``); None when they were. Read as untrusted, as any
    manifest: a message shown to the user, so bounded and with no control character."""
    outputs = manifest.get("outputs")
    return shown_index_failure(outputs.get(INDEX_FAILURE) if isinstance(outputs, dict) else None)


def _left_by_prune(sink: LanceDbSink, manifest: Mapping[str, Any]) -> str | None:
    """With ``prune``, after the run that published ``manifest``: why older versions of
    the table outlived pruning (a clock behind the time they were written, or a failure
    logged as it pruned), and what removes them (:func:`left_by_prune`); None when none did.

    Asked after the run, so that it fails once its summary is out: raised while publishing,
    the failure lost the summary, and with it the counts of what the run deleted, measured
    only then (the next run finds nothing more to delete)."""
    outputs = manifest.get("outputs")
    version = outputs.get("table_version") if isinstance(outputs, dict) else None
    if not sink.config.prune or type(version) is not int:
        return None
    table = sink._lance.open(sink._database)
    return None if table is None else left_by_prune(table, _named(sink), version)


def _named(sink: LanceDbSink) -> str:
    """The table as the user wrote it (``'out/crm.lance'``), for the messages of pruning,
    which follow the run's summary: it names the output so, where they named it by its
    absolute path."""
    return repr(as_written(sink.destination))


def _another_maker(
    published: Mapping[str, Any],
    manifest: Mapping[str, Any],
    other: Mapping[str, Any] | None,
    path: Path,
) -> str | None:
    """Why the table (its manifest at ``path`` read as ``published``; ``other`` when it is
    another output's) may not take this run's vectors (``manifest``, the run's), and what
    to do; None when it was made as they are.

    The rule of ``--resume`` (:func:`~seamline.contracts.sink_kit.made_by_another`): the
    model, the precision and the versions of what computes the vectors. Comparing the
    model alone let an upsert in bfloat16 rewrite some rows of a float32 table, whose
    manifest then said bfloat16 for all of them (search embedded queries in it).
    """
    if not other and published.get("model") is not None:
        maker = made_by_another(published, manifest)
        if maker is None:
            return None
        fix = _OVERWRITE
        if "precision" in published and published["precision"] != manifest.get("precision"):
            fix += f", or run with precision: {published['precision']} (the table's)"
        return (
            f"was made by {maker.made}; adding to it would {maker.harm} in one table, and "
            f"its manifest (by which search embeds a query) can describe only one. {fix}"
        )
    if other:
        return (
            f"has no manifest of its own ({str(path)!r} describes {_described(other)}: a "
            "later run with the same name in its folder replaced it), so its model is unknown. "
            f"{_OVERWRITE}"
        )
    return f"has no readable manifest ({str(path)!r}), so its model is unknown. {_OVERWRITE}"


_OVERWRITE = "Use mode: overwrite, or another path"


def _described(manifest: Mapping[str, Any]) -> str:
    """Another output's manifest in a few words: its files and its sink (untrusted: shown
    as ``repr``, cut short)."""
    outputs = manifest["outputs"]
    files = outputs.get("files")
    shown = ", ".join(repr(f) for f in files.values()) if isinstance(files, dict) else "no files"
    return f"{shown} of a {outputs.get('sink')!r} sink"[:300]


def _reader(
    schema: pa.Schema, batches: Callable[[], Iterator[pa.RecordBatch]]
) -> pa.RecordBatchReader:
    import pyarrow as pa

    return pa.RecordBatchReader.from_batches(schema, batches())


def _written(errors: AtomicFile) -> list[bytes]:
    """What the run's errors file holds so far (sync reads the documents set aside there)."""
    errors.sync()
    return [errors.temporary.read_bytes()]


def _no_table(table: Path) -> int:
    """A run that wrote no rows where there was no table publishes none: an empty folder at
    its path (the output's primary: its presence says the output is published) and the
    version 0 (none), which the reader answers with no rows. The manifest alone named a
    table that did not exist, and search said the output was damaged."""
    table.mkdir(parents=True, exist_ok=True)  # not a link: LanceDatabases.open refused one
    fsync_directory(table.parent)
    return 0


def _refuse_planted(table: Path, doing: str) -> None:
    """A table LanceDB is about to write must hold nothing seamline never writes there: a
    symbolic link inside it would have LanceDB write its data files where the link leads."""
    planted = planted_inside(table) if table.is_dir() else None
    if planted is not None:
        raise UserError(
            f"lancedb sink: {doing}: the table holds {planted}, which seamline never writes, "
            "and LanceDB would write through it. Restore the table, or use mode: overwrite, "
            "or another path"
        )
