"""How much of a Parquet row group the ``parquet`` loader may decode, and each row's size.

A Parquet file is compressed, so its size says nothing about what reading it costs:
a 10 KB zstd file can hold a text of 100 million characters. The loader's
``max_bytes`` bounds one row (its id, text and metadata, uncompressed), and pyarrow
offers two places to enforce it before a value becomes a Python string:

- the file's metadata gives each column chunk's uncompressed size, before anything is
  decoded. A row group whose columns decode to more than twice ``max_bytes`` per row
  (plus :data:`OVERHEAD` for Parquet's own page headers, statistics and value lengths)
  must hold a row over the bound, and pyarrow cannot decode part of a page, so such a
  group is not decoded at all (:func:`refusal`): its rows are set aside, named through
  the id column alone when that is small enough to read.
- a decoded batch is still an Arrow array: :func:`row_bytes` measures each row's
  string and binary values there (their lengths, no copy; a dictionary's values by
  each row's index, a view layout once cast to a plain one), and the values of a row
  over the bound are replaced by nulls (:func:`without_rows`) before the batch is
  converted to Python, so an over-long text is never copied into a ``str``.

A group that passes is read a few rows at a time (:func:`batch_rows`), so that a
batch holds about ``max_bytes`` of values on average, whatever the configured
``batch_rows``. The stated size counts each distinct value of a dictionary-encoded
column once, so a batch of one can decode to far more: Arrow then holds it, but it
becomes Python values in runs of about ``max_bytes`` (:func:`spans`). What pyarrow
itself holds is one page more: a page is decoded whole, so a row group that hides one
enormous value among many small ones (within the average) still costs that page
transiently, but never its Python copy.

A batch becomes Python values in one call (:func:`to_python`), its nanosecond times
first made microseconds on the Arrow side, whether pandas is installed or not (a value
between two microseconds sets its row aside: :mod:`._parquet_times`), unless one of its
values has no Python equivalent (a date past ``datetime.date.max``): then each column is
converted on its own, and each value of a column that fails, so that only the rows
holding such a value are set aside.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seamline.components.loaders._parquet_times import whole_microseconds
from seamline.contracts.stored import first_line

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq


OVERHEAD = 1 << 20
"""What a column chunk may hold besides its values, in bytes (page headers, min/max
statistics, 4-byte value lengths, dictionary indices): with the factor 2, a row group
whose every row is within ``max_bytes`` is never refused, even with values of a few bytes."""


@dataclass(frozen=True)
class GroupSize:
    """A row group's size as its metadata states it: rows, and bytes per column read."""

    rows: int
    columns: dict[str, int]
    """Uncompressed bytes of each column chunk read (0 where the file states none)."""

    @property
    def total(self) -> int:
        return sum(self.columns.values())


def group_size(parquet: pq.ParquetFile, group: int, columns: Sequence[str]) -> GroupSize:
    """The stated size of ``columns`` in row group ``group`` (negative values count as 0).

    A nested column (a list, a struct) is stored as several leaf column chunks
    (``tags.list.element``): its size is theirs together.
    """
    meta = parquet.metadata.row_group(group)
    sizes = dict.fromkeys(columns, 0)
    for position in range(meta.num_columns):
        chunk = meta.column(position)
        leaf = chunk.path_in_schema
        for name in columns:
            if leaf == name or leaf.startswith(f"{name}."):
                sizes[name] += max(0, int(chunk.total_uncompressed_size or 0))
    return GroupSize(max(0, int(meta.num_rows)), sizes)


def refusal(size: GroupSize, limit: int | None, columns: Sequence[str] | None = None) -> bool:
    """Whether the group's ``columns`` (all of them by default) must not be decoded."""
    if limit is None:
        return False
    names = size.columns if columns is None else columns
    stated = sum(size.columns.get(name, 0) for name in names)
    return stated > 2 * size.rows * limit + OVERHEAD


