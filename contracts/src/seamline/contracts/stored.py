"""The records an output stores, as a reader must take them back: untrusted, checked row by row.

Every first-party sink stores, per record, the document's ``id``, the ``window`` and its
``span``, the vector, the ``metadata`` and (sink contract 1.2) the window's ``text``:
``jsonl`` as one JSON object a line, ``npy`` as a matrix beside such lines, ``parquet``
and ``lancedb`` as columns. A reader (``seamline search``, the sinks' readers) takes
each row through here whatever the format, so that a file edited by hand or by an
attacker ends in one line naming the file and the line (or row) and what is wrong,
never in a traceback, a hang or memory without bound:

- a line is at most :data:`MAX_LINE_BYTES` and must be a JSON object (strict JSON: no
  ``NaN``), whose fields :class:`StoredRow` checks (strictly: ``"3"`` is not a window);
- a vector is a flat list of finite numbers, of the length the reader expects;
- a ``.npy`` matrix is two-dimensional, of floats (never objects: no pickle), and as
  large as its header says.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from json import JSONDecodeError
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal, cast, overload

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from seamline.contracts.errors import UserError
from seamline.contracts.manifest import REWRITE
from seamline.contracts.untrusted import LineTooLong, bounded_lines, strict_json

MAX_LINE_BYTES = 16 << 20
"""The longest record line read (16 MiB): a window's vector, text and metadata, many times over."""


LARGEST = 1 << 62
"""The largest window or span offset a row may hold (as :class:`StoredRow` says)."""
LONGEST_ID = 1 << 16
"""The most characters a row's id may hold (as :class:`StoredRow` says)."""


