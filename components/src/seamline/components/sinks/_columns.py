"""Output records as Arrow columns: the one row layout the parquet and lancedb sinks share.

A columnar store has one schema for all of its rows, but records arrive one batch
at a time and their metadata is whatever the loader put there. So the schema is
fixed once — by the first batch written, by a checkpoint being resumed, or by the
table being appended to — and every later batch is converted to it:

================ ================================= ==========================
column           type                              from
================ ================================= ==========================
``id``           string                            ``OutputRecord.doc_id``
``window_index`` int32                             ``OutputRecord.index``
``span_start``   int64                             ``OutputRecord.span[0]``
``span_end``     int64                             ``OutputRecord.span[1]``
``text``         string (only with ``text: true``) ``OutputRecord.text``
``metadata``     struct, one field per key         ``OutputRecord.metadata``
``embedding``    fixed_size_list<float32>[dim]     ``OutputRecord.vector``
================ ================================= ==========================

Metadata is a struct rather than columns of its own so that no key can collide with
the columns above; DuckDB, LanceDB and pandas all read ``metadata.path``. There is no
struct when there are no keys. The window is ``window_index``, not ``window``, which
SQL reserves. The struct's fields are the keys configured, or those of the first
batch; each field's type is inferred from the first batch's values
(:mod:`._metadata_types`: integers as int64, or uint64 when one of them is above
int64's range and none is negative; floats as float64; decimals at their width's full
precision; a key with no value there, values of mixed types, integers no 64-bit type
holds, or an object holding an empty one (``{}``, which Parquet cannot write), as a
string, which keeps every digit, as JSON text; a part no value filled, such as the
items of lists all empty, as a string part). A later value of another type, or an
integer outside the column's range, is refused with the document and the key
rather than cast (pyarrow would silently turn 1.5 into 1, and raises a bare
OverflowError for 2⁶⁴−1 in an int64 column); a non-string value for a string field (or
part) is written as its JSON text. Keys that
first appear after the schema was fixed are not stored: the sink warns once per key.

pyarrow is imported when a sink first needs it, not when the component is
discovered, so that commands which never write a table do not pay for it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import numbers
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import AfterValidator

from seamline.components.sinks._metadata_types import (
    has_text,
    inferred_type,
    is_integer,
    is_text,
    with_texts,
)
from seamline.contracts import ContractViolation, OutputRecord, UserError
from seamline.contracts.json_safe import safe_text
from seamline.contracts.logs import get_logger
from seamline.contracts.manifest import REWRITE
from seamline.contracts.readback import Chunk
from seamline.contracts.sink_kit import checked_vector
from seamline.contracts.stored import (
    LARGEST,
    LONGEST_ID,
    CheckedRows,
    StoredRow,
    check_vectors,
    row_of,
    vector_of,
)
from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    import pyarrow as pa

log = get_logger("seamline.components")

ID, WINDOW, SPAN_START, SPAN_END, TEXT, METADATA, EMBEDDING = (
    "id",
    "window_index",
    "span_start",
    "span_end",
    "text",
    "metadata",
    "embedding",
)
REQUIRED = (ID, WINDOW, SPAN_START, SPAN_END, EMBEDDING)
LAYOUT_KEY = b"seamline.layout"
LAYOUT_VERSION = b"1"


def schema_to_text(schema: pa.Schema) -> str:
    """A schema as text a checkpoint (JSON) can hold: Arrow's own IPC form, base64."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def schema_from_text(text: str) -> pa.Schema:
    import pyarrow as pa

    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def _decodes_to_a_schema(text: str) -> str:
    """An Arrow schema as a checkpoint stores it (base64 of its IPC form) must decode."""
    import pyarrow as pa

    try:
        schema_from_text(text)
    except (binascii.Error, ValueError, pa.ArrowException) as err:
        raise ValueError(f"not an Arrow schema ({type(err).__name__})") from None
    return text


SchemaText = Annotated[str, AfterValidator(_decodes_to_a_schema)]
"""A column layout as a checkpoint of the columnar sinks records it (:func:`schema_to_text`)."""


