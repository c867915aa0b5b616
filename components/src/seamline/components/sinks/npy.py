"""``npy``: all vectors as one ``[rows, dim]`` matrix, with a JSON Lines index beside it.

The matrix is streamed to disk: rows are appended to the temporary file after a
fixed-size space reserved for the ``.npy`` header, and publishing fills in the
header once the row count is known. Memory therefore stays bounded whatever the
corpus size, and publishing costs no copy. Row ``i`` of the matrix is line ``i``
of the index, which says which document, window and span it came from. The
lifecycle (commits, resume, staged parts, publication) is the sink kit's
(:class:`~seamline.contracts.sink_kit.PublishingSink`); a checkpoint adds the row
count, width and element type to the byte lengths of the three files.
:class:`NpyReader` reads the output back.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Literal, Self, cast

import numpy as np
from pydantic import Field, NonNegativeInt, PositiveInt

from seamline.contracts import ContractViolation, OutputRecord, ResumeRefused
from seamline.contracts.errors import RESTART
from seamline.contracts.manifest import REWRITE
from seamline.contracts.readback import CHUNK_ROWS, Chunk, Digesting, OutputReader, Republished
from seamline.contracts.sink_kit import (
    AtomicFile,
    OutputConfig,
    OutputPath,
    PublishingSink,
    SinkState,
    checked_vector,
    record_fields,
    record_metadata,
)
from seamline.contracts.stored import (
    StoredRow,
    check_vectors,
    json_object,
    open_matrix,
    plain_record,
    record_lines,
    record_rows,
    row_of,
)

HEADER_BYTES = 128
"""Room reserved for the ``.npy`` header: a multiple of 64 (numpy's alignment) that fits
the header of any 2-D matrix whose sizes have up to 19 digits each."""


def npy_header(dtype: np.dtype[Any], shape: tuple[int, int]) -> bytes:
    """A version 1.0 ``.npy`` header for a C-ordered matrix, padded to ``HEADER_BYTES``.

    The layout is numpy's documented format: magic, version, little-endian header
    length, then a Python dict literal padded with spaces and ended by a newline.
    """
    descr = np.lib.format.dtype_to_descr(dtype)
    text = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape!r}, }}"
    magic = np.lib.format.magic(1, 0)
    length = HEADER_BYTES - len(magic) - 2
    if len(text) + 1 > length:
        raise ValueError(f"a matrix of shape {shape} does not fit the .npy header")
    return magic + struct.pack("<H", length) + text.encode("latin1").ljust(length - 1) + b"\n"


class NpyState(SinkState):
    """What the npy sink's checkpoint adds: the matrix's rows, width and element type."""

    rows: NonNegativeInt
    dim: PositiveInt | None
    """None before the first row."""
    dtype: str
    """numpy's name of the element type (``<f4``), which a resume must write again."""


class NpySinkConfig(OutputConfig):
    """The ``with:`` block of the ``npy`` sink: ``path`` is the matrix (.npy)."""

    index_path: OutputPath | None = Field(
        default=None,
        description="JSON Lines file whose line i describes row i (id, window, span, metadata). "
        "Default: path with the suffix '.index.jsonl'.",
    )
    dtype: Literal["float32", "float16"] = Field(
        default="float32",
        description="Element type of the matrix; float16 halves the file at reduced precision.",
    )

    def other_outputs(self) -> list[tuple[str, Path]]:
        index = "index_path" if self.index_path is not None else "the index ('<stem>.index.jsonl')"
        return [(index, self.resolved_index_path())]

    def relocated(self, directory: Path) -> Self:
        moved = super().relocated(directory)
        return moved.model_copy(update={"index_path": directory / self.resolved_index_path().name})

    def resolved_index_path(self) -> Path:
        return (
            self.index_path
            if self.index_path is not None
            else self.path.with_suffix(".index.jsonl")
        )


class NpyReader(OutputReader):
    """The matrix, memory-mapped, with the row of each vector from its index file, in step.

    The two files are renamed into place one after the other when the output is
    republished, so a reader may open one publish's matrix and the next one's index: each
    file's sha256 is computed as it is read and compared with the manifest's (read again
    for each read, :meth:`current`) before the last rows are handed on, and a pair that
    disagrees is a :class:`~seamline.contracts.readback.Republished` (read again), never
    rows of one run paired with another's vectors. (An output from before the manifest
    kept them is checked by its counts alone.)

    A matrix of no rows may be ``(0, 0)``: a sink that wrote nothing never learned the
    width (a shard with no documents, in a run of more shards than documents). It is read
    as no vectors, whatever the model's width, never refused as a vector of 0 values: one
    empty part made a whole sharded output unreadable.
    """

    primary: ClassVar[str] = "matrix"

    def chunks(self, dimension: int | None) -> Iterator[Chunk]:
        """As many rows as the matrix has vectors, or a ``UserError`` saying how many there are."""
        reader = self.current()
        assert isinstance(reader, NpyReader)
        return reader._chunks(dimension)

    def _chunks(self, dimension: int | None) -> Iterator[Chunk]:
        matrix_path, rows_path = self.file("matrix"), self.file("index")
        with self.open("matrix") as handle:
            matrix = open_matrix(handle, str(matrix_path))
            digest = matrix_header_digest(handle, matrix)
        count = len(matrix)
        if count or matrix.shape[1]:  # (0, 0): no vectors, of no width to check
            check_vectors(matrix[:0], dimension, str(matrix_path))

        def block(start: int, rows: list[StoredRow | dict[str, Any]]) -> Chunk:
            end = start + len(rows)
            stored = np.ascontiguousarray(matrix[start:end])
            if stored.size:  # a view of no bytes cannot be cast (and adds nothing)
                digest.update(stored.data.cast("B"))
            vectors = np.asarray(stored, dtype=np.float32)
            if rows:
                check_vectors(vectors, dimension, f"{matrix_path}: rows {start:,} to {end:,}")
            return vectors, record_rows(rows, wheres)

        start, rows, wheres = 0, list[StoredRow | dict[str, Any]](), list[str]()
        with self.open("index") as handle:
            index = Digesting(handle)
            for where, line in record_lines(rows_path, cast(BinaryIO, index)):
                if start + len(rows) == count:
                    raise Republished(
                        f"{rows_path}: more rows than the {count:,} vectors of {matrix_path}"
                        f"{REWRITE}"
                    )
                record = json_object(line, where)
                rows.append(record if plain_record(record) else row_of(record, where))
                wheres.append(where)
                if len(rows) == CHUNK_ROWS:
                    yield block(start, rows)
                    start, rows, wheres = start + len(rows), [], []
        if start + len(rows) < count:
            raise Republished(
                f"{rows_path}: {start + len(rows):,} rows for the {count:,} vectors of "
                f"{matrix_path}{REWRITE}"
            )
        last = block(start, rows)
        self.check_sha256("index", index.sha256)
        self.check_sha256("matrix", digest)
        if rows:
            yield last


def matrix_header_digest(handle: BinaryIO, matrix: np.ndarray[Any, Any]) -> Any:
    """A sha256 of the ``.npy`` file in ``handle`` up to its first row (its header), to be
    updated with its rows as they are read (the file's bytes, in order: the npy sink's
    matrix is C-ordered and ends with its last row, as the sha256 it published was of the
    whole file). Read a MiB at a time."""
    digest = hashlib.sha256()
    fd = handle.fileno()
    header = os.fstat(fd).st_size - matrix.nbytes
    offset = 0
    while offset < header:
        data = os.pread(fd, min(1 << 20, header - offset), offset)
        if not data:
            break
        digest.update(data)
        offset += len(data)
    return digest


class NpySink(PublishingSink[NpySinkConfig]):
    """Writes a ``[rows, dim]`` matrix, an index line per row, and an errors file."""

    name: ClassVar[str] = "npy"
    contract_version: ClassVar[str] = "1.6"
    Config = NpySinkConfig
    State = NpyState
    primary: ClassVar[str] = "matrix"
    reader = NpyReader
    line_streams = frozenset({"index"})
    digested_streams = frozenset({"index", "matrix"})

    def __init__(self, config: NpySinkConfig) -> None:
        # Little-endian explicitly, so the header and the bytes agree on any machine.
        self._dtype: np.dtype[Any] = np.dtype(config.dtype).newbyteorder("<")
        self._rows = 0
        self._dim: int | None = None
        super().__init__(config)

    def streams(self) -> list[tuple[str, Path]]:
        """Published errors, index, and the matrix last."""
        return [("index", self.config.resolved_index_path()), ("matrix", self.config.path)]

    def restore(self, state: NpyState) -> None:
        if state.dtype != self._dtype.str:
            self._group.abandon()
            raise ResumeRefused(
                f"cannot resume: the committed matrix {str(self.config.path)!r} holds "
                f"{state.dtype} values, this sink writes {self._dtype.str}; run again "
                f"with {RESTART} to start over"
            )
        self._check_committed(state)
        self._rows, self._dim = state.rows, state.dim

    def _check_committed(self, state: NpyState) -> None:
        """The committed matrix and index must hold the rows the checkpoint says, whole.

        The matrix is the header's room and ``rows`` rows of ``dim`` values; the index one
        line a row. A cut anywhere else (a checkpoint edited by hand) would publish rows
        that are half one vector and half the next.
        """
        matrix = self.open_files()["matrix"].length()
        row_bytes = (state.dim or 0) * self._dtype.itemsize
        if state.rows and state.dim is None:
            wanted: tuple[int, ...] = ()
        elif state.rows == 0:
            wanted = (0, HEADER_BYTES)
        else:
            wanted = (HEADER_BYTES + state.rows * row_bytes,)
        index = self._group.recovered_lines()["index"]
        if matrix not in wanted or index != state.rows:
            self._group.abandon()
            raise ResumeRefused(
                f"cannot resume: the checkpoint {str(self._group.checkpoint)!r} records "
                f"{state.rows:,} rows of {state.dim} values, but the committed matrix holds "
                f"{matrix:,} bytes and the index {index:,} lines; it was changed after it was "
                f"written. Run again with {RESTART} to start over"
            )

    def committed_outputs(self) -> int | None:
        return self._rows

    def commit_rows(self) -> NpyState:
        self._matrix()
        return NpyState(rows=self._rows, dim=self._dim, dtype=self._dtype.str)

    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        vectors = [checked_vector(record) for record in records]
        for record, vector in zip(records, vectors, strict=True):
            if self._dim is None:
                self._dim = vector.shape[0]
            if vector.shape[0] != self._dim:
                raise ContractViolation(
                    f"record {record.doc_id!r} window {record.index}: vector has "
                    f"{vector.shape[0]} values but earlier rows have {self._dim}"
                )
        matrix = self._matrix()
        matrix.write(np.stack(vectors).astype(self._dtype, copy=False).tobytes(order="C"))
        index = files["index"]
        for record in records:
            line = {"row": self._rows, **record_fields(record, text=self.config.text)}
            if record.metadata:
                line["metadata"] = record_metadata(record)
            index.write_json_line(line)
            self._rows += 1

    def finish(self) -> Sequence[AtomicFile]:
        matrix = self._matrix()
        matrix.file.seek(0)
        matrix.write(npy_header(self._dtype, (self._rows, self._dim or 0)))
        return ()

    def _matrix(self) -> AtomicFile:
        """The partial matrix, its header's room reserved (filled in by :meth:`finish`)."""
        matrix = self.open_files()["matrix"]
        if matrix.length() == 0:
            matrix.write(b"\0" * HEADER_BYTES)
        return matrix
