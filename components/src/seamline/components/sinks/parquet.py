"""``parquet``: one row per output in a Parquet file, readable by every data tool as it is.

The columns are those of :mod:`._columns` (id, window, span, text, metadata, and
the embedding as a fixed-size list of float32), written with pyarrow in row groups
of ``row_group_size`` rows. Memory holds at most one row group's worth of records.

A Parquet file cannot be appended to — its footer, which says where every row
group is, comes last — so a run writes *parts*: complete Parquet files in a hidden
folder beside the output, ``.<name>.partial.tmp/``. Each commit closes the part
being written, makes it durable, and records the list of parts (their rows and
bytes), the schema and the loader cursor in the checkpoint (see :mod:`._checkpoint`).
Recovering keeps exactly the parts the checkpoint lists, deletes any written after
it, and writes on in a new part: resume continues after the last committed row
group. Publishing copies the parts' rows into one file under a temporary name, in
row groups of ``row_group_size`` again whatever the checkpoints cut, and renames
it into place after the manifest and the errors file; the copy costs about what
writing the parts did. The run's manifest is also stored in the file's key-value
metadata (``seamline.manifest``), so the file alone says what made it.

**Staged parts** (sink contract 1.3, a run split into shards; see :mod:`._parts`).
Each shard writes its part through a parquet sink of its own, relocated into the
part's directory, with the commits and resume above; finishing the part publishes
its rows there as one Parquet file. When every part is finished, the driver copies
the parts' rows, in shard order, into **one Parquet file at ``path``**, as a whole
run publishes it (row groups of ``row_group_size``, the manifest in its key-value
metadata, ``outputs.run_id`` naming the staged run), and then deletes the staging
area. One file rather than a manifest naming each part's file, because:

- the output is then the same whatever the executor: ``SELECT ... FROM
  'out/emb.parquet'`` in DuckDB, ``pq.read_table``, pandas and ``seamline search``
  read a sharded run's output exactly as a local run's, with no manifest to follow
  and no hidden staging folder to glob (where an unpublished run's parts lie too);
- each part fixed its own columns from its first records, so parts can disagree on
  the metadata fields or their types; a dataset of such files needs its readers to
  merge schemas (DuckDB's ``union_by_name``), whereas the one file has one schema,
  merged once by :mod:`._unify`.

The price is one sequential copy of every row on the driver, about what writing
them once costs (the whole-run sink pays the same at close), small beside
embedding them. At a scale where that copy matters, the ``npy`` or ``jsonl`` sink
publishes its parts in place (a manifest naming them), at no copy.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import structlog
from pydantic import Field, NonNegativeInt, model_validator

from seamline.components.sinks._atomic import (
    AtomicFile,
    AtomicGroup,
    fsync_directory,
    own_directory,
    refuse_a_link,
)
from seamline.components.sinks._checkpoint import ResumableGroup, manifest_bytes, partial_path
from seamline.components.sinks._columns import (
    EMBEDDING,
    ID,
    METADATA,
    TEXT,
    RowLayout,
    schema_from_text,
    schema_to_text,
)
from seamline.components.sinks._parts import StagingSink
from seamline.components.sinks._paths import OutputPath, check_distinct
from seamline.components.sinks._records import SchemaText, SinkState
from seamline.components.sinks._unify import conformed, unified_schema
from seamline.components.sinks.jsonl import (
    default_errors_path,
    default_manifest_path,
    error_line,
    errors_label,
)
from seamline.contracts import ComponentConfig, DocumentError, OutputRecord, Sink, UserError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import pyarrow as pa
    import pyarrow.parquet as pq

MANIFEST_KEY = "seamline.manifest"

log = structlog.get_logger("seamline.components")


class CommittedPart(SinkState):
    """A part a commit recorded: its name in the parts folder, its rows and its bytes."""

    name: Annotated[str, Field(pattern=r"^part-[0-9]{5,}\.parquet$")]
    rows: NonNegativeInt
    bytes: NonNegativeInt


class ParquetState(SinkState):
    """What the parquet sink's checkpoint adds: the committed parts and their columns."""

    parts: list[CommittedPart] = Field(default_factory=list)
    columns: SchemaText | None = None
    """The rows' Arrow schema (None before the first row), base64 of its IPC form."""


