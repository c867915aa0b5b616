"""One schema for the parts of a staged run, and each part's rows converted to it.

Every part of a run split into shards fixes its columns as a whole run does (see
:mod:`._columns`): from its own first records. So two parts can disagree: a
metadata key one part saw and another did not, or a key whose first values were
integers in one part and missing (a string column) in another. The parquet and
lancedb sinks publish one file or one table, of one schema, so the driver merges
the parts' schemas before it copies their rows:

- the metadata fields are every part's, in order of first appearance (shard order);
  a part without a field gets nulls there;
- a field of one type in every part keeps it; a field that is a string anywhere
  becomes a string everywhere (the other parts' values as their text, as a whole run
  writes a value of another type into a string field), at any depth: a list's items,
  a struct's fields one by one (:func:`merged_kind`); int64 and uint64 (a part that
  saw an integer above int64's range) become a string too, their digits, as a whole
  run stores integers no one 64-bit type holds; integers and floats become floats;
  any other mix is refused with the key, the parts and their types;
- the vectors must have one width (one model wrote them all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from seamline.components.sinks._columns import EMBEDDING, METADATA, TEXT, RowLayout
from seamline.components.sinks._metadata_types import has_text, with_texts
from seamline.contracts import ContractViolation, UserError

if TYPE_CHECKING:
    import pyarrow as pa


def unified_schema(
    sink: str, schemas: Sequence[tuple[str, pa.Schema]], *, text: bool
) -> pa.Schema | None:
    """The one schema every ``(label, schema)`` part's rows fit; None when there is no part.

    ``label`` names the part in errors (``shard 1 of 4``).
    """
    import pyarrow as pa

    if not schemas:
        return None
    dims = {label: int(schema.field(EMBEDDING).type.list_size) for label, schema in schemas}
    if len(set(dims.values())) > 1:
        raise ContractViolation(
            f"{sink} sink: the staged parts hold vectors of different widths ({dims}); "
            "one model must write every part"
        )
    seen: dict[str, list[tuple[str, pa.DataType]]] = {}
    for label, schema in schemas:
        if METADATA in schema.names:
            for field in schema.field(METADATA).type:
                seen.setdefault(field.name, []).append((label, field.type))
    fields = [pa.field(key, _merged_type(sink, key, types)) for key, types in seen.items()]
    has_text = text and any(TEXT in schema.names for _, schema in schemas)
    layout = RowLayout(sink, text=has_text, metadata_keys=list(seen))
    return layout.schema_of(fields, next(iter(dims.values())))


def _merged_type(sink: str, key: str, types: Sequence[tuple[str, pa.DataType]]) -> pa.DataType:
    merged = merged_kind([kind for _, kind in types])
    if merged is not None:
        return merged
    found = ", ".join(f"{label}: {kind}" for label, kind in types)
    raise UserError(
        f"{sink} sink: metadata {key!r} has values of different types in the staged parts "
        f"({found}), which one output cannot hold. Give the key values of one type in the "
        "input, or leave it out by listing the keys to keep in metadata_columns"
    )


def merged_kind(kinds: Sequence[pa.DataType]) -> pa.DataType | None:
    """The one type the values of every type in ``kinds`` fit; None where there is none.

    The rule of the module applies at every depth: a part that one part's first batch left
    empty (a list empty in every record, a struct field always null) is a string there
    (:mod:`._metadata_types`), so ``list<int64>`` and ``list<string>`` merge into
    ``list<string>``, and structs field by field. Only top-level types were merged, and
    such a run stopped asking for values of one type that already were.
    """
    import pyarrow as pa

    kinds = list(dict.fromkeys(kinds))
    if len(kinds) == 1:
        return kinds[0]
    if any(pa.types.is_string(kind) for kind in kinds):
        return pa.string()
    if all(pa.types.is_integer(kind) for kind in kinds):
        return pa.string()  # signed and unsigned: no 64-bit integer type holds both
    if all(pa.types.is_integer(kind) or pa.types.is_floating(kind) for kind in kinds):
        return pa.float64()
    if all(pa.types.is_struct(kind) for kind in kinds):
        return _merged_struct(kinds)
    for same, made in ((pa.types.is_list, pa.list_), (pa.types.is_large_list, pa.large_list)):
        if all(same(kind) for kind in kinds):
            value = merged_kind([kind.value_type for kind in kinds])
            return None if value is None else made(kinds[0].value_field.with_type(value))
    return None


def _merged_struct(kinds: Sequence[pa.DataType]) -> pa.DataType | None:
    """Structs merged field by field, each field of any part, in order of first appearance."""
    import pyarrow as pa

    seen: dict[str, list[pa.DataType]] = {}
    for kind in kinds:
        for i in range(kind.num_fields):
            seen.setdefault(kind.field(i).name, []).append(kind.field(i).type)
    fields = {name: merged_kind(types) for name, types in seen.items()}
    if any(kind is None for kind in fields.values()):
        return None
    return pa.struct([(name, kind) for name, kind in fields.items()])


def conformed(batch: pa.RecordBatch, schema: pa.Schema, sink: str, label: str) -> pa.RecordBatch:
    """``batch`` (one part's rows) as rows of ``schema``: columns cast, missing ones null."""
    import pyarrow as pa

    if batch.schema.equals(schema):
        return batch
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            columns.append(pa.nulls(batch.num_rows, field.type))
            continue
        try:
            columns.append(_fitted(batch.column(index), field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
            raise UserError(
                f"{sink} sink: the rows of {label} do not fit the published column "
                f"{field.name!r} ({field.type}): {err}. Give each metadata key values of one "
                "type in the input, or list the keys to keep in metadata_columns"
            ) from err
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _fitted(column: pa.Array, kind: pa.DataType) -> pa.Array:
    """``column`` as ``kind``; a non-string value where ``kind`` has a string part becomes
    its text as in a whole run (:func:`~._metadata_types.with_texts`: a list, an object as
    its JSON text, which a cast cannot make, a NaN as null), other values are cast."""
    import pyarrow as pa

    if has_text(kind) and not column.type.equals(kind):
        try:
            return pa.array([with_texts(value, kind) for value in column.to_pylist()], kind)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass  # an integer beyond int64 for a float part: the cast below holds it
    return column.cast(kind)