def batch_rows(size: GroupSize, limit: int | None, configured: int) -> int:
    """Rows to decode at a time: about ``limit`` bytes of values, at most ``configured``."""
    if limit is None or size.total == 0:
        return configured
    return max(1, min(configured, size.rows * limit // size.total))


def spans(
    sizes: Sequence[int], over: Sequence[bool], limit: int | None
) -> Iterator[tuple[int, int]]:
    """The batch's rows in runs ``[start, stop)`` of about ``limit`` bytes together (one row
    at least; a row over the limit, whose values are nulls by then, counts none), each
    converted to Python on its own.

    :func:`batch_rows` sizes a batch from the row group's stated size, which for a
    dictionary-encoded column counts each distinct value once: 1,024 rows of one
    400 KB text stated 400 KB, so a batch of all of them, 400 MB of values, became
    Python strings at once, against 2 rows a batch for the same file written plain.
    The decoded lengths are known here, so the Python copy stays within ``limit``.
    """
    if limit is None:
        yield 0, len(sizes)
        return
    start, held = 0, 0
    for row, (size, skipped) in enumerate(zip(sizes, over, strict=True)):
        size = 0 if skipped else size
        if row > start and held + size > limit:
            yield start, row
            start, held = row, 0
        held += size
    if start < len(sizes):
        yield start, len(sizes)


def _measured(kind: pa.DataType) -> bool:
    """Whether a value of ``kind`` has a length in bytes that :func:`value_bytes` counts: a
    string or binary, or a dictionary of them (a pandas ``category`` column is saved
    dictionary-encoded). View layouts are made plain first (:func:`plain_strings`).

    A dictionary column counted 0 bytes: a 3 MB text in one passed ``max_bytes=1000000``
    and was embedded.
    """
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return _measured(kind.value_type)
    return bool(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
    )


def _plain(kind: pa.DataType) -> pa.DataType | None:
    """The plain layout of a view type (``string_view``: ``large_string``), also as a
    dictionary's values; None for a type that is not one."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        values = _plain(kind.value_type)
        return None if values is None else pa.dictionary(kind.index_type, values, kind.ordered)
    if pa.types.is_string_view(kind):
        return pa.large_string()
    if pa.types.is_binary_view(kind):
        return pa.large_binary()
    return None


def plain_strings(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its ``string_view`` and ``binary_view`` columns (as Polars and DuckDB
    write them) cast to ``large_string`` and ``large_binary``.

    pyarrow's length, ``if_else`` and ``take`` kernels have no view version, so a view
    column counted 0 bytes: a 3,000-byte text passed ``max_bytes=1000``. The cast copies
    the batch's values once, in Arrow's memory (about ``max_bytes`` for a batch), never
    into Python.
    """
    import pyarrow as pa

    casts = {i: _plain(field.type) for i, field in enumerate(batch.schema)}
    if not any(casts.values()):
        return batch
    columns = [
        column if casts[i] is None else column.cast(casts[i])
        for i, column in enumerate(batch.columns)
    ]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def value_bytes(column: pa.Array) -> pa.Array:
    """Each value's length in bytes (0 for null, and for types not measured per value).

    A dictionary column's values are measured once, in its dictionary, and each row
    takes its index's length: the lengths are gathered, not the values.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not _measured(column.type):
        return pa.array([0] * len(column), pa.int64())
    if pa.types.is_dictionary(column.type):
        lengths = pc.take(value_bytes(column.dictionary), column.indices)
        return pc.fill_null(lengths, 0).cast(pa.int64())
    return pc.fill_null(pc.binary_length(column), 0).cast(pa.int64())


def row_bytes(batch: pa.RecordBatch) -> pa.Array:
    """Each row's string and binary bytes, summed over the batch's columns.

    Nested columns (lists, structs) are not measured per row; the row group's stated
    size bounds them (:func:`refusal`).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    total = pa.array([0] * batch.num_rows, pa.int64())
    for column in batch.columns:
        if _measured(column.type):
            total = pc.add(total, value_bytes(column))
    return total


def without_rows(
    batch: pa.RecordBatch, drop: pa.Array, keep: dict[str, pa.Array]
) -> pa.RecordBatch:
    """``batch`` with every value of the rows in ``drop`` replaced by null.

    ``keep`` maps a column name to the rows where its value survives anyway (the id of
    an over-long row, when the id itself is short: it names the row's error record).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        nulled = drop if name not in keep else pc.and_(drop, pc.invert(keep[name]))
        columns.append(pc.if_else(nulled, pa.nulls(len(column), column.type), column))
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _conversion_errors() -> tuple[type[Exception], ...]:
    """What pyarrow raises for a value it cannot turn into a Python object."""
    import pyarrow as pa

    return (ArithmeticError, LookupError, TypeError, ValueError, pa.ArrowException)


def column_values(
    column: pa.Array, name: str = "", failed: dict[int, list[tuple[str, str]]] | None = None
) -> list[Any]:
    """``column``'s values as Python objects; None for each that has none.

    The column is converted in one call when it can be; otherwise value by value, and
    each value that cannot be is added to ``failed`` (row: ``(name, why)``).
    """
    errors = _conversion_errors()
    values: list[Any]
    try:
        values = column.to_pylist()
    except errors:
        pass
    else:
        return values
    values = []
    for row in range(len(column)):
        try:
            values.append(column[row].as_py())
        except errors as err:
            values.append(None)
            if failed is not None:
                why = f"{type(err).__name__}: {first_line(err)}"
                failed.setdefault(row, []).append((name, why))
    return values


def to_python(
    batch: pa.RecordBatch,
) -> tuple[dict[str, list[Any]], dict[int, list[tuple[str, str]]]]:
    """The batch's values by column, and the rows where a value cannot become Python.

    The second maps a row of the batch to each ``(column, why)`` that failed there (its
    value is None in the first, or the value cut to microseconds); it is empty, and the
    batch converted in one call, when every value can be converted.
    """
    failed: dict[int, list[tuple[str, str]]] = {}
    batch = whole_microseconds(batch, failed)
    try:
        return batch.to_pydict(), failed
    except _conversion_errors():
        pass
    values = {
        name: column_values(column, name, failed)
        for name, column in zip(batch.schema.names, batch.columns, strict=True)
    }
    return values, failed
