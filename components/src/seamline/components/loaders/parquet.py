"""``parquet``: one document per row of one or many Parquet files.

Files are those ``path`` names — one file or a glob pattern — in sorted path order,
and rows come in file order, so the order is the same on every run. A path that exists
as written is that file even when its name holds ``*``, ``?`` or ``[`` (``runs[1]/``):
read as a pattern it named other files (:func:`~seamline.contracts.loader.input_glob_names`).
Reading goes row group by row group, ``batch_rows`` rows at a time and only the configured
columns, so memory holds one batch whatever the files' size.

The unit of sharding is the row group, the unit a Parquet reader can fetch on its
own: the row groups of all files, in order, are numbered 0, 1, 2, ... and shard
``index`` of ``count`` reads those whose number is ``index`` modulo ``count``
(:meth:`Shard.owns`). Shards are therefore disjoint and together complete, and a
shard never opens another shard's data pages.

A cursor names the file, the row group and the row in it (``data/a.parquet#3:17``),
so resuming skips straight to that row group. A row whose id or text is null or
of the wrong type, or that holds a value with no Python equivalent (a nanosecond
timestamp between microseconds, a date past year 9999), becomes a
:class:`DocumentError` with its reason, as does a file that is not Parquet at all or a
row group that cannot be decoded: one bad row does not end the run. A ``path`` that
matches nothing (or only files with no rows), or a column that is not in a file, is the
pipeline's mistake and is raised as a :class:`UserError`.

The promises the other loaders keep hold here too:

- **One row per id.** The first row that carries an id keeps it; a later row with the
  same id becomes an error record naming the first (:mod:`._seen_ids`). So that every
  shard and every resume agrees on which row is first, the id column of every row
  group before a shard's own (and of its own, before its rows) is read, in order;
  only that column, so a shard still decodes no other shard's texts.
- **Bounded rows.** ``max_bytes`` bounds a row's id, text and metadata, uncompressed,
  and is enforced before a value becomes a Python string (:mod:`._parquet_rows`).
- **A fingerprinted input.** ``path`` is typed :data:`~seamline.contracts.InputGlob`,
  so the host fingerprints the files it matches (listed by the same
  :func:`~seamline.contracts.input_glob_files` the loader reads them with), and
  ``--resume`` after a file was added, removed or changed is refused, naming them.
"""

from __future__ import annotations

import errno
import glob
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from seamline.components.loaders import _count
from seamline.components.loaders import _parquet_rows as rows
from seamline.components.loaders._blank import blank_reason, is_blank, skip_empty_field
from seamline.components.loaders._listing import pattern_start, refuse_unlistable
from seamline.components.loaders._seen_ids import SeenIds
from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    InputGlob,
    Loaded,
    Loader,
    Shard,
    UserError,
    input_glob_files,
)
from seamline.contracts.json_safe import name_text
from seamline.contracts.loader import input_glob_names
from seamline.contracts.untrusted import cut, is_count, kind_of

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import pyarrow as pa
    import pyarrow.parquet as pq

_WHOLE = Shard()
"""The default shard: all of the input."""
_ALL = "*"
"""In a cursor, in place of a row (or a row group): all of it, for what could not be read."""

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
"""10 MiB, as the other loaders: far above any text a model reads whole."""

_ROW_BITS = 64
"""A row's place, for the ids it is remembered by: its row group's number (counted over
every file) shifted left by this many bits, plus its row within the group (a Parquet row
group counts its rows in 64 bits, so no two places can share a number)."""