class RowLayout:
    """Turns batches of :class:`OutputRecord` into Arrow record batches of one schema."""

    def __init__(self, sink: str, *, text: bool, metadata_keys: Sequence[str] | None) -> None:
        self.sink = sink
        self.text = text
        self.metadata_keys = None if metadata_keys is None else list(metadata_keys)
        self.schema: pa.Schema | None = None
        self._ignored: set[str] = set()

    @property
    def dim(self) -> int | None:
        """The vectors' length, once the schema is fixed."""
        if self.schema is None:
            return None
        return int(self.schema.field(EMBEDDING).type.list_size)

    def adopt(self, schema: pa.Schema, where: str) -> None:
        """Write rows of ``schema`` from now on (a resumed checkpoint's, or an existing table's).

        ``where`` names the schema's owner in the error if it is not a layout this
        module writes.
        """
        import pyarrow as pa

        missing = [name for name in REQUIRED if name not in schema.names]
        embedding = schema.field(EMBEDDING) if EMBEDDING in schema.names else None
        if (
            missing
            or embedding is None
            or not pa.types.is_fixed_size_list(embedding.type)
            or embedding.type.value_type != pa.float32()
        ):
            detail = f"no column {missing[0]!r}" if missing else "no float32 'embedding' vectors"
            raise UserError(
                f"{self.sink} sink: {where} was not written by seamline ({detail}; it has "
                f"{', '.join(map(repr, schema.names))}); write to another path, or replace it"
            )
        self.schema = schema
        self.text = TEXT in schema.names
        if METADATA in schema.names:
            self.metadata_keys = [field.name for field in schema.field(METADATA).type]
        else:
            self.metadata_keys = []

    def batch(self, records: Sequence[OutputRecord]) -> pa.RecordBatch:
        """``records`` as one record batch; the first call fixes the schema."""
        import pyarrow as pa

        records = [_utf8_metadata(record) for record in records]
        vectors = [checked_vector(record) for record in records]
        if self.schema is None:
            self.schema = self._first_schema(records, vectors)
        dim = self.dim
        for record, vector in zip(records, vectors, strict=True):
            if vector.shape[0] != dim:
                raise ContractViolation(
                    f"record {record.doc_id!r} window {record.index}: vector has "
                    f"{vector.shape[0]} values but the {self.sink} output's have {dim}"
                )
        schema = self.schema
        columns: dict[str, pa.Array] = {
            ID: pa.array([record.doc_id for record in records], pa.string()),
            WINDOW: pa.array([int(record.index) for record in records], pa.int32()),
            SPAN_START: pa.array([int(record.span[0]) for record in records], pa.int64()),
            SPAN_END: pa.array([int(record.span[1]) for record in records], pa.int64()),
        }
        if TEXT in schema.names:
            columns[TEXT] = pa.array([record.text for record in records], pa.string())
        if METADATA in schema.names:
            columns[METADATA] = self._metadata(records, schema.field(METADATA).type)
        else:  # fixed with no metadata at all: every key is one the output does not store
            self._warn_unstored(records, set())
        matrix = np.stack(vectors).astype(np.float32, copy=False) if vectors else np.zeros(0)
        flat = pa.array(matrix.reshape(-1), pa.float32())
        columns[EMBEDDING] = pa.FixedSizeListArray.from_arrays(flat, dim)
        return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)

    # -- the schema ----------------------------------------------------------------------

    def empty_schema(self) -> pa.Schema:
        """The schema of an output with no rows: no metadata, vectors of length 0."""
        return self.schema_of([], 0)

    def _first_schema(
        self, records: Sequence[OutputRecord], vectors: Sequence[np.ndarray[Any, Any]]
    ) -> pa.Schema:
        import pyarrow as pa

        if not vectors:
            raise ContractViolation(f"{self.sink} sink: the schema needs at least one record")
        keys = self.metadata_keys
        if keys is None:
            keys = list(dict.fromkeys(key for record in records for key in record.metadata))
        metadata = [
            pa.field(key, inferred_type([r.metadata.get(key) for r in records])) for key in keys
        ]
        self.metadata_keys = keys
        return self.schema_of(metadata, int(vectors[0].shape[0]))

    def schema_of(self, metadata: Sequence[pa.Field], dim: int) -> pa.Schema:
        """The layout's columns, with ``metadata`` as the struct's fields and vectors of ``dim``."""
        import pyarrow as pa

        fields = [
            pa.field(ID, pa.string(), nullable=False),
            pa.field(WINDOW, pa.int32(), nullable=False),
            pa.field(SPAN_START, pa.int64(), nullable=False),
            pa.field(SPAN_END, pa.int64(), nullable=False),
        ]
        if self.text:
            fields.append(pa.field(TEXT, pa.string()))
        if metadata:
            fields.append(pa.field(METADATA, pa.struct(list(metadata))))
        fields.append(pa.field(EMBEDDING, pa.list_(pa.float32(), dim), nullable=False))
        return pa.schema(fields, metadata={LAYOUT_KEY: LAYOUT_VERSION})

    # -- metadata ------------------------------------------------------------------------

    def _metadata(self, records: Sequence[OutputRecord], struct: pa.StructType) -> pa.Array:
        import pyarrow as pa

        self._warn_unstored(records, {field.name for field in struct})
        children = [
            _column([record.metadata.get(field.name) for record in records], field, records)
            for field in struct
        ]
        return pa.StructArray.from_arrays(children, fields=list(struct))

    def _warn_unstored(self, records: Sequence[OutputRecord], names: set[str]) -> None:
        """Warn, once per key, of the records' metadata keys the output has no field for."""
        for record in records:
            for key in record.metadata:
                if key not in names and key not in self._ignored:
                    self._ignored.add(key)
                    log.warning(
                        "metadata key not stored",
                        sink=self.sink,
                        key=key,
                        document=record.doc_id,
                        reason="the output's columns were fixed before this key appeared; "
                        "list it in metadata_columns to keep it",
                    )


