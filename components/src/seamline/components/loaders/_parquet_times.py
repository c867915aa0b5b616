"""Nanosecond times of a Parquet batch made microseconds, Python's resolution, on the Arrow side.

pyarrow converts a nanosecond value to ``pandas.Timestamp`` when pandas can be imported,
and refuses it otherwise: the parquet sink then cut ``.123456789`` to ``.123456``
without a word, or every row was set aside, depending on what else was installed.
Converted here, before any value becomes Python, the outcome is one: a whole number of
microseconds is that ``datetime`` (``timedelta``, ``time``), any other value sets its
row aside, naming it.

This holds for the times inside a column too (``list<timestamp[ns]>``,
``struct<t: timestamp[ns]>``, a map's keys or items): their column is cast to the same
type with microsecond children, and a row is set aside when one of its times is between
two microseconds. Only the top-level type was looked at, and nested times still went
through pyarrow's pandas-dependent conversion.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

Failed = dict[int, list[tuple[str, str]]]
"""A row of the batch -> each ``(column, why)`` that failed there."""


def microseconds(kind: pa.DataType) -> pa.DataType | None:
    """``kind`` with each nanosecond time type in it (timestamp, duration, time of day, at
    any depth of lists, structs and maps) in microseconds; None where it holds none."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        micro = [microseconds(field.type) for field in fields]
        if all(m is None for m in micro):
            return None
        return pa.struct(
            [f if m is None else f.with_type(m) for f, m in zip(fields, micro, strict=True)]
        )
    if pa.types.is_map(kind):
        key, item = microseconds(kind.key_type), microseconds(kind.item_type)
        if key is None and item is None:
            return None
        return pa.map_(
            kind.key_field.with_type(key or kind.key_type),
            kind.item_field.with_type(item or kind.item_type),
            kind.keys_sorted,
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        value = microseconds(kind.value_type)
        if value is None:
            return None
        element = kind.value_field.with_type(value)
        if pa.types.is_fixed_size_list(kind):
            return pa.list_(element, kind.list_size)
        return (pa.large_list if pa.types.is_large_list(kind) else pa.list_)(element)
    return _leaf(kind)


def _leaf(kind: pa.DataType) -> pa.DataType | None:
    """The microsecond type of a nanosecond time type; None for any other type."""
    import pyarrow as pa

    if getattr(kind, "unit", None) != "ns":
        return None
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", kind.tz)
    if pa.types.is_duration(kind):
        return pa.duration("us")
    return pa.time64("us") if pa.types.is_time64(kind) else None


def whole_microseconds(batch: pa.RecordBatch, failed: Failed) -> pa.RecordBatch:
    """``batch`` with its nanosecond times in microseconds; each row holding a value
    between two microseconds is added to ``failed`` (row: ``(name, why)``)."""
    import pyarrow as pa

    columns = list(batch.columns)
    for i, (name, column) in enumerate(zip(batch.schema.names, columns, strict=True)):
        micro = microseconds(column.type)
        if micro is None:
            continue
        columns[i] = column.cast(micro, safe=False)  # truncated; the rows that lost are failed
        found = _lost(column) if _leaf(column.type) else _lost_inside(column, micro)
        for row, why in found:
            failed.setdefault(row, []).append((name, why))
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _lost(times: pa.Array) -> Iterator[tuple[int, str]]:
    """Each position of ``times`` (a nanosecond time array) whose value is between two
    microseconds, and why, naming the value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    micro = times.cast(_leaf(times.type), safe=False)
    lost = pc.fill_null(pc.not_equal(micro.cast(times.type), times), False)
    nanoseconds = times.cast(pa.int64())
    for row in pc.indices_nonzero(lost).to_pylist():
        yield row, f"{times.type} value {nanoseconds[row]} is between two microseconds"


def _lost_inside(column: pa.Array, micro: pa.DataType) -> Iterator[tuple[int, str]]:
    """Each row of a nested ``column`` with a time between two microseconds, and why.

    A checked cast tells whether any value loses; only then is each row looked into (its
    times gathered with ``take``, so none of another row is counted).
    """
    import pyarrow as pa

    try:
        column.cast(micro)
    except pa.ArrowInvalid:
        pass
    else:
        return
    for row in range(len(column)):
        if not column[row].is_valid:
            continue
        one = column.take([row])
        why = next((why for leaf in _times_in(one) for _, why in _lost(leaf)), None)
        if why is not None:
            yield row, why


def _times_in(array: pa.Array) -> Iterator[pa.Array]:
    """The nanosecond time arrays nested in ``array`` (a fresh one: ``values`` and ``keys``
    do not follow a slice)."""
    import pyarrow as pa

    kind = array.type
    if _leaf(kind) is not None:
        yield array
    elif pa.types.is_struct(kind):
        for i in range(kind.num_fields):
            yield from _times_in(array.field(i))
    elif pa.types.is_map(kind):
        yield from _times_in(array.keys)
        yield from _times_in(array.items)
    elif (
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ):
        yield from _times_in(array.values)