class ParquetLoaderConfig(ComponentConfig):
    """The ``with:`` block of the ``parquet`` loader."""

    path: InputGlob = Field(
        description="A Parquet file, or a glob pattern matching several ('data/*.parquet', "
        "'data/**/*.parquet'); relative to the working directory. Files are read in sorted "
        "path order. A path that exists as written is that file, even if its name holds *, ? "
        "or [ ('runs[1]/docs.parquet'); in a pattern, bracket them to match them as they are "
        "('runs[[]1]/*.parquet')."
    )
    id_column: str | None = Field(
        default="id",
        description="Column holding each document's id (strings or integers). null: each "
        "row's id is its place, '<file>#<row group>:<row>', the file named by its path from "
        "the folder the pattern starts in (that of the file, for one file): 'sub/a.parquet#0:7' "
        "for 'data/**/*.parquet', however the path is spelled or wherever the run starts.",
    )
    text_column: str = Field(default="text", description="Column holding each document's text.")
    metadata_columns: list[str] = Field(
        default_factory=list, description="Columns copied into each document's metadata."
    )
    batch_rows: int = Field(
        default=1024,
        ge=1,
        description="Rows read at a time within a row group: what the loader holds in memory "
        "(fewer when its rows are large: a batch holds about max_bytes).",
    )
    max_bytes: int | None = Field(
        default=DEFAULT_MAX_BYTES,
        description="Largest row to read, in bytes of its id, text and metadata uncompressed "
        "(default 10 MiB); a larger row becomes an error record and its text is never copied "
        "into a Python string, and a row group whose columns the file states to decode to "
        "more than twice this a row is set aside without being decoded. Null means no limit.",
    )
    skip_empty: bool = skip_empty_field("rows")
    max_tracked_ids: int = Field(
        default=1_000_000,
        description="How many distinct ids to remember so that a repeated id is refused (the "
        "later row becomes an error record naming the first); about 100 bytes each. Past "
        "it, ids are no longer remembered and a warning says so. 0 turns the check off.",
    )

    @field_validator("max_bytes")
    @classmethod
    def _positive_limit(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"max_bytes must be at least 1 (or null for no limit), not {value}")
        return value

    @field_validator("max_tracked_ids")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"max_tracked_ids must be 0 (no check) or more, not {value}")
        return value

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
    contract_version: ClassVar[str] = "1.1"
    Config = ParquetLoaderConfig
    _names: dict[str, str]
    """Each file's name in ids (:func:`place_names`), set as :meth:`read` lists them."""

    def read(self, *, shard: Shard = _WHOLE, after: str | None = None) -> Iterator[Loaded]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        files = self._files()
        self._names = place_names(self.config.path, files)
        start_file, start_group, last_row = parse_cursor(after, files, self.config.path)
        places: list[tuple[str, int]] = []  # (file, row group) of each row group's number
        seen = self._seen_ids(places)
        position = 0  # the number of the next row group, counted over every file
        for number, path in enumerate(files):
            try:
                if irregular := _irregular(path):  # never opened: a FIFO waits for a writer
                    raise OSError(irregular)
                parquet: pq.ParquetFile | None = pq.ParquetFile(opened(path))
            except (pa.ArrowException, OSError) as err:
                parquet = None
                reason = f"not a readable Parquet file: {err}"
            groups = 1 if parquet is None else parquet.num_row_groups
            first, position = position, position + groups
            places.extend((path, group) for group in range(groups))
            if number < start_file and seen is None:
                continue
            if parquet is None:
                if number >= start_file and shard.owns(first):
                    error = DocumentError(
                        self._names[path], reason, {"file": name_text(path)}, place=True
                    )
                    yield Loaded(f"{path}#{_ALL}", error)
                continue
            check_columns(self.config, path, parquet.schema_arrow)
            for group in range(groups):
                # Every row group's ids are registered in input order, whichever rows this
                # shard or this resume yields: they all agree on which row of an id is first.
                if seen is not None:
                    self._register_ids(parquet, group, first + group, seen)
                if not shard.owns(first + group) or number < start_file:
                    continue
                if number == start_file and start_group is not None and group < start_group:
                    continue
                skip = last_row if number == start_file and group == start_group else None
                yield from self._group(parquet, path, group, first + group, skip, seen)

    def size(self, *, shard: Shard = _WHOLE) -> int | None:
        """The rows of the row groups the shard owns (loader contract 1.1): :func:`footer_rows`."""
        return footer_rows(self.config.path, shard)

    # -- files and cursors -----------------------------------------------------------------

    def _files(self) -> list[str]:
        pattern = self.config.path
        matched = matched_files(pattern)
        if not matched:
            what = "matches no file" if glob.has_magic(pattern) else "does not exist"
            raise UserError(
                f"parquet loader: {pattern!r} {what} (looked in {Path.cwd()}); set 'path' in the "
                "loader's 'with:' block to a Parquet file or a glob pattern such as "
                "data/*.parquet"
            )
        return refuse_no_rows(pattern, matched)

    # -- ids -------------------------------------------------------------------------------

    def _seen_ids(self, places: list[tuple[str, int]]) -> SeenIds | None:
        """The ids read so far; None when ids are the rows' places (unique) or not tracked."""
        config = self.config
        if config.id_column is None or config.max_tracked_ids == 0:
            return None

        def where(place: int) -> dict[str, Any]:
            return {"place": place_text(places, place)}

        return SeenIds(config.max_tracked_ids, self.name, where)

    def _register_ids(
        self, parquet: pq.ParquetFile, group: int, number: int, seen: SeenIds
    ) -> None:
        """Remember the ids of row group ``group`` (number ``number``), reading that column only.

        What this reads depends on the file alone, never on the shard or the cursor, so
        every reader registers the same ids at the same places. An id column too large
        to decode within ``max_bytes`` a row is not read (its rows are set aside), nor is
        an id longer than ``max_bytes``; a column that cannot be decoded is left to the
        row group's owner to report.
        """
        assert self.config.id_column is not None
        size = rows.group_size(parquet, group, [self.config.id_column])
        for row, value in enumerate(self._ids(parquet, group, size)):
            if _usable_id(value):
                seen.first(str(value), place_number(number, row))

    # -- rows ------------------------------------------------------------------------------

    def _group(
        self,
        parquet: pq.ParquetFile,
        path: str,
        group: int,
        number: int,
        skip: int | str | None,
        seen: SeenIds | None,
    ) -> Iterator[Loaded]:
        """The rows of one row group, after row ``skip`` (all of them when it is None)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if skip == _ALL:
            return
        config, limit = self.config, self.config.max_bytes
        columns = read_columns(config)
        size = rows.group_size(parquet, group, columns)
        if rows.refusal(size, limit):
            yield from self._refused(parquet, path, group, size, skip)
            return
        text_type = parquet.schema_arrow.field(config.text_column).type
        row = -1
        try:
            for batch in parquet.iter_batches(
                batch_size=rows.batch_rows(size, limit, config.batch_rows),
                row_groups=[group],
                columns=columns,
            ):
                batch = rows.plain_strings(batch)
                sizes = rows.row_bytes(batch)
                over: list[bool] = [False] * batch.num_rows
                if limit is not None:
                    too_big = pc.greater(sizes, limit)
                    over = too_big.to_pylist()
                    if any(over):
                        keep = {}
                        if config.id_column is not None:
                            ids = rows.value_bytes(batch.column(config.id_column))
                            keep[config.id_column] = pc.less_equal(ids, limit)
                        batch = rows.without_rows(batch, too_big, keep)
                row_sizes = sizes.to_pylist()
                for start, stop in rows.spans(row_sizes, over, limit):
                    values, unconvertible = rows.to_python(batch.slice(start, stop - start))
                    for offset in range(start, stop):
                        row += 1
                        if isinstance(skip, int) and row <= skip:
                            continue
                        fields = {name: values[name][offset - start] for name in columns}
                        where = (path, group, row)
                        item: Document | DocumentError
                        if over[offset]:
                            item = self._too_big(where, fields, row_sizes[offset])
                        elif (why := unconvertible.get(offset - start)) is not None:
                            item = self._unconvertible(where, fields, why)
                        else:
                            item = self._row(where, fields, text_type)
                            if seen is not None and isinstance(item, Document):
                                item = self._unique(item, where, place_number(number, row), seen)
                        yield Loaded(f"{path}#{group}:{row}", item)
        except (pa.ArrowException, OSError) as err:
            reason = f"row group {group} could not be read after row {row}: {err}"
            where_group = {"file": name_text(path), "row_group": group}
            error = DocumentError(f"{self._names[path]}#{group}", reason, where_group, place=True)
            yield Loaded(f"{path}#{group}:{_ALL}", error)

    def _refused(
        self, parquet: pq.ParquetFile, path: str, group: int, size: rows.GroupSize, skip: Any
    ) -> Iterator[Loaded]:
        """Each row of a row group too large to decode, as an error record; no text is read.

        The rows are named by their ids when the id column alone is small enough to read.
        """
        limit = self.config.max_bytes
        reason = (
            f"not read: its row group's columns ({', '.join(size.columns)}) decode to "
            f"{size.total} bytes for {size.rows} rows, more than twice max_bytes={limit} a row, "
            "so a row in it is longer than max_bytes (raise max_bytes to read them)"
        )
        ids = self._ids(parquet, group, size)
        for row in range(size.rows):
            raw_id = next(ids, None)
            if isinstance(skip, int) and row <= skip:
                continue
            yield Loaded(f"{path}#{group}:{row}", self._error((path, group, row), reason, raw_id))

    def _ids(self, parquet: pq.ParquetFile, group: int, size: rows.GroupSize) -> Iterator[Any]:
        """The id column's values in row group ``group``, None for one over ``max_bytes``.

        Nothing when there is no id column, when it is itself too large to decode, or
        where it cannot be decoded.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        column, limit = self.config.id_column, self.config.max_bytes
        if column is None or rows.refusal(size, limit, [column]):
            return
        try:
            for batch in parquet.iter_batches(
                batch_size=rows.batch_rows(size, limit, self.config.batch_rows),
                row_groups=[group],
                columns=[column],
            ):
                batch = rows.plain_strings(batch)
                if limit is not None:
                    over = pc.greater(rows.value_bytes(batch.column(0)), limit)
                    batch = rows.without_rows(batch, over, {})
                yield from rows.column_values(batch.column(0))
        except (pa.ArrowException, OSError):
            return

    def _error(
        self, where: tuple[str, int, int], reason: str, raw_id: Any = None, **more: Any
    ) -> DocumentError:
        """The error record of row ``where``: :func:`row_error`."""
        place = self._place(where)
        unnamed = self.config.id_column is None
        return row_error(where, reason, raw_id, place=place, ids_are_places=unnamed, **more)

    def _place(self, where: tuple[str, int, int]) -> str:
        """Row ``where``'s place, as ids name it: ``a.parquet#0:7`` (:func:`place_names`)."""
        path, group, row = where
        return f"{self._names[path]}#{group}:{row}"

    def _too_big(
        self, where: tuple[str, int, int], fields: dict[str, Any], size: int
    ) -> DocumentError:
        limit = self.config.max_bytes
        raw_id = fields.get(self.config.id_column) if self.config.id_column else None
        reason = (
            f"{size} bytes of id, text and metadata, longer than max_bytes={limit} "
            "(raise max_bytes to read it)"
        )
        return self._error(where, reason, raw_id, bytes=size)

    def _unconvertible(
        self, where: tuple[str, int, int], fields: dict[str, Any], failed: list[tuple[str, str]]
    ) -> DocumentError:
        """The error record of a row holding a value that cannot become a Python object."""
        config = self.config
        raw_id = fields.get(config.id_column) if config.id_column else None
        role = {config.id_column: "id column", config.text_column: "text column"}
        what = "; ".join(
            f"{role.get(name, 'metadata column')} {name!r} holds a value Python cannot "
            f"represent ({why})"
            for name, why in failed
        )
        fix = _unconvertible_fix(failed, config.metadata_columns)
        return self._error(where, f"{what}; {fix}", raw_id, column=failed[0][0])

    def _unique(
        self, document: Document, where: tuple[str, int, int], place: int, seen: SeenIds
    ) -> Document | DocumentError:
        """``document``, or an error record (named by its place) if an earlier row had its id."""
        first = seen.first(document.id, place)
        if first == place:
            return document
        earlier = seen.where(first)["place"]
        error = self._error(
            where,
            f"duplicate id {document.id!r}, first seen at {earlier}; give each row its own id",
        )
        # The id is known and present: the record holds no sync's deletions back.
        return replace(error, duplicate_of=document.id)

    def _row(
        self, where: tuple[str, int, int], fields: dict[str, Any], text_type: pa.DataType
    ) -> Document | DocumentError:
        """One row as a document, or as the record of why it is not one."""
        config = self.config
        if config.id_column is None:
            doc_id = self._place(where)
        else:
            raw_id = fields[config.id_column]
            if not _usable_id(raw_id):
                found = "null" if raw_id is None else f"{raw_id!r} ({type(raw_id).__name__})"
                return self._error(
                    where,
                    f"id column {config.id_column!r} must hold a non-empty string or an integer, "
                    f"found {found}",
                )
            doc_id = str(raw_id)
        text = fields[config.text_column]
        if text is None:
            return self._error(where, f"text column {config.text_column!r} is null", doc_id)
        if not isinstance(text, str):
            return self._error(
                where,
                f"text column {config.text_column!r} must hold strings, found {text_type} "
                f"({type(text).__name__}); set text_column to a string column",
                doc_id,
            )
        if config.skip_empty and is_blank(text):
            skipped = self._error(where, blank_reason(text), doc_id)
            return replace(skipped, stage="skip")
        metadata = {name: fields[name] for name in config.metadata_columns}
        return Document(doc_id, text, metadata)


