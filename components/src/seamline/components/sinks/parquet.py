"""``parquet``: one row per output in a Parquet file, readable by every data tool as it is.

The columns are those of :mod:`._columns` (id, window, span, text, metadata, and
the embedding as a fixed-size list of float32), written with pyarrow in row groups
of ``row_group_size`` rows. Memory holds at most one row group's worth of records.

The lifecycle (lock, checkpoint, errors file, publication) is the sink kit's
(:class:`~seamline.contracts.sink_kit.PublishingSink`). A Parquet file cannot be
appended to — its footer, which says where every row group is, comes last — so a run
writes *parts*: complete Parquet files (:mod:`._parquet_files`) in the kit's hidden
folder beside the output, ``.<name>.partial.tmp/``. Each commit closes the part
being written, makes it durable, and records the list of parts (their rows and
bytes), the schema and the loader cursor in the checkpoint.
Recovering keeps exactly the parts the checkpoint lists, deletes any written after
it, and writes on in a new part: resume continues after the last committed row
group. Publishing copies the parts' rows into one file under a temporary name, in
row groups of ``row_group_size`` again whatever the checkpoints cut, and renames
it into place after the manifest and the errors file; the copy costs about what
writing the parts did. The run's manifest is also stored in the file's key-value
metadata (``seamline.manifest``), so the file alone says what made it.

**Staged parts** (sink contract 1.3, a run split into shards; the sink kit's).
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

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from seamline.components.sinks._columnar import ColumnarConfig, ColumnarSink
from seamline.components.sinks._columns import SchemaText, checked_chunk
from seamline.components.sinks._parquet_files import (
    CommittedPart,
    Compression,
    PartWriter,
    part_name,
    regular_size,
    write_rows,
)
from seamline.components.sinks._unify import conformed, unified_schema
from seamline.contracts import OutputRecord, UserError
from seamline.contracts.logs import get_logger
from seamline.contracts.manifest import REWRITE
from seamline.contracts.readback import CHUNK_ROWS, Chunk, OutputReader
from seamline.contracts.sink_kit import AtomicFile, SinkState, fsync_directory, publish_staged
from seamline.contracts.stored import first_line

if TYPE_CHECKING:
    import pyarrow as pa

log = get_logger("seamline.components")


class ParquetState(SinkState):
    """What the parquet sink's checkpoint adds: the committed parts and their columns."""

    parts: list[CommittedPart] = Field(default_factory=list)
    columns: SchemaText | None = None
    """The rows' Arrow schema (None before the first row), base64 of its IPC form."""


class ParquetSinkConfig(ColumnarConfig):
    """The ``with:`` block of the ``parquet`` sink: ``path`` is the Parquet file."""

    row_group_size: int = Field(
        default=4096,
        ge=1,
        description="Rows per row group: the unit readers skip and fetch by, and the most "
        "records held in memory before they are written.",
    )
    compression: Compression = Field(
        default="zstd", description="Compression codec of every column."
    )


class ParquetReader(OutputReader):
    """The one Parquet file, a batch of rows at a time, each batch checked as it is read
    (in bulk: :func:`~._columns.checked_chunk`).

    The file is checked against the manifest it was published with, read again each time
    (:meth:`~seamline.contracts.readback.OutputReader.current`): its rows against
    ``outputs.rows`` (the footer's count, before any row is read), and its bytes against
    ``outputs.sha256`` (one sequential read of the file before pyarrow parses it, about
    1.2 ms a MB measured, a tenth of a bulk scan of the same rows). A file rewritten with
    rows dropped, or a value changed, its footer's manifest kept, was searched without a
    word. Not checked for an output from before they were kept.
    """

    primary: ClassVar[str] = "parquet"

    def chunks(self, dimension: int | None) -> Iterator[Chunk]:
        reader = self.current()
        assert isinstance(reader, ParquetReader)
        return reader._batches(dimension)

    def _batches(self, dimension: int | None) -> Iterator[Chunk]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.file("parquet")
        with self.open("parquet") as handle:
            try:
                digest = file_sha256(handle) if "parquet" in self.sha256 else None
                source = pq.ParquetFile(handle)
                self.check_count("parquet", source.metadata.num_rows)
                if digest is not None:
                    self.check_sha256("parquet", digest)
                seen = 0
                for batch in source.iter_batches(batch_size=CHUNK_ROWS):
                    vectors, rows = checked_chunk(batch, f"{path}: row", seen, dimension)
                    seen += len(rows)
                    if rows:
                        dimension = vectors.shape[1]
                        yield vectors, rows
            except (pa.ArrowException, OSError, ValueError) as err:
                raise UserError(
                    f"{path}: not Parquet as the parquet sink writes it ({first_line(err)})"
                    f"{REWRITE}"
                ) from None


