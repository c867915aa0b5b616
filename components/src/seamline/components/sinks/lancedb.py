"""``lancedb``: the outputs as rows of an embedded LanceDB table, searchable with an index.

``path`` is the table's folder, ``<database>/<table>.lance``: the database is the
folder it lies in, opened in-process with ``lancedb.connect`` (no server). Rows
have the layout of :mod:`._columns`.

**Nothing is visible before the run ends.** A Lance table is versioned: every
``add`` commits a new version, atomically, and readers open the latest. So the run
does not add to the table itself but to a *staging* table of the same name in a
hidden database beside it (``<database>/.<table>.lance.partial.tmp/``). A commit
adds the rows written since the last one to the staging table and records the
staging table's version in the checkpoint (with the errors file's length and the
loader cursor, see :mod:`._checkpoint`). Recovering restores the staging table to
that version (``restore`` makes a new version with its content), which drops
whatever was added after the commit, and the run writes on: every row exactly once.

**Publishing is one version of the table.** At the end, the staging table's rows
go into the table in one commit: ``overwrite`` replaces its content (older
versions stay readable by version number until pruned), ``append`` adds them, and
``upsert`` merges them by ``(id, window_index)`` and deletes the windows of the
documents it saw that no longer exist (a document now shorter), so re-embedding a
changed corpus replaces the rows of the documents it saw again instead of
duplicating them. Before that commit the checkpoint records the table's version
(``publishing``); publishing the manifest and the errors file then deletes the
checkpoint, which is the moment the run is done. A run that dies in between left
the checkpoint: the next run on this path (resumed or fresh) first restores the
table to the recorded version, so an ``append`` can never be applied twice.

After publishing, the sink builds the configured vector index (IVF-PQ or HNSW,
cosine distance) and the full-text index on ``text``, each a further version (see
:mod:`._lance_index`).

**Staged parts** (sink contract 1.3, a run split into shards; see :mod:`._parts`).
Each shard writes its part through a lancedb sink of its own, relocated into the
part's directory: its rows go into the part's own staging table, with the commits
and resume above, and finishing the part moves that staging table into the part's
directory (``part-.../<table>.lance``, the part's "finished" mark) after its errors
file. A part never touches the real table and builds no index. For ``append`` and
``upsert`` a part adopts the real table's columns when it starts, and refuses a
table of another model there, before any work. When every part is finished, the
driver publishes them as a whole run publishes its staging table: the parts' rows,
in shard order, stream into the table in **one** commit with the configured mode
(their columns merged first, see :mod:`._unify`), under the same ``publishing``
checkpoint, now naming the run; then the errors file and the manifest
(``outputs.run_id`` naming the run) are published, the checkpoint deleted, the
staging area deleted, and the indexes built once. The manifest is the mark that
the publication completed: an interrupted one whose manifest is not out is undone
(the table restored) by the next attempt, a retried publication or a fresh run,
and one whose manifest is out is not undone and not applied again (a resumed run
finds no staged run left to publish). Readers see one ordinary table.

Memory holds ``buffer_rows`` rows while writing, and the LanceDB session the sink
connects through holds at most ``cache_bytes`` in each of its two caches: with
LanceDB's default session they grew with every version of the staging table, by
219 MiB over 1,000 commits (``benchmarks/lancedb_cache.py``). Publishing streams the staging
rows into the table; ``upsert`` also holds the set of the run's document ids, and
its delete condition lists them (``id IN (...)``): a run over millions of
documents builds a filter of that size.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from seamline.components.sinks._atomic import (
    AtomicFile,
    fsync_directory,
    own_directory,
    refuse_a_link,
)
from seamline.components.sinks._checkpoint import ResumableGroup, manifest_bytes, partial_path
from seamline.components.sinks._columns import (
    ID,
    WINDOW,
    RowLayout,
    schema_from_text,
    schema_to_text,
)
from seamline.components.sinks._lance_index import (
    VectorIndexConfig,
    build_indexes,
    check_index_fits,
)
from seamline.components.sinks._parts import StagingSink
from seamline.components.sinks._paths import OutputPath, check_distinct
from seamline.components.sinks._records import (
    RunId,
    SchemaText,
    SinkState,
    published_run_id,
    read_published_manifest,
)
from seamline.components.sinks._unify import conformed, unified_schema
from seamline.components.sinks.jsonl import (
    default_errors_path,
    default_manifest_path,
    error_line,
    errors_label,
)
from seamline.contracts import ComponentConfig, DocumentError, OutputRecord, Sink, UserError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    import pyarrow as pa
    from lancedb import Session
    from lancedb.db import DBConnection
    from lancedb.table import Table

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


class LanceDbSinkConfig(ComponentConfig):
    """The ``with:`` block of the ``lancedb`` sink."""

    path: OutputPath = Field(
        description="The table's folder, '<database>/<table>.lance': the table is named "
        "after the folder and the database is the folder it lies in "
        "(lancedb.connect('<database>').open_table('<table>')). A relative path is relative "
        "to the working directory of the run."
    )
    mode: Literal["overwrite", "append", "upsert"] = Field(
        default="overwrite",
        description="What a run does to an existing table: overwrite replaces its rows; "
        "append adds this run's rows; upsert replaces the rows of every document this run "
        "embedded (by id) and adds the rest. append and upsert need the table's model to be "
        "this pipeline's.",
    )
    errors_path: OutputPath | None = Field(
        default=None,
        description="Where documents that were set aside are recorded, one JSON object each. "
        "Default: '<table>.errors.jsonl' beside path.",
    )
    text: bool = Field(
        default=True,
        description="Store each window's text in a 'text' column (search snippets, the "
        "full-text index); false leaves it out.",
    )
    metadata_columns: list[str] | None = Field(
        default=None,
        description="Metadata keys stored as fields of the 'metadata' column. Default: the "
        "keys of the first records written.",
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
        "memory grew with every commit (benchmarks/lancedb_cache.py). The sink never searches, "
        "so a small bound costs it nothing measurable. null: LanceDB's defaults.",
    )
    full_text_index: bool = Field(
        default=False,
        description="Build a full-text (BM25) index on the 'text' column at the end of the "
        "run, for LanceDB's keyword and hybrid search. Needs text: true.",
    )

    @field_validator("path")
    @classmethod
    def _a_table_folder(cls, path: Path) -> Path:
        if path.suffix != ".lance" or not _TABLE_NAME.fullmatch(path.stem):
            raise ValueError(
                f"{str(path)!r} is not a table folder: give '<database>/<table>.lance', for "
                "example out/embeddings.lance (a table name of letters, digits, '_', '-', '.')"
            )
        return path

    @model_validator(mode="after")
    def _consistent(self) -> LanceDbSinkConfig:
        if self.full_text_index and not self.text:
            raise ValueError("full_text_index needs the text column: set text: true, or drop it")
        check_distinct(
            [
                ("path", self.path),
                (errors_label(self.errors_path), self.resolved_errors_path()),
                ("the manifest", default_manifest_path(self.path)),
            ],
            folders={"path"},
        )
        return self

    def resolved_errors_path(self) -> Path:
        return self.errors_path if self.errors_path is not None else default_errors_path(self.path)


class LanceDbSink(StagingSink, Sink[LanceDbSinkConfig]):
    """Writes records as rows of a LanceDB table, staged until the run completes."""

    name: ClassVar[str] = "lancedb"
    contract_version: ClassVar[str] = "1.3"
    Config = LanceDbSinkConfig
    resumable: ClassVar[bool] = True
    stageable: ClassVar[bool] = True
    keeps_parts: ClassVar[bool] = False

    def __init__(self, config: LanceDbSinkConfig, *, part_of: Path | None = None) -> None:
        """``part_of``: for a part of a staged run, the real table's folder (its destination)."""
        super().__init__(config)
        self._part_of = part_of
        self._table_path = config.path if part_of is None else part_of
        """The real table: the one published into, and adopted by append and upsert."""
        self._table_name = config.path.stem
        self._database = self._table_path.parent
        self._staging_database = partial_path(config.path)
        self._group = ResumableGroup(
            self.name,
            default_manifest_path(config.path),
            [("errors", config.resolved_errors_path())],
            state=LanceState,
            primary=("table", config.path),
        )
        self._group.details = {
            "mode": config.mode,
            "index": None if config.index is None else config.index.model_dump(mode="json"),
            "full_text_index": config.full_text_index,
        }
        self._layout = RowLayout(self.name, text=config.text, metadata_keys=config.metadata_columns)
        self._staging: Table | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._closed = False

    # -- staged parts ----------------------------------------------------------------------

    def staging_targets(self) -> tuple[Path, list[tuple[str, Path]]]:
        return self._group.manifest_path, [*self._group.targets, ("table", self.config.path)]

    def relocated(self, directory: Path) -> LanceDbSink:
        config = self.config.model_copy(
            update={
                "path": directory / self.config.path.name,
                "errors_path": directory / self.config.resolved_errors_path().name,
            }
        )
        return LanceDbSink(config, part_of=self.config.path)

    def begin_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """A fresh staged run: undo an interrupted publication, forget an interrupted whole run."""
        self._group.manifest = manifest
        self._undo_interrupted_publication()
        self._group.clear()
        shutil.rmtree(self._staging_database, ignore_errors=True)
        super().begin_parts(run_id, count, manifest)

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Every finished part's rows, in shard order, into the table as one version of it."""
        staging = self._part_staging()
        parts = staging.finished_parts(run_id, count)
        self._group.manifest = {**manifest, "run_id": run_id}
        if self._undo_interrupted_publication():  # an earlier try of this publication died
            self._group.checkpoint.unlink(missing_ok=True)
        sources = [
            (f"shard {index} of {count}", found)
            for index, files in enumerate(parts)
            if (found := self._open(files["table"].parent)) is not None
        ]
        table = self._open_table()
        if table is not None and self.config.mode != "overwrite":
            self._adopt_the_table()  # the parts adopted it too: this checks it did not change
            schema = table.schema
        else:
            schema = unified_schema(
                self.name, [(label, part.schema) for label, part in sources], text=self.config.text
            )
        self._group.annotate(
            publishing={"table_version": None if table is None else table.version, "run_id": run_id}
        )
        batches: Callable[[], Iterator[pa.RecordBatch]] | None = None
        if sources and schema is not None:
            fitted = schema

            def part_rows() -> Iterator[pa.RecordBatch]:
                for label, part in sources:
                    for batch in _rows(part, self.config.buffer_rows):
                        yield conformed(batch, fitted, self.name, label)

            batches = part_rows

        def part_ids() -> set[str]:
            return {doc_id for _, part in sources for doc_id in _ids(part, self.config.buffer_rows)}

        table = self._publish_rows(table, schema, batches, part_ids)
        outputs = {**self._group.outputs(), "run_id": run_id}
        errors = AtomicFile(self.config.resolved_errors_path(), purpose="errors file")
        try:
            for files in parts:
                errors.write(files["errors"].read_bytes())
        except BaseException:
            errors.discard()
            raise
        errors.publish()
        written = AtomicFile(self._group.manifest_path, purpose="manifest")
        written.write(manifest_bytes({**self._group.manifest, "outputs": outputs}))
        written.publish()  # the publication is complete: a later try must not undo it
        self._group.checkpoint.unlink(missing_ok=True)
        staging.discard_all()
        if table is not None:
            self._build_indexes(table)

    # -- the run ---------------------------------------------------------------------------

    def start(self, manifest: Mapping[str, Any]) -> None:
        self.lock_part()  # one run per destination: refuse before touching anything
        self._group.manifest = manifest
        self._undo_interrupted_publication()
        self._group.clear()  # a fresh run: forget what an interrupted one left behind
        shutil.rmtree(self._staging_database, ignore_errors=True)
        self._adopt_the_table()

    def _recover(self, manifest: Mapping[str, Any]) -> str | None:
        self._group.manifest = manifest
        if self._undo_interrupted_publication():
            self._group.annotate(publishing=None)
        recovered = self._group.recover(manifest)
        if recovered is None:
            shutil.rmtree(self._staging_database, ignore_errors=True)
            self._adopt_the_table()
            return None
        cursor, state = recovered
        self._restore_staging(state.staged)
        if state.columns is not None:
            self._layout.adopt(schema_from_text(state.columns), f"the checkpoint of {self._where}")
            self._check_same_columns("cannot resume: the rows committed for")
        else:
            self._adopt_the_table()
        return cursor

    def write(self, records: Sequence[OutputRecord]) -> None:
        self._check_open()
        self._group.open()
        if not records:
            return
        fresh = self._layout.schema is None
        batch = self._layout.batch(records)
        if fresh:
            self._check_index_fits()
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        if self._pending_rows >= self.config.buffer_rows:
            self._stage_pending()

    def write_error(self, error: DocumentError) -> None:
        self._check_open()
        self._group.open()["errors"].write_json_line(error_line(error))

    def commit(self, cursor: str) -> None:
        self._check_open()
        self._group.open()
        self._stage_pending()
        self._group.commit(cursor, self._state())

    def close(self, complete: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        if self.untouchable:  # another run owns the destination, or a resume was refused
            self.unlock_part()
            return
        try:
            if not complete:
                self._abandon()
            elif self._part_of is not None:
                self._finish_part()
            else:
                self._publish()
        finally:
            self.unlock_part()

    def _publish(self) -> None:
        """The whole run: the staging table's rows into the table, then the indexes."""
        self._group.open()
        self._stage_pending()
        table = self._open_table()
        # Recorded before the table changes; publishing deletes it (the run is then done).
        self._group.annotate(publishing={"table_version": None if table is None else table.version})
        staged = self._staging
        table = self._publish_rows(
            table,
            self._layout.schema,
            None if staged is None else self._staged_rows,
            lambda: set() if staged is None else _ids(staged, self.config.buffer_rows),
        )
        self._group.publish()
        self._drop_staging()
        self.after_whole_publish()
        if table is not None:
            self._build_indexes(table)

    def _finish_part(self) -> None:
        """A part: its errors, then its staging table moved into place inside the part directory.

        The table's folder appearing under ``path`` is the part's "finished" mark, so it
        is moved last; a part that wrote no rows gets an empty folder. A crash before the
        move leaves no checkpoint (publishing deleted it): the part is then redone.
        """
        self._group.open()
        self._stage_pending()
        self._group.publish()
        staged = self._staging_database / f"{self._table_name}.lance"
        if self._staging is not None and staged.is_dir():
            os.replace(staged, self.config.path)
        else:
            self.config.path.mkdir(parents=True, exist_ok=True)
        fsync_directory(self.config.path.parent)
        self._drop_staging()

    def describe(self) -> dict[str, str]:
        return {**super().describe(), "mode": self.config.mode}

    # -- the staging table -----------------------------------------------------------------

    @property
    def _where(self) -> str:
        return repr(str(self._table_path))

    def _state(self) -> LanceState:
        schema = self._layout.schema
        return LanceState(
            staged=None if self._staging is None else self._staging.version,
            columns=None if schema is None else schema_to_text(schema),
        )

    def _stage_pending(self) -> None:
        """Add the records held in memory to the staging table: one new version of it."""
        if not self._pending_rows:
            return
        import pyarrow as pa

        table = pa.Table.from_batches(self._pending, self._layout.schema)
        if self._staging is None:
            own_directory(self._staging_database)  # a planted link is never followed
            self._staging = self._connect(self._staging_database).create_table(
                self._table_name, data=table, schema=self._layout.schema
            )
        else:
            self._staging.add(table)
        self._pending, self._pending_rows = [], 0

    def _restore_staging(self, version: int | None) -> None:
        """Bring the staging table back to the version a commit recorded (None: no rows yet)."""
        if version is None:
            shutil.rmtree(self._staging_database, ignore_errors=True)
            return
        refuse_a_link(self._staging_database, "staging database")
        staging = self._open(self._staging_database)
        versions = [] if staging is None else [v["version"] for v in staging.list_versions()]
        if staging is None or version not in versions:
            self._group.abandon()
            raise UserError(
                f"cannot resume: the staging table of {self._where} in "
                f"{str(self._staging_database)!r} has no version {version}, which its checkpoint "
                "recorded; it was changed after the checkpoint. Run again without resuming to "
                "start over"
            )
        if staging.version != version:
            staging.restore(version)  # a new version with the committed rows only
        self._staging = staging

    def _drop_staging(self) -> None:
        self._staging = None
        shutil.rmtree(self._staging_database, ignore_errors=True)

    def _abandon(self) -> None:
        """End without publishing: keep the committed staging rows for a resume, or nothing."""
        self._pending, self._pending_rows = [], 0
        if not self._group.committed:
            self._drop_staging()
        self._group.abandon()

    # -- the table -------------------------------------------------------------------------

    @functools.cached_property
    def _session(self) -> Session | None:
        """The LanceDB session of this sink's connections, its index and metadata caches
        holding at most ``cache_bytes`` each (None: LanceDB's default session). Made on
        first use, where ``lancedb`` is first imported (seconds): a sink that is built but
        never writes, one refused by its destination's lock, does not pay for it."""
        import lancedb

        bound = self.config.cache_bytes
        if bound is None:
            return None
        return lancedb.Session(index_cache_size_bytes=bound, metadata_cache_size_bytes=bound)

    def _connect(self, database: Path) -> DBConnection:
        import lancedb

        return lancedb.connect(str(database), session=self._session)

    def _open(self, database: Path) -> Table | None:
        """The table named after ``path`` in ``database``, or None if there is none.

        A symbolic link at the table's name is refused, never followed: the rows would
        go wherever it points.
        """
        folder = database / f"{self._table_name}.lance"
        if folder.is_symlink():
            raise UserError(
                f"{str(folder)!r} is a symbolic link; the {self.name} sink does not write a "
                "table through a link (it could point anywhere). Remove it, or give a path "
                "that is the table itself"
            )
        if not folder.is_dir() or not any(folder.iterdir()):  # an empty part's folder
            return None
        try:
            return self._connect(database).open_table(self._table_name)
        except ValueError:  # "Table '...' was not found": a folder that is not a table
            return None

    def _open_table(self) -> Table | None:
        return self._open(self._database)

    def _undo_interrupted_publication(self) -> bool:
        """Restore the table to its version before a publication that did not finish.

        The checkpoint records ``publishing`` just before the rows go into the table,
        and publishing deletes the checkpoint once the manifest and the errors file
        are out: if it is still there, that run died in between, and the table may or
        may not hold its rows. Restoring the version it recorded (or dropping a table
        it created) makes the table as if that run had never published.
        """
        state = self._group.recorded_state()
        publishing = None if state is None else state.publishing
        if publishing is None:
            return False
        run_id = publishing.run_id
        if run_id is not None and run_id == published_run_id(self._table_manifest):
            return True  # a staged run's publication that completed: only the checkpoint was left
        before = publishing.table_version
        table = self._open_table()
        if table is not None:
            if before is None:
                self._connect(self._database).drop_table(self._table_name)
            elif table.version != before:
                table.restore(before)
        return True

    @property
    def _table_manifest(self) -> Path:
        """The manifest the real table was published with (beside it)."""
        return default_manifest_path(self._table_path)

    def _adopt_the_table(self) -> None:
        """For append and upsert, write rows of the existing table's schema and model.

        A part of a staged run adopts the real table (its destination's), not its own.
        """
        if self.config.mode == "overwrite":
            return
        table = self._open_table()
        if table is None:
            return
        manifest_path = self._table_manifest
        recorded = (read_published_manifest(manifest_path) or {}).get("model")
        if recorded != _plain(self._group.manifest.get("model")):
            found = (
                f"was made by another model configuration ({recorded})"
                if recorded is not None
                else f"has no readable manifest ({str(manifest_path)!r}), so its model is unknown"
            )
            raise UserError(
                f"lancedb sink: cannot {self.config.mode} into {self._where}: the table {found}; "
                "mixing vectors of two models would make search meaningless. Use mode: overwrite, "
                "or another path"
            )
        self._layout.adopt(table.schema, f"the table {self._where}")
        self._check_same_columns(f"lancedb sink: cannot {self.config.mode} into")

    def _check_same_columns(self, doing: str) -> None:
        """The columns adopted (a table's, a checkpoint's) must be those the config asks for."""
        layout, config = self._layout, self.config
        wanted = config.metadata_columns
        if layout.text != config.text or (wanted is not None and wanted != layout.metadata_keys):
            self._group.abandon()
            raise UserError(
                f"{doing} {self._where}: the rows have the columns text={layout.text}, "
                f"metadata={layout.metadata_keys}, but this sink is set to text={config.text}, "
                f"metadata_columns={wanted}; use the settings they were written with, or "
                "mode: overwrite and a fresh run"
            )

    def _staged_rows(self) -> Iterator[pa.RecordBatch]:
        assert self._staging is not None
        yield from _rows(self._staging, self.config.buffer_rows)

    def _publish_rows(
        self,
        table: Table | None,
        schema: pa.Schema | None,
        batches: Callable[[], Iterator[pa.RecordBatch]] | None,
        ids: Callable[[], set[str]],
    ) -> Table | None:
        """The rows ``batches`` yields (of ``schema``) into the table, as one new version of it.

        ``batches`` is None when the run wrote no rows; ``ids`` gives the documents the
        rows are of (for upsert).
        """
        import pyarrow as pa

        mode = self.config.mode
        if batches is None or schema is None:  # the run wrote no rows
            if table is not None and mode == "overwrite":
                table.delete("true")  # its rows are replaced by none
            return table
        rows = pa.RecordBatchReader.from_batches(schema, batches())
        if table is None:
            self._database.mkdir(parents=True, exist_ok=True)
            return self._connect(self._database).create_table(self._table_name, data=rows)
        if mode == "overwrite":
            return self._connect(self._database).create_table(
                self._table_name, data=rows, mode="overwrite"
            )
        if mode == "append":
            table.add(rows)
            return table
        listed = ", ".join(_sql_text(doc_id) for doc_id in sorted(ids()))
        (
            table.merge_insert([ID, WINDOW])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"{ID} IN ({listed})")
            .execute(rows)
        )
        return table

    # -- indexes ---------------------------------------------------------------------------

    def _check_index_fits(self) -> None:
        if self.config.index is not None and self._layout.dim:
            check_index_fits(self.config.index, self._layout.dim)

    def _build_indexes(self, table: Table) -> None:
        """The configured vector and full-text indexes, over every row of the table."""
        try:
            build_indexes(table, self.config.index, full_text=self.config.full_text_index)
        except (ValueError, RuntimeError, OSError) as err:
            raise UserError(
                f"lancedb sink: the rows are published in {self._where}, but building its "
                f"index failed: {err}. Fix the index settings and run again, or search "
                "without an index (it scans every row)"
            ) from err

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("lancedb sink: write after close")


def _rows(table: Table, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Every row of ``table``, in the order it was added, ``batch_rows`` at a time."""
    yield from table.search().limit(None).to_batches(batch_rows)


def _ids(table: Table, batch_rows: int) -> set[str]:
    """The documents whose rows ``table`` holds."""
    ids: set[str] = set()
    for batch in table.search().select([ID]).limit(None).to_batches(batch_rows):
        ids.update(batch.column(ID).to_pylist())
    return ids


def _sql_text(value: str) -> str:
    """A SQL string literal (single quotes doubled), for a filter LanceDB parses."""
    return "'" + value.replace("'", "''") + "'"


def _plain(value: Any) -> Any:
    """``value`` as it reads back from JSON, so it compares equal to a stored one."""
    import json

    return json.loads(json.dumps(value, sort_keys=True, default=str))
