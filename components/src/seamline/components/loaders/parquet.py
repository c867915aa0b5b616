"""``parquet``: one document per row of one or many Parquet files.

Files are those ``path`` names — one file or a glob pattern — in sorted path order,
and rows come in file order, so the order is the same on every run. Reading goes
row group by row group, ``batch_rows`` rows at a time and only the configured
columns, so memory holds one batch whatever the files' size.

The unit of sharding is the row group, the unit a Parquet reader can fetch on its
own: the row groups of all files, in order, are numbered 0, 1, 2, ... and shard
``index`` of ``count`` reads those whose number is ``index`` modulo ``count``
(:meth:`Shard.owns`). Shards are therefore disjoint and together complete, and a
shard never opens another shard's data pages.

A cursor names the file, the row group and the row in it (``data/a.parquet#3:17``),
so resuming skips straight to that row group. A row whose id or text is null or
of the wrong type becomes a :class:`DocumentError` with its reason, as does a file
that is not Parquet at all or a row group that cannot be decoded: one bad row does
not end the run. A ``path`` that matches nothing, or a column that is not in a
file, is the pipeline's mistake and is raised as a :class:`UserError`.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    Loaded,
    Loader,
    Shard,
    UserError,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa
    import pyarrow.parquet as pq

_WHOLE = Shard()
"""The default shard: all of the input."""
_ALL = "*"
"""In a cursor, in place of a row (or a row group): all of it, for what could not be read."""


class ParquetLoaderConfig(ComponentConfig):
    """The ``with:`` block of the ``parquet`` loader."""

    path: str = Field(
        description="A Parquet file, or a glob pattern matching several ('data/*.parquet', "
        "'data/**/*.parquet'); relative to the working directory. Files are read in sorted "
        "path order."
    )
    id_column: str | None = Field(
        default="id",
        description="Column holding each document's id (strings or integers). null: each "
        "row's id is '<file>#<row group>:<row>'.",
    )
    text_column: str = Field(default="text", description="Column holding each document's text.")
    metadata_columns: list[str] = Field(
        default_factory=list, description="Columns copied into each document's metadata."
    )
    batch_rows: int = Field(
        default=1024,
        ge=1,
        description="Rows read at a time within a row group: what the loader holds in memory.",
    )

    @field_validator("path", "text_column")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _distinct_columns(self) -> ParquetLoaderConfig:
        if self.id_column == self.text_column:
            raise ValueError(
                f"id_column and text_column are both {self.text_column!r}; they must differ"
            )
        if "path" in self.metadata_columns:
            # Document.metadata["path"] means "a file whose whole content is the text".
            raise ValueError(
                "metadata_columns may not include 'path': in a document's metadata it names a "
                "file holding the text; rename the column"
            )
        return self


class ParquetLoader(Loader[ParquetLoaderConfig]):
    """Yields each row of one or many Parquet files as a document."""

    name: ClassVar[str] = "parquet"
    contract_version: ClassVar[str] = "1.0"
    Config = ParquetLoaderConfig

    def read(self, *, shard: Shard = _WHOLE, after: str | None = None) -> Iterator[Loaded]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = self._files()
        start_file, start_group, last_row = self._parse_cursor(after, files)
        position = 0  # the number of the next row group, counted over every file
        for number, path in enumerate(files):
            try:
                parquet: pq.ParquetFile | None = pq.ParquetFile(path)
            except (pa.ArrowException, OSError) as err:
                parquet = None
                reason = f"not a readable Parquet file: {err}"
            groups = 1 if parquet is None else parquet.num_row_groups
            first, position = position, position + groups
            if number < start_file:
                continue
            if parquet is None:
                if shard.owns(first):
                    yield Loaded(f"{path}#{_ALL}", DocumentError(path, reason, {"file": path}))
                continue
            self._check_columns(path, parquet.schema_arrow)
            for group in range(groups):
                if not shard.owns(first + group):
                    continue
                if number == start_file and start_group is not None and group < start_group:
                    continue
                skip = last_row if number == start_file and group == start_group else None
                yield from self._group(parquet, path, group, skip)

    # -- files and cursors -----------------------------------------------------------------

    def _files(self) -> list[str]:
        pattern = self.config.path
        matched = sorted(p for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
        if not matched:
            what = "matches no file" if glob.has_magic(pattern) else "does not exist"
            raise UserError(
                f"parquet loader: {pattern!r} {what} (looked in {Path.cwd()}); set 'path' in the "
                "loader's 'with:' block to a Parquet file or a glob pattern such as "
                "data/*.parquet"
            )
        return matched

    def _parse_cursor(
        self, after: str | None, files: Sequence[str]
    ) -> tuple[int, int | None, int | str | None]:
        """``(file number, row group, row)`` to resume after; ``(0, None, None)``: the start.

        A row of ``"*"`` stands for all of the row group; after a whole file (``#*``),
        reading starts with the next file.
        """
        if after is None:
            return 0, None, None
        path, _, place = after.rpartition("#")
        group_text, _, row_text = place.partition(":")
        valid = bool(path) and (
            place == _ALL or (group_text.isdigit() and (row_text.isdigit() or row_text == _ALL))
        )
        if not valid:
            raise UserError(
                f"parquet loader cannot resume after {after!r}: its cursors are "
                "'<file>#<row group>:<row>'; the checkpoint was not written by this loader"
            )
        if path not in files:
            raise UserError(
                f"parquet loader cannot resume after {after!r}: {path!r} is no longer among the "
                f"files {self.config.path!r} matches. The input changed since the checkpoint "
                "was written; restore it or start the run afresh"
            )
        if place == _ALL:
            return files.index(path) + 1, None, None
        row: int | str = _ALL if row_text == _ALL else int(row_text)
        return files.index(path), int(group_text), row

    def _check_columns(self, path: str, schema: pa.Schema) -> None:
        config = self.config
        wanted = [config.text_column, *config.metadata_columns]
        if config.id_column is not None:
            wanted.insert(0, config.id_column)
        setting = {config.id_column: "id_column", config.text_column: "text_column"}
        for column in wanted:
            if column not in schema.names:
                fix = setting.get(column, "metadata_columns")
                raise UserError(
                    f"parquet loader: {path!r} has no column {column!r} (its columns: "
                    f"{', '.join(schema.names)}); set {fix} in the loader's 'with:' block to "
                    "one of them"
                )

    # -- rows ------------------------------------------------------------------------------

    def _group(
        self, parquet: pq.ParquetFile, path: str, group: int, skip: int | str | None
    ) -> Iterator[Loaded]:
        """The rows of one row group, after row ``skip`` (all of them when it is None)."""
        import pyarrow as pa

        if skip == _ALL:
            return
        config = self.config
        columns = list(
            dict.fromkeys(
                [
                    *([config.id_column] if config.id_column else []),
                    config.text_column,
                    *config.metadata_columns,
                ]
            )
        )
        text_type = parquet.schema_arrow.field(config.text_column).type
        row = -1
        try:
            for batch in parquet.iter_batches(
                batch_size=config.batch_rows, row_groups=[group], columns=columns
            ):
                values = batch.to_pydict()
                for offset in range(batch.num_rows):
                    row += 1
                    if isinstance(skip, int) and row <= skip:
                        continue
                    fields = {name: values[name][offset] for name in columns}
                    yield Loaded(
                        f"{path}#{group}:{row}", self._row(path, group, row, fields, text_type)
                    )
        except (pa.ArrowException, OSError) as err:
            reason = f"row group {group} could not be read after row {row}: {err}"
            where = {"file": path, "row_group": group}
            yield Loaded(f"{path}#{group}:{_ALL}", DocumentError(f"{path}#{group}", reason, where))

    def _row(
        self, path: str, group: int, row: int, fields: dict[str, Any], text_type: pa.DataType
    ) -> Document | DocumentError:
        """One row as a document, or as the record of why it is not one."""
        config = self.config
        place = f"{path}#{group}:{row}"
        where = {"file": path, "row_group": group, "row": row}

        def error(reason: str, doc_id: str = place) -> DocumentError:
            return DocumentError(doc_id, f"row {row} of row group {group}: {reason}", where)

        if config.id_column is None:
            doc_id = place
        else:
            raw_id = fields[config.id_column]
            if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or raw_id == "":
                found = "null" if raw_id is None else f"{raw_id!r} ({type(raw_id).__name__})"
                return error(
                    f"id column {config.id_column!r} must hold a non-empty string or an integer, "
                    f"found {found}"
                )
            doc_id = str(raw_id)
        text = fields[config.text_column]
        if text is None:
            return error(f"text column {config.text_column!r} is null", doc_id)
        if not isinstance(text, str):
            return error(
                f"text column {config.text_column!r} must hold strings, found {text_type} "
                f"({type(text).__name__}); set text_column to a string column",
                doc_id,
            )
        metadata = {name: fields[name] for name in config.metadata_columns}
        return Document(doc_id, text, metadata)