def read_columns(config: ParquetLoaderConfig) -> list[str]:
    """The columns a row is read from: its id (if any), its text and its metadata."""
    return list(
        dict.fromkeys(
            [
                *([config.id_column] if config.id_column else []),
                config.text_column,
                *config.metadata_columns,
            ]
        )
    )


def place_names(pattern: str, files: Sequence[str]) -> dict[str, str]:
    """Each of ``files`` by its POSIX path from the folder ``pattern`` starts in (that of
    the file, for one file): what names a row's place in an id (``a.parquet#0:7``).

    The path as typed named it before: ``pq/a.parquet``, ``./pq/a.parquet`` and
    ``/home/me/pq/a.parquet`` were three ids for one row, and with ``id_column: null`` an
    ``upsert`` run from another folder, or with the path spelled otherwise, added every
    row again. Cursors keep the path as typed: a resume runs with the same settings. The
    name is its bytes read as UTF-8 (:func:`name_text`), so it is one id under every locale.
    """
    base = Path(pattern).parent if os.path.lexists(pattern) else pattern_start(pattern)[0]
    start = os.path.abspath(base)
    return {
        path: name_text(Path(os.path.relpath(os.path.abspath(path), start)).as_posix())
        for path in files
    }


def row_error(
    where: tuple[str, int, int],
    reason: str,
    raw_id: Any,
    *,
    place: str,
    ids_are_places: bool,
    **more: Any,
) -> DocumentError:
    """The error record of row ``where``: named by its id when usable, else by its place,
    marked as one (:attr:`DocumentError.place`) unless places are the ids (no id column)."""
    path, group, row = where
    usable = _usable_id(raw_id)
    doc_id = str(raw_id) if usable else place
    metadata = {"file": name_text(path), "row_group": group, "row": row, **more}
    reason = f"row {row} of row group {group}: {reason}"
    return DocumentError(doc_id, reason, metadata, place=not usable and not ids_are_places)