class StoredRow(BaseModel):
    """One record as stored, without its vector (which :func:`vector_of` checks)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    id: Annotated[str, StringConstraints(max_length=LONGEST_ID)]
    window: int = Field(default=0, ge=0, le=LARGEST)
    span: tuple[Annotated[int, Field(ge=0, le=LARGEST)], Annotated[int, Field(ge=0, le=LARGEST)]]
    text: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


def row_of(data: Any, where: str) -> StoredRow:
    """``data`` (a record without its vector, in the JSON sinks' shape) checked, or a
    ``UserError`` at ``where`` (``file:line`` or ``file: row N``)."""
    if isinstance(data, dict) and data.get("metadata") is None:
        data = {**data, "metadata": {}}
    if isinstance(data, dict) and isinstance(data.get("span"), list):
        data = {**data, "span": tuple(data["span"])}
    try:
        return StoredRow.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or "the record"
        problem = "missing" if first["type"] == "missing" else first["msg"]
        raise UserError(f"{where}: a record's {field}: {problem}{REWRITE}") from None


def plain_record(data: dict[str, Any]) -> bool:
    """Whether ``data`` (a record in the JSON sinks' shape) is sure to pass :func:`row_of`:
    the plain types and ranges a sink writes, tested without pydantic. A search scans every
    row of a file output, and a validation for each (tens of µs) cost more than scoring
    them; this costs a few. False is no verdict: :func:`row_of` then checks the record,
    and says what is wrong with it."""
    doc = data.get("id")
    span = data.get("span")
    text = data.get("text")
    metadata = data.get("metadata")
    return (
        type(doc) is str
        and len(doc) <= LONGEST_ID
        and _offset(data.get("window", 0))
        and type(span) is list
        and len(span) == 2
        and _offset(span[0])
        and _offset(span[1])
        and (text is None or type(text) is str)
        and (metadata is None or type(metadata) is dict)
    )


def _offset(value: Any) -> bool:
    return type(value) is int and 0 <= value <= LARGEST


class CheckedRows(Sequence[StoredRow]):
    """A chunk's rows, each already checked, made a :class:`StoredRow` only when asked for
    (and kept once made). A search keeps the few rows of a chunk that make a query's top
    ``k``; making all of them (300,000 for an output of 300,000 rows) cost most of a scan.

    ``build(i)``: the ``i``-th row, made from what was read (checked again, as
    :func:`row_of` checks it: what was cleared in bulk passes).
    """

    def __init__(self, count: int, build: Callable[[int], StoredRow]) -> None:
        self._count = count
        self._build = build
        self._made: dict[int, StoredRow] = {}

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> StoredRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[StoredRow]: ...
    def __getitem__(self, index: int | slice) -> StoredRow | list[StoredRow]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        position = index + self._count if index < 0 else index
        if not 0 <= position < self._count:
            raise IndexError(index)
        row = self._made.get(position)
        if row is None:
            row = self._made[position] = self._build(position)
        return row


def record_rows(
    records: Sequence[StoredRow | dict[str, Any]], wheres: Sequence[str]
) -> CheckedRows:
    """Rows read as records (each a row, or a record :func:`plain_record` cleared, made by
    :func:`row_of` at its ``wheres``) as :class:`CheckedRows`."""

    def build(i: int) -> StoredRow:
        record = records[i]
        return record if isinstance(record, StoredRow) else row_of(record, wheres[i])

    return CheckedRows(len(records), build)


def json_row(line: bytes, where: str) -> tuple[StoredRow, Any]:
    """A JSON line: the record checked, and its ``embedding`` as stored (for :func:`vector_of`)."""
    record, values = json_record(line, where)
    return row_of(record, where), values


def json_record(line: bytes, where: str) -> tuple[dict[str, Any], Any]:
    """A JSON line: the record (a JSON object, not yet checked as a row) without its
    ``embedding``, and the embedding as stored; a ``UserError`` for a line that is not a
    JSON object."""
    try:
        data = strict_json(line)
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError is a ValueError
        reason = err.msg if isinstance(err, JSONDecodeError) else str(err)
        raise UserError(f"{where}: not a JSON record ({reason}){REWRITE}") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: a record is a JSON object, not {type(data).__name__}{REWRITE}")
    return data, data.pop("embedding", None)


def json_object(line: bytes, where: str) -> dict[str, Any]:
    """A JSON line that must hold an object (an error record), or a ``UserError``."""
    try:
        data = strict_json(line)
    except (ValueError, RecursionError) as err:
        reason = err.msg if isinstance(err, JSONDecodeError) else str(err)
        raise UserError(f"{where}: not a JSON object ({reason}){REWRITE}") from None
    if not isinstance(data, dict):
        raise UserError(f"{where}: not a JSON object but {type(data).__name__}{REWRITE}")
    return data


def vector_of(values: Any, dimension: int | None, where: str) -> np.ndarray[Any, Any]:
    """``values`` as a float32 vector of ``dimension`` finite numbers (any length if None)."""
    vector = flat_vector(values, where)
    check_vectors(vector[None, :], dimension, where)
    return vector


def flat_vector(values: Any, where: str) -> np.ndarray[Any, Any]:
    """``values`` as a flat float32 vector, its length and values not yet checked (a reader
    checks a chunk of them at once, :func:`check_vectors`), or a ``UserError`` at ``where``."""
    try:
        vector = np.asarray(values, dtype=np.float32)
    except (ValueError, TypeError, OverflowError):
        raise UserError(
            f"{where}: a record's embedding is not a list of numbers{REWRITE}"
        ) from None
    if vector.ndim != 1:
        raise UserError(f"{where}: a record's embedding is not a flat list of numbers{REWRITE}")
    return vector


def check_vectors(matrix: np.ndarray[Any, Any], dimension: int | None, where: str) -> None:
    """Rows of ``matrix`` of ``dimension`` finite values each, or a ``UserError`` at ``where``."""
    if dimension is not None and matrix.shape[1] != dimension:
        raise UserError(
            f"{where}: a vector of {matrix.shape[1]} values where the index's model makes "
            f"{dimension}{REWRITE}"
        )
    if not np.isfinite(matrix).all():
        raise UserError(f"{where}: a vector holds a NaN or an infinity{REWRITE}")


def open_matrix(handle: BinaryIO, where: str) -> np.ndarray[Any, Any]:
    """The ``.npy`` matrix in ``handle`` (an open regular file), memory-mapped, read-only.

    Its header is read and checked before anything is mapped: two dimensions, a float
    dtype (an object array would need pickle, which is never loaded), and a file as long
    as the header says.
    """
    fmt = np.lib.format
    readers = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
    try:
        version = fmt.read_magic(handle)
        if version not in readers:
            raise ValueError(f".npy format {version[0]}.{version[1]} is not read here")
        shape, fortran, dtype = readers[version](handle)
    except (ValueError, OSError, SyntaxError, TypeError) as err:
        raise UserError(f"{where}: not a .npy matrix ({err}){REWRITE}") from None
    if dtype.kind != "f" or len(shape) != 2:
        raise UserError(
            f"{where}: a .npy array of {dtype} and shape {shape}, where the npy sink writes a "
            f"matrix of floats{REWRITE}"
        )
    offset = handle.tell()
    size = handle.seek(0, 2)
    needed = offset + math.prod(shape) * dtype.itemsize
    if size < needed:
        raise UserError(
            f"{where}: {size:,} bytes where its header ({shape} of {dtype}) needs {needed:,}"
            f"{REWRITE}"
        )
    if 0 in shape:
        return np.zeros(shape, dtype)
    order: Literal["C", "F"] = "F" if fortran else "C"
    # np.memmap maps the descriptor (mmap keeps its own duplicate), so the handle may close.
    mapped: np.ndarray[Any, Any] = np.memmap(
        cast(Any, handle), dtype=dtype, mode="r", offset=offset, shape=shape, order=order
    )
    return mapped


def record_lines(path: Path, handle: BinaryIO) -> Iterator[tuple[str, bytes]]:
    """``(file:line, line)`` for each non-blank line of ``handle`` (the file ``path``), at
    most :data:`MAX_LINE_BYTES` each: a ``UserError`` at the first longer one."""
    try:
        for number, line in bounded_lines(handle, MAX_LINE_BYTES):
            yield f"{path}:{number}", line
    except LineTooLong as err:
        raise UserError(f"{path}:{err.number}: {err}{REWRITE}") from None


def first_line(err: BaseException) -> str:
    """A library's error about a stored file, for a message: its first line, at most 200
    characters (pyarrow's and LanceDB's may be a page, with a backtrace)."""
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    return text if len(text) <= 200 else text[:199] + "…"