def _regular_size(path: Path) -> int | None:
    """The size of the regular file at ``path`` (a link is not followed), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


class ParquetSinkConfig(ComponentConfig):
    """The ``with:`` block of the ``parquet`` sink."""

    path: OutputPath = Field(
        description="Output Parquet file, one row per record; parent directories are created. "
        "A relative path is relative to the working directory of the run."
    )
    errors_path: OutputPath | None = Field(
        default=None,
        description="Where documents that were set aside are recorded, one JSON object each. "
        "Default: '<path stem>.errors.jsonl' beside path.",
    )
    text: bool = Field(
        default=True,
        description="Store each window's text in a 'text' column (what search shows as the "
        "snippet); false leaves the column out.",
    )
    metadata_columns: list[str] | None = Field(
        default=None,
        description="Metadata keys stored as fields of the 'metadata' column. Default: the "
        "keys of the first records written.",
    )
    row_group_size: int = Field(
        default=4096,
        ge=1,
        description="Rows per row group: the unit readers skip and fetch by, and the most "
        "records held in memory before they are written.",
    )
    compression: Literal["zstd", "snappy", "gzip", "lz4", "none"] = Field(
        default="zstd", description="Compression codec of every column."
    )

    @model_validator(mode="after")
    def _distinct_paths(self) -> ParquetSinkConfig:
        check_distinct(
            [
                ("path", self.path),
                (errors_label(self.errors_path), self.resolved_errors_path()),
                ("the manifest", default_manifest_path(self.path)),
            ]
        )
        return self

    def resolved_errors_path(self) -> Path:
        return self.errors_path if self.errors_path is not None else default_errors_path(self.path)


class ParquetSink(StagingSink, Sink[ParquetSinkConfig]):
    """Writes records as rows of a Parquet file, in row groups, published whole."""

    name: ClassVar[str] = "parquet"
    contract_version: ClassVar[str] = "1.3"
    Config = ParquetSinkConfig
    resumable: ClassVar[bool] = True
    stageable: ClassVar[bool] = True
    keeps_parts: ClassVar[bool] = False

    def __init__(self, config: ParquetSinkConfig) -> None:
        super().__init__(config)
        self._group = ResumableGroup(
            self.name,
            default_manifest_path(config.path),
            [("errors", config.resolved_errors_path())],
            state=ParquetState,
            primary=("parquet", config.path),
        )
        self._parts = partial_path(config.path)
        """The hidden folder of the parts: ``out/.emb.parquet.partial.tmp/``."""
        self._layout = RowLayout(self.name, text=config.text, metadata_keys=config.metadata_columns)
        self._committed: list[CommittedPart] = []
        """The parts the last commit recorded."""
        self._part: _Part | None = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._closed = False

    # -- staged parts ----------------------------------------------------------------------

    def staging_targets(self) -> tuple[Path, list[tuple[str, Path]]]:
        return self._group.manifest_path, [*self._group.targets, ("parquet", self.config.path)]

    def relocated(self, directory: Path) -> ParquetSink:
        config = self.config.model_copy(
            update={
                "path": directory / self.config.path.name,
                "errors_path": directory / self.config.resolved_errors_path().name,
            }
        )
        return ParquetSink(config)

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Every finished part's rows, in shard order, into the one file at ``path``."""
        import pyarrow.parquet as pq

        staging = self._part_staging()
        parts = staging.finished_parts(run_id, count)
        labelled = [(f"shard {i} of {count}", files) for i, files in enumerate(parts)]
        with_rows = [
            (label, files)
            for label, files in labelled
            if pq.read_metadata(files["parquet"]).num_rows > 0
        ]
        schemas = [(label, pq.read_schema(files["parquet"])) for label, files in with_rows]
        schema = unified_schema(self.name, schemas, text=self.config.text)
        if schema is None:  # no part has a row: an empty file of the fixed columns
            schema = self._layout.empty_schema()
        self._group.manifest = {**manifest, "run_id": run_id}
        outputs = {**self._group.outputs(), "run_id": run_id}

        def tables() -> Iterable[pa.Table]:
            import pyarrow as pa

            for label, files in with_rows:
                source = pq.ParquetFile(files["parquet"])
                for group in range(source.num_row_groups):
                    batches = source.read_row_group(group).to_batches()
                    yield pa.Table.from_batches(
                        [conformed(b, schema, self.name, label) for b in batches], schema
                    )

        publication = AtomicGroup()
        try:
            target = publication.open(self._group.manifest_path, purpose="manifest")
            target.write(manifest_bytes({**self._group.manifest, "outputs": outputs}))
            errors = publication.open(self.config.resolved_errors_path(), purpose="errors file")
            for files in parts:
                errors.write(files["errors"].read_bytes())
            final = publication.open(self.config.path, purpose="parquet file")
            stored = {**self._group.manifest, "outputs": outputs}
            _write_rows(final.temporary, schema, stored, tables(), self.config)
        except BaseException:
            publication.discard()
            raise
        publication.publish()  # the manifest, the errors, and the file last
        staging.discard_all()
        log.info("staged parts published", sink=self.name, run=run_id, parts=count)

    # -- the run ---------------------------------------------------------------------------

    def start(self, manifest: Mapping[str, Any]) -> None:
        self.lock_part()  # one run per destination: refuse before touching anything
        self._group.manifest = manifest
        self._group.clear()  # a fresh run: forget what an interrupted one left behind
        shutil.rmtree(self._parts, ignore_errors=True)

    def _recover(self, manifest: Mapping[str, Any]) -> str | None:
        recovered = self._group.recover(manifest)
        if recovered is None:
            shutil.rmtree(self._parts, ignore_errors=True)
            return None
        cursor, state = recovered
        refuse_a_link(self._parts, "parts folder")
        parts = list(state.parts)
        self._check_parts(parts)
        if state.columns is not None:
            self._layout.adopt(schema_from_text(state.columns), f"the checkpoint of {self._where}")
            self._check_same_columns()
        self._committed = parts
        return cursor

    def write(self, records: Sequence[OutputRecord]) -> None:
        self._check_open()
        self._group.open()
        if not records:
            return
        batch = self._layout.batch(records)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        size = self.config.row_group_size
        if self._pending_rows >= size:
            self._write_pending(whole_groups_only=True)

    def write_error(self, error: DocumentError) -> None:
        self._check_open()
        self._group.open()["errors"].write_json_line(error_line(error))

    def commit(self, cursor: str) -> None:
        self._check_open()
        self._group.open()
        self._write_pending(whole_groups_only=False)
        if self._part is not None:
            self._committed.append(self._part.close())
            self._part = None
            fsync_directory(self._parts)
        schema = self._layout.schema
        columns = None if schema is None else schema_to_text(schema)
        self._group.commit(cursor, ParquetState(parts=list(self._committed), columns=columns))

    def close(self, complete: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        if self.untouchable:  # another run owns the destination, or a resume was refused
            self.unlock_part()
            return
        try:
            if complete:
                self._publish()
            else:
                self._abandon()
        finally:
            self.unlock_part()

    def _publish(self) -> None:
        """The committed parts and what is held, as one file (a part: inside its directory)."""
        self._group.open()
        self._write_pending(whole_groups_only=False)
        if self._part is not None:
            self._committed.append(self._part.close())
            self._part = None
        final = AtomicFile(self.config.path, purpose="parquet file")
        try:
            self._copy_parts_into(final.temporary)
        except BaseException:
            final.discard()
            raise
        self._group.publish([final])
        shutil.rmtree(self._parts, ignore_errors=True)
        self.after_whole_publish()

    # -- parts -----------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return repr(str(self.config.path))

    def _write_pending(self, *, whole_groups_only: bool) -> None:
        """Write the records held in memory as row groups of the current part."""
        if not self._pending_rows:
            return
        import pyarrow as pa

        size = self.config.row_group_size
        rows = (self._pending_rows // size) * size if whole_groups_only else self._pending_rows
        table = pa.Table.from_batches(self._pending)
        if self._part is None:
            own_directory(self._parts)  # a link planted at the name is never followed
            number = len(self._committed)
            while (self._parts / _part_name(number)).exists():  # never reuse a name
                number += 1
            self._part = _Part(self._parts / _part_name(number), table.schema, self.config)
        self._part.write(table.slice(0, rows))
        rest = table.slice(rows)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def _check_parts(self, parts: list[CommittedPart]) -> None:
        """Keep the committed parts (each whole, as recorded) and delete any written after them.

        A part's name is one the checkpoint's schema allows (``part-NNNNN.parquet``), in the
        parts folder; a link or anything but a regular file there is not a part this sink
        wrote, and is refused like a part of another length.
        """
        names = {part.name for part in parts}
        for part in parts:
            path = self._parts / part.name
            size = _regular_size(path)
            if size != part.bytes:
                self._group.abandon()
                found = (
                    "is missing (or not a regular file)" if size is None else f"holds {size} bytes"
                )
                raise UserError(
                    f"cannot resume: the committed part {str(path)!r} of {self._where} {found}, "
                    f"not the {part.bytes} bytes its checkpoint recorded; it was changed after "
                    "the checkpoint. Run again without resuming to start over"
                )
        self._drop_uncommitted(names)

    def _drop_uncommitted(self, names: set[str]) -> None:
        """Delete the parts not among ``names``: written after the last commit."""
        if self._parts.is_dir() and not self._parts.is_symlink():  # never through a link
            for path in self._parts.iterdir():
                if path.name not in names:
                    path.unlink()

    def _check_same_columns(self) -> None:
        layout, config = self._layout, self.config
        wanted = config.metadata_columns
        if layout.text != config.text or (wanted is not None and wanted != layout.metadata_keys):
            self._group.abandon()
            raise UserError(
                f"cannot resume: the rows committed for {self._where} have the columns "
                f"text={layout.text}, metadata={layout.metadata_keys}, but this sink is set to "
                f"text={config.text}, metadata_columns={wanted}; resume with the settings of "
                "the interrupted run, or run again without resuming to start over"
            )

    def _copy_parts_into(self, target: Path) -> None:
        """Every committed part's rows, in order, into one Parquet file at ``target``."""
        import pyarrow.parquet as pq

        schema = self._layout.schema
        if schema is None:  # nothing was written: an empty file of the fixed columns
            schema = self._layout.empty_schema()
        manifest = {**self._group.manifest, "outputs": self._group.outputs()}

        def tables() -> Iterable[pa.Table]:
            for part in self._committed:
                source = pq.ParquetFile(self._parts / part.name)
                for group in range(source.num_row_groups):
                    yield source.read_row_group(group).cast(schema)

        _write_rows(target, schema, manifest, tables(), self.config)

    def _abandon(self) -> None:
        """End without publishing: keep the committed parts for a resume, drop the rest."""
        if self._part is not None:
            self._part.abandon()
            self._part = None
        if self._group.committed:
            self._drop_uncommitted({part.name for part in self._committed})
        else:
            shutil.rmtree(self._parts, ignore_errors=True)
        self._group.abandon()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("parquet sink: write after close")


def _write_rows(
    target: Path,
    schema: pa.Schema,
    manifest: Mapping[str, Any],
    tables: Iterable[pa.Table],
    config: ParquetSinkConfig,
) -> None:
    """``tables`` (of ``schema``), in order, as one Parquet file in row groups of the config's size.

    The manifest goes into the file's key-value metadata.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = schema.with_metadata(
        {**(schema.metadata or {}), MANIFEST_KEY: json.dumps(dict(manifest), default=str)}
    )
    size = config.row_group_size
    with pq.ParquetWriter(str(target), schema, **_writer_options(schema, config)) as out:
        pending: list[pa.RecordBatch] = []
        held = 0
        for table in tables:
            pending.extend(table.cast(schema).to_batches())
            held += table.num_rows
            while held >= size:
                rows = pa.Table.from_batches(pending, schema)
                out.write_table(rows.slice(0, size), row_group_size=size)
                rest = rows.slice(size)
                pending, held = rest.to_batches(), rest.num_rows
        if held:
            out.write_table(pa.Table.from_batches(pending, schema), row_group_size=size)


def _part_name(number: int) -> str:
    return f"part-{number:05d}.parquet"


def _writer_options(schema: pa.Schema, config: ParquetSinkConfig) -> dict[str, Any]:
    """Dictionary pages for the repetitive columns; the vectors' bytes split for compression.

    Dictionary-encoding float vectors only costs time; split byte streams compress
    them about a tenth smaller and write several times faster (measured on 384-wide
    vectors, zstd).
    """
    dictionary = [ID, *([TEXT] if TEXT in schema.names else [])]
    if METADATA in schema.names:
        dictionary += [f"{METADATA}.{field.name}" for field in schema.field(METADATA).type]
    return {
        "compression": config.compression,
        "use_dictionary": dictionary,
        "use_byte_stream_split": [f"{EMBEDDING}.list.element"],
    }


class _Part:
    """One part being written: a Parquet file in the parts folder, complete once closed."""

    def __init__(self, path: Path, schema: pa.Schema, config: ParquetSinkConfig) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self.rows = 0
        self.size = config.row_group_size
        self.writer: pq.ParquetWriter = pq.ParquetWriter(
            str(path), schema, **_writer_options(schema, config)
        )

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.writer.write_table(table, row_group_size=self.size)
            self.rows += table.num_rows

    def close(self) -> CommittedPart:
        """Write the footer and make the file durable; what the checkpoint records of it."""
        self.writer.close()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return CommittedPart(name=self.path.name, rows=self.rows, bytes=self.path.stat().st_size)

    def abandon(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        self.path.unlink(missing_ok=True)