def _usable_id(value: Any) -> bool:
    """Whether a column value can be a document's id: a non-empty string, or an integer.

    bool is an int in Python but never a sensible id; floats, nulls and containers would
    stringify into ids that are not stable or not meaningful.
    """
    return not isinstance(value, bool) and isinstance(value, str | int) and value != ""


# -- cursors, places and columns: plain functions of their arguments -----------------------


def parse_cursor(
    after: str | None, files: Sequence[str], pattern: str
) -> tuple[int, int | None, int | str | None]:
    """``(file number, row group, row)`` to resume after; ``(0, None, None)``: the start.

    A row of ``"*"`` stands for all of the row group; after a whole file (``#*``),
    reading starts with the next file.
    """
    if after is None:
        return 0, None, None
    path, _, place = after.rpartition("#")
    group_text, _, row_text = place.partition(":")
    valid = bool(path) and (  # isdigit() alone accepted '²', which int() refuses
        place == _ALL or (is_count(group_text) and (is_count(row_text) or row_text == _ALL))
    )
    if not valid:
        raise UserError(
            f"parquet loader cannot resume after {cut(after)!r}: its cursors are "
            "'<file>#<row group>:<row>'; the checkpoint was not written by this loader"
        )
    if path not in files:
        raise UserError(
            f"parquet loader cannot resume after {cut(after)!r}: {cut(path)!r} is no longer among "
            f"the files {pattern!r} matches. The input changed since the checkpoint "
            "was written; restore it or start the run afresh"
        )
    if place == _ALL:
        return files.index(path) + 1, None, None
    row: int | str = _ALL if row_text == _ALL else int(row_text)
    return files.index(path), int(group_text), row