def _utf8_metadata(record: OutputRecord) -> OutputRecord:
    """``record`` with each lone surrogate in its metadata's strings and keys written as
    its escape text (``\\ud800``), as the jsonl and npy sinks write it (:func:`~seamline.
    contracts.json_safe.safe_text`); ``record`` itself where there is none.

    Arrow strings are UTF-8: a loader's metadata holding one (a third party's; the jsonl
    loader sets such a line aside) failed in pyarrow, and the whole run with it, nothing
    published, where the jsonl and npy sinks wrote the same document.
    """
    metadata = _escaped(record.metadata)
    return record if metadata is record.metadata else dataclasses.replace(record, metadata=metadata)


def _escaped(value: Any) -> Any:
    """``value`` with :func:`safe_text` applied to every string and key in it; ``value``
    itself (the same object) where that changes nothing."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, Mapping):
        pairs = [(_escaped(key), _escaped(item)) for key, item in value.items()]
        same = all(
            new is old and item is was
            for (new, item), (old, was) in zip(pairs, value.items(), strict=True)
        )
        return value if same else dict(pairs)
    if isinstance(value, list | tuple):
        items = [_escaped(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


def _column(values: list[Any], field: pa.Field, records: Sequence[OutputRecord]) -> pa.Array:
    """One metadata field's values as an array of its type; a UserError names a misfit."""
    import pyarrow as pa

    kind = field.type
    if has_text(kind):  # a non-string value of a string part: its JSON text
        values = [with_texts(value, kind) for value in values]
        if is_text(kind):
            return pa.array(values, kind)
    for record, value in zip(records, values, strict=True):
        if value is not None and not _fits(value, kind):
            raise _misfit(field, record, value)
    try:
        return pa.array(values, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
        misfits = ((r, v) for r, v in zip(records, values, strict=True) if not _converts(v, kind))
        record, value = next(misfits, (records[0], values[0]))
        raise _misfit(field, record, value) from err


def _fits(value: Any, kind: pa.DataType) -> bool:
    """Whether ``value`` converts to ``kind`` without losing anything (for numbers and booleans)."""
    import pyarrow as pa

    if pa.types.is_boolean(kind):
        return isinstance(value, bool | np.bool_)
    if pa.types.is_integer(kind):
        if not is_integer(value):
            return False
        limits = integer_limits(kind)
        return bool(limits.min <= int(value) <= limits.max)
    if pa.types.is_floating(kind):
        return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
    if pa.types.is_struct(kind) and isinstance(value, dict):
        # pyarrow drops a key its struct has no field for without a word: refused here.
        fields = {kind.field(i).name: kind.field(i).type for i in range(kind.num_fields)}
        return all(
            key in fields and (item is None or _fits(item, fields[key]))
            for key, item in value.items()
        )
    listed = pa.types.is_list(kind) or pa.types.is_large_list(kind)
    if listed and isinstance(value, list | tuple):
        return all(item is None or _fits(item, kind.value_type) for item in value)
    return True  # other mismatches of nested types: pyarrow itself refuses them


def integer_limits(kind: pa.DataType) -> np.iinfo:
    """The smallest and largest values of an Arrow integer type, as NumPy's ``iinfo``.

    Built from the type's sign and width, not from the Arrow type's ``to_pandas_dtype``
    method: before pyarrow 26 that imports pandas, which seamline does not depend on (the
    parquet and lancedb sinks failed with "No module named 'pandas'" at pyarrow 17 to 25).
    """
    import pyarrow as pa

    sign = "int" if pa.types.is_signed_integer(kind) else "uint"
    return np.iinfo(np.dtype(f"{sign}{kind.bit_width}"))


def _converts(value: Any, kind: pa.DataType) -> bool:
    import pyarrow as pa

    try:
        pa.array([value], kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    return True


def _misfit(field: pa.Field, record: OutputRecord, value: Any) -> UserError:
    import pyarrow as pa

    kind = cut(f"{field.type}")
    if pa.types.is_integer(field.type):
        limits = integer_limits(field.type)
        kind = f"{kind}, {limits.min} to {limits.max}"
    return UserError(
        f"metadata {field.name!r} of document {cut(repr(record.doc_id))} is "
        f"{cut(repr(value))} ({type(value).__name__}), which does not fit the output's "
        f"column metadata.{field.name} of type {kind}: the output's columns are typed from "
        "the values of the first records written (one batch), and there this key's values "
        "all fit that type. Let the first batch hold a value like this one (put such a row "
        "first in the input, or raise run.batch_size), cast the key's column in the input "
        "to one type that holds every value (a string holds any), or leave the key out by "
        "listing the keys to keep in metadata_columns"
    )


# -- reading the layout back ---------------------------------------------------------------

ROW_COLUMNS = (ID, WINDOW, SPAN_START, SPAN_END)
"""The columns a row needs to be read back (with the vector)."""


def stored_rows(columns: dict[str, list[Any]], where: str, first: int = 0) -> list[StoredRow]:
    """Columns of this layout, as read back (``where``: the file), as checked rows; a row's
    null metadata fields are left out, as a record without the key."""
    missing = [name for name in ROW_COLUMNS if name not in columns]
    if missing:
        raise UserError(f"{where.removesuffix(': row')}: no column {', '.join(missing)}{REWRITE}")
    count = len(columns[ID])
    texts = columns.get(TEXT, [None] * count)
    metadata = columns.get(METADATA, [None] * count)
    rows = []
    for i in range(count):
        found = metadata[i]
        row = {
            "id": columns[ID][i],
            "window": columns[WINDOW][i],
            "span": [columns[SPAN_START][i], columns[SPAN_END][i]],
            "text": texts[i],
            "metadata": (
                {k: v for k, v in found.items() if v is not None}
                if isinstance(found, dict)
                else found
            ),
        }
        rows.append(row_of(row, f"{where} {first + i}"))
    return rows


def stored_chunk(
    columns: dict[str, list[Any]], where: str, first: int, dimension: int | None
) -> Chunk:
    """A batch of this layout read back: its vectors (each of ``dimension`` values, or of the
    first one's) and its rows, all checked, or a ``UserError`` at the row."""
    if EMBEDDING not in columns:
        raise UserError(f"{where.removesuffix(': row')}: no column {EMBEDDING}{REWRITE}")
    rows = stored_rows(columns, where, first)
    vectors = []
    for i, values in enumerate(columns[EMBEDDING]):
        vectors.append(vector_of(values, dimension, f"{where} {first + i}"))
        dimension = len(vectors[-1])
    matrix = np.stack(vectors) if vectors else np.zeros((0, dimension or 0), np.float32)
    return matrix, rows


def checked_chunk(batch: pa.RecordBatch, where: str, first: int, dimension: int | None) -> Chunk:
    """A batch of this layout read back, as :func:`stored_chunk` reads its columns, checked
    in bulk: the vectors as one matrix, the rows by their columns' types and ranges, each
    row made a ``StoredRow`` only when asked for (:class:`CheckedRows`). A search of
    300,000 rows spent 20 s of its 27 making and validating one row at a time what a
    few arrays' checks clear; a batch they do not clear (another type, a null, a value out
    of range) is read by :func:`stored_chunk`, which reports the first problem as before.
    """
    vectors = _bulk_vectors(batch)
    if vectors is None or not _rows_clear(batch):
        return stored_chunk(batch.to_pydict(), where, first, dimension)
    if len(vectors):
        if dimension is not None and vectors.shape[1] != dimension:
            check_vectors(vectors[:1], dimension, f"{where} {first}")
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            bad = int(np.argmin(finite))
            check_vectors(vectors[bad : bad + 1], dimension, f"{where} {first + bad}")
    rows = batch.drop_columns([EMBEDDING])

    def build(i: int) -> StoredRow:
        return stored_rows(rows.slice(i, 1).to_pydict(), where, first + i)[0]

    return vectors, CheckedRows(len(vectors), build)


def _bulk_vectors(batch: pa.RecordBatch) -> np.ndarray[Any, Any] | None:
    """The batch's embeddings as a float32 matrix, where they are vectors of floats with no
    null; None otherwise (they are then read one by one, and refused as before)."""
    import pyarrow as pa

    names = batch.schema.names
    if EMBEDDING not in names or len(set(names)) != len(names):
        return None
    column = batch.column(EMBEDDING)
    kind = column.type
    if (
        not pa.types.is_fixed_size_list(kind)
        or not pa.types.is_floating(kind.value_type)
        or column.null_count
    ):
        return None
    values = column.flatten()
    if values.null_count:
        return None
    flat: np.ndarray[Any, Any] = values.to_numpy(zero_copy_only=False).astype(np.float32)
    return flat.reshape(len(column), kind.list_size)


def _rows_clear(batch: pa.RecordBatch) -> bool:
    """Whether every row of ``batch`` is sure to pass :func:`stored_rows`' checks (and its
    columns to convert to Python values): ids strings of at most ``LONGEST_ID`` characters
    (bytes, here: never fewer), windows and spans integers within ``0..LARGEST``, no null
    among them, text strings, every other column of plain types, valid throughout."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    if any(name not in names for name in ROW_COLUMNS):
        return False
    if not all(_plain(field.type) for field in batch.schema if field.name != EMBEDDING):
        return False
    try:
        batch.validate(full=True)
    except pa.ArrowException:
        return False
    ids = batch.column(ID)
    if not _is_text(ids.type) or ids.null_count:
        return False
    if len(ids) and pc.max(pc.binary_length(ids)).as_py() > LONGEST_ID:
        return False
    for name in (WINDOW, SPAN_START, SPAN_END):
        column = batch.column(name)
        if not pa.types.is_integer(column.type) or column.null_count:
            return False
        if len(column):
            low, high = pc.min_max(column).values()
            if low.as_py() < 0 or high.as_py() > LARGEST:
                return False
    return TEXT not in names or _is_text(batch.schema.field(TEXT).type)


def _is_text(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _plain(kind: pa.DataType) -> bool:
    """Whether values of ``kind`` convert to Python's without fail (numbers, booleans,
    strings, and lists and structs of them)."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return all(_plain(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _plain(kind.value_type)
    return bool(
        pa.types.is_null(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or _is_text(kind)
    )