def file_sha256(handle: IO[bytes]) -> Any:
    """The sha256 (a ``hashlib`` object) of the file open in ``handle``, read from its start a
    MiB at a time; the handle is left at its start."""
    digest = hashlib.sha256()
    handle.seek(0)
    while block := handle.read(1 << 20):
        digest.update(block)
    handle.seek(0)
    return digest


class ParquetSink(ColumnarSink[ParquetSinkConfig]):
    """Writes records as rows of a Parquet file, in row groups, published whole."""

    name: ClassVar[str] = "parquet"
    contract_version: ClassVar[str] = "1.6"
    Config = ParquetSinkConfig
    State = ParquetState
    primary: ClassVar[str] = "parquet"
    reader = ParquetReader

    def __init__(self, config: ParquetSinkConfig) -> None:
        super().__init__(config)
        self._committed: list[CommittedPart] = []
        """The parts the last commit recorded."""
        self._part: PartWriter | None = None

    # -- the hooks of the kit's lifecycle ----------------------------------------------------

    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        held = self.hold(records)
        size = self.config.row_group_size
        if held >= size:
            self._write_held((held // size) * size)  # whole row groups only

    def commit_rows(self) -> ParquetState:
        if self._close_part():
            fsync_directory(self.store)
        return ParquetState(parts=list(self._committed), columns=self.columns())

    def restore(self, state: ParquetState) -> None:
        self.resumed_store("parts folder")
        parts = list(state.parts)
        self._check_parts(parts)
        if state.columns is not None:
            self.adopt_columns(state.columns)
        self._committed = parts

    def committed_outputs(self) -> int | None:
        """The rows of the committed parts (each part's bytes checked on restore)."""
        return sum(part.rows for part in self._committed)

    def finish(self) -> Sequence[AtomicFile]:
        """The committed parts and what is held, as one file (a part: inside its directory)."""
        self._close_part()
        self._count_rows(sum(part.rows for part in self._committed))
        final = AtomicFile(self.config.path, purpose="parquet file")
        try:
            self._copy_parts_into(final.temporary)
            self._digest(final)
        except BaseException:
            final.discard()
            raise
        return [final]

    def _count_rows(self, rows: int) -> None:
        """Record the rows about to be published (``outputs.rows``), before the file is
        written: its footer's manifest says them as the manifest beside it does."""
        self._group.details["rows"] = {self._published_name(): rows}

    def _digest(self, final: AtomicFile) -> None:
        """Record the sha256 of the file written (``outputs.sha256``), in the manifest beside
        it only: a file's footer cannot hold its own digest. One read of what was just
        written, the sink's own file, through its open descriptor."""
        self._group.details["sha256"] = {
            self._published_name(): file_sha256(final.file).hexdigest()
        }

    def _published_name(self) -> str:
        """The file's name as the manifest's ``outputs.files`` gives it (the key of its
        count and its sha256)."""
        name: str = self._group.outputs()["files"][self.primary]
        return name

    def published(self) -> None:
        self.drop_store()

    def abandon_rows(self) -> None:
        """Keep the committed parts for a resume, drop the rest."""
        if self._part is not None:
            self._part.abandon()
            self._part = None
        if self.committed:
            self._drop_uncommitted({part.name for part in self._committed})
        else:
            self.drop_store()

    # -- parts -------------------------------------------------------------------------------

    def _write_held(self, rows: int | None = None) -> None:
        """Write the first ``rows`` records held (all if None) as row groups of the current part."""
        table = self.take_held(rows)
        if table is None:
            return
        if self._part is None:
            store = self.make_store()  # a link planted at the name is never followed
            number = len(self._committed)
            while (store / part_name(number)).exists():  # never reuse a name
                number += 1
            config = self.config
            self._part = PartWriter(
                store / part_name(number), table.schema, config.row_group_size, config.compression
            )
        self._part.write(table)

    def _close_part(self) -> bool:
        """Write what is held and close the current part; whether there was one."""
        self._write_held()
        if self._part is None:
            return False
        self._committed.append(self._part.close())
        self._part = None
        return True

    def _check_parts(self, parts: list[CommittedPart]) -> None:
        """Keep the committed parts (each whole, as recorded) and delete any written after them.

        A part's name is one the checkpoint's schema allows (``part-NNNNN.parquet``), in the
        parts folder; a link or anything but a regular file there is not a part this sink
        wrote, and is refused like a part of another length.
        """
        for part in parts:
            path = self.store / part.name
            size = regular_size(path)
            if size != part.bytes:
                found = (
                    "is missing (or not a regular file)" if size is None else f"holds {size} bytes"
                )
                raise UserError(
                    f"cannot resume: the committed part {str(path)!r} of {self._where} {found}, "
                    f"not the {part.bytes} bytes its checkpoint recorded; it was changed after "
                    "the checkpoint. Run again without resuming to start over"
                )
        self._drop_uncommitted({part.name for part in parts})

    def _drop_uncommitted(self, names: set[str]) -> None:
        """Delete the parts not among ``names``: written after the last commit."""
        if self.store.is_dir() and not self.store.is_symlink():  # never through a link
            for path in self.store.iterdir():
                if path.name not in names:
                    path.unlink()

    def _copy_parts_into(self, target: Path) -> None:
        """Every committed part's rows, in order, into one Parquet file at ``target``."""
        import pyarrow.parquet as pq

        schema = self._layout.schema or self._layout.empty_schema()  # no rows: no metadata

        def tables() -> Iterable[pa.Table]:
            for part in self._committed:
                source = pq.ParquetFile(self.store / part.name)
                for group in range(source.num_row_groups):
                    yield source.read_row_group(group).cast(schema)

        config = self.config
        write_rows(
            target, schema, self.manifest_for(), tables(), config.row_group_size, config.compression
        )

    # -- staged parts ------------------------------------------------------------------------

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Every finished part's rows, in shard order, into the one file at ``path``."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        staging = self.staging()
        parts = staging.finished_parts(run_id, count)
        labelled = [(f"shard {i} of {count}", files["parquet"]) for i, files in enumerate(parts)]
        with_rows = [(label, path) for label, path in labelled if pq.read_metadata(path).num_rows]
        schemas = [(label, pq.read_schema(path)) for label, path in with_rows]
        schema = unified_schema(self.name, schemas, text=self.config.text)
        if schema is None:  # no part has a row: an empty file of the fixed columns
            schema = self._layout.empty_schema()
        self.manifest = {**manifest, "run_id": run_id}
        self._count_rows(sum(pq.read_metadata(path).num_rows for _, path in with_rows))

        def tables() -> Iterable[pa.Table]:
            for label, path in with_rows:
                source = pq.ParquetFile(path)
                for group in range(source.num_row_groups):
                    batches = source.read_row_group(group).to_batches()
                    yield pa.Table.from_batches(
                        [conformed(b, schema, self.name, label) for b in batches], schema
                    )

        final = AtomicFile(self.config.path, purpose="parquet file")
        files = [final]
        try:
            config = self.config
            write_rows(
                final.temporary,
                schema,
                self.manifest_for(run_id),
                tables(),
                config.row_group_size,
                config.compression,
            )
            self._digest(final)  # then the manifest, which records it
            files.insert(0, self.merged_errors(parts))
            written = self.manifest_file(run_id)
        except BaseException:
            for atomic in files:
                atomic.discard()
            raise
        # The errors, the file, then the manifest last; the parts stay until it is out.
        publish_staged(staging.root, run_id, files, written)
        staging.discard_all()
        log.info("staged parts published", sink=self.name, run=run_id, parts=count)