def matched_files(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted; a folder it would look into and cannot list
    is refused (:mod:`._listing`). A match that is no regular file (a link to a file gone,
    a FIFO) is kept, to be its error record as in the text-files loader: left out, its
    documents were deleted by a sync."""
    start, parts = pattern_start(pattern)
    if glob.has_magic(pattern) and not os.path.lexists(pattern) and start.is_dir():
        refuse_unlistable(start, parts, "parquet", hidden=False)
    matched = input_glob_files(pattern)
    return sorted({*matched, *filter(_irregular, input_glob_names(pattern))})


def _irregular(path: str) -> str:
    """What ``path`` is when it is neither a folder nor a regular file ("" otherwise)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a link to a file that does not exist" if os.path.islink(path) else ""
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symbolic link loop (following its links leads back round to it)"
        return f"cannot be looked at ({err.strerror or err})"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return ""
    return f"{kind_of(mode)}, not a regular file"


def refuse_no_rows(pattern: str, files: list[str]) -> list[str]:
    """``files``, unless their footers say they hold no row (a file that is not Parquet
    counts as its error record): as for a path that matches no file, an empty run would
    publish an empty output over the last one (a lancedb sync deletes every row). One
    path named that can hold no Parquet file (``/dev/zero``, a link loop) is said as
    what it is: "matches 1 Parquet file with no rows" was said of it."""
    if files == [pattern] and (irregular := _irregular(pattern)):
        raise UserError(
            f"parquet loader: {pattern!r}: {irregular} (looked in {Path.cwd()}); set "
            "'path' in the loader's 'with:' block to a Parquet file"
        )
    if footer_rows(pattern, _WHOLE) == 0:
        raise UserError(
            f"parquet loader: {pattern!r} matches {len(files)} Parquet "
            f"file{'s' if len(files) > 1 else ''} with no rows (looked in {Path.cwd()}); "
            "nothing was written. Set 'path' in the loader's 'with:' block to files "
            "holding your documents"
        )
    return files


def check_columns(config: ParquetLoaderConfig, path: str, schema: pa.Schema) -> None:
    """Refuse a file without a column the config names, saying which setting to change.

    The file's column names are data, quoted as Python writes them: a name holding a
    newline and ``error: ...`` printed a line of its own under the real one.
    """
    wanted = [config.text_column, *config.metadata_columns]
    if config.id_column is not None:
        wanted.insert(0, config.id_column)
    setting = {config.id_column: "id_column", config.text_column: "text_column"}
    for column in wanted:
        if column not in schema.names:
            fix = setting.get(column, "metadata_columns")
            raise UserError(
                f"parquet loader: {path!r} has no column {column!r} (its columns: "
                f"{', '.join(map(repr, schema.names))}); set {fix} in the loader's 'with:' "
                "block to one of them"
            )


def place_number(number: int, row: int) -> int:
    return (number << _ROW_BITS) | row


def place_text(places: list[tuple[str, int]], place: int) -> str:
    path, group = places[place >> _ROW_BITS]
    return f"{path}#{group}:{place & ((1 << _ROW_BITS) - 1)}"


def opened(path: str) -> pa.NativeFile:
    """``path`` opened for pyarrow by the bytes of its name, as Python listed it.

    Given the name as text, pyarrow encodes it as UTF-8, not with the locale's encoding
    Python decoded it with: under an ISO-8859-1 locale ``straße.parquet``, listed as the
    ISO-8859-1 reading of its bytes, named no file (its rows became one error record), and
    a name that is not UTF-8 ended the run with a UnicodeEncodeError. Closed when pyarrow
    lets it go, as a file pyarrow opens itself is.
    """
    import pyarrow as pa

    return pa.OSFile(os.fsencode(path))


def footer_rows(pattern: str, shard: Shard) -> int | None:
    """The rows of the row groups ``shard`` owns in the files ``pattern`` matches, from the
    files' footers alone (no data page is read); a file that is not Parquet, or a match
    that is no regular file (a FIFO, a link loop), counts as its one error record. None
    when nothing matches, or past :data:`~._count.LIMIT` files or :data:`~._count.SECONDS`
    of counting."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = _count.bounded(input_glob_names(pattern))
    if not files:
        return None
    deadline = _count.Deadline()
    total = position = 0
    for path in sorted(f for f in files if os.path.isfile(f) or _irregular(f)):
        if deadline.passed:
            return None
        if _irregular(path):  # its error record, as read() yields one: never opened
            total += int(shard.owns(position))
            position += 1
            continue
        try:
            footer = pq.read_metadata(opened(path))
        except (pa.ArrowException, OSError):
            total += int(shard.owns(position))
            position += 1
            continue
        for group in range(footer.num_row_groups):
            if shard.owns(position + group):
                total += footer.row_group(group).num_rows
        position += footer.num_row_groups
    return total


def _unconvertible_fix(failed: list[tuple[str, str]], metadata_columns: Sequence[str]) -> str:
    """What to do about the values of a row that could not become Python (``failed``:
    ``(column, why)``): text that is not UTF-8 is the writer's to mend, a type Python has no
    equivalent of is cast, and a metadata column can be left out."""
    if all(why.startswith("UnicodeDecodeError") for _, why in failed):
        return "write the column's strings as UTF-8, as Parquet requires"
    fix = "cast the column to a type Python holds (a microsecond timestamp, a string)"
    if all(name in metadata_columns for name, _ in failed):
        fix += " or leave it out of metadata_columns"
    return fix
