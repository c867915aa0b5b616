"""``npy``: all vectors as one ``[rows, dim]`` matrix, with a JSON Lines index beside it.

The matrix is streamed to disk: rows are appended to the temporary file after a
fixed-size space reserved for the ``.npy`` header, and ``close`` fills in the
header once the row count is known. Memory therefore stays bounded whatever the
corpus size, and publishing costs no copy. Row ``i`` of the matrix is line ``i``
of the index, which says which document, window and span it came from. The sink
is resumable: a checkpoint records the row count and width with the byte lengths
of the three files (see :mod:`._checkpoint`). It stages parts: a run split into
shards writes one matrix per shard and publishes them under one manifest (see
:mod:`._parts`).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from seamline.components.sinks._checkpoint import ResumableGroup
from seamline.components.sinks._parts import StagingSink
from seamline.components.sinks._paths import OutputPath, check_distinct
from seamline.components.sinks._records import SinkState
from seamline.components.sinks.jsonl import (
    checked_vector,
    default_errors_path,
    default_manifest_path,
    error_line,
    errors_label,
    record_fields,
    record_metadata,
)
from seamline.contracts import (
    ComponentConfig,
    ContractViolation,
    DocumentError,
    OutputRecord,
    ResumeRefused,
    Sink,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from seamline.components.sinks._atomic import AtomicFile

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


class NpySinkConfig(ComponentConfig):
    """The ``with:`` block of the ``npy`` sink."""

    path: OutputPath = Field(
        description="Output matrix (.npy, one row per record); parent directories are created. "
        "A relative path is relative to the working directory of the run."
    )
    index_path: OutputPath | None = Field(
        default=None,
        description="JSON Lines file whose line i describes row i (id, window, span, metadata). "
        "Default: path with the suffix '.index.jsonl'.",
    )
    dtype: Literal["float32", "float16"] = Field(
        default="float32",
        description="Element type of the matrix; float16 halves the file at reduced precision.",
    )

    @model_validator(mode="after")
    def _distinct_paths(self) -> NpySinkConfig:
        index = "index_path" if self.index_path is not None else "the index ('<stem>.index.jsonl')"
        check_distinct(
            [
                ("path", self.path),
                (index, self.resolved_index_path()),
                (errors_label(None), self.resolved_errors_path()),
                ("the manifest", default_manifest_path(self.path)),
            ]
        )
        return self

    def resolved_index_path(self) -> Path:
        return (
            self.index_path
            if self.index_path is not None
            else self.path.with_suffix(".index.jsonl")
        )

    def resolved_errors_path(self) -> Path:
        return default_errors_path(self.path)


class NpySink(StagingSink, Sink[NpySinkConfig]):
    """Writes a ``[rows, dim]`` matrix, an index line per row, and an errors file."""

    name: ClassVar[str] = "npy"
    contract_version: ClassVar[str] = "1.3"
    Config = NpySinkConfig
    resumable: ClassVar[bool] = True
    stageable: ClassVar[bool] = True

    def __init__(self, config: NpySinkConfig) -> None:
        super().__init__(config)
        # Little-endian explicitly, so the header and the bytes agree on any machine.
        self._dtype: np.dtype[Any] = np.dtype(config.dtype).newbyteorder("<")
        # Created on first use; published manifest, errors, index, and the matrix last:
        # see AtomicGroup.
        self._group = ResumableGroup(
            self.name,
            default_manifest_path(config.path),
            [
                ("errors", config.resolved_errors_path()),
                ("index", config.resolved_index_path()),
                ("matrix", config.path),
            ],
            state=NpyState,
        )
        self._rows = 0
        self._dim: int | None = None
        self._closed = False

    def staging_targets(self) -> tuple[Path, list[tuple[str, Path]]]:
        return self._group.manifest_path, self._group.targets

    def relocated(self, directory: Path) -> NpySink:
        config = self.config.model_copy(
            update={
                "path": directory / self.config.path.name,
                "index_path": directory / self.config.resolved_index_path().name,
            }
        )
        return NpySink(config)

    def start(self, manifest: Mapping[str, Any]) -> None:
        self.lock_part()
        self._group.manifest = manifest
        self._group.clear()  # a fresh run: forget what an interrupted one left behind

    def _recover(self, manifest: Mapping[str, Any]) -> str | None:
        recovered = self._group.recover(manifest)
        if recovered is None:
            return None
        cursor, state = recovered
        if state.dtype != self._dtype.str:
            self._group.abandon()
            raise ResumeRefused(
                f"cannot resume: the committed matrix {str(self.config.path)!r} holds "
                f"{state.dtype} values, this sink writes {self._dtype.str}; run again "
                "with --restart (or without --resume) to start over"
            )
        self._rows, self._dim = state.rows, state.dim
        return cursor

    def commit(self, cursor: str) -> None:
        self._check_open()
        self._open()
        self._group.commit(cursor, NpyState(rows=self._rows, dim=self._dim, dtype=self._dtype.str))

    def write(self, records: Sequence[OutputRecord]) -> None:
        files = self._open()
        if not records:
            return
        vectors = [checked_vector(record) for record in records]
        for record, vector in zip(records, vectors, strict=True):
            if self._dim is None:
                self._dim = vector.shape[0]
            if vector.shape[0] != self._dim:
                raise ContractViolation(
                    f"record {record.doc_id!r} window {record.index}: vector has "
                    f"{vector.shape[0]} values but earlier rows have {self._dim}"
                )
        files["matrix"].write(np.stack(vectors).astype(self._dtype, copy=False).tobytes(order="C"))
        index = files["index"]
        for record in records:
            line = {"row": self._rows, **record_fields(record)}
            if record.metadata:
                line["metadata"] = record_metadata(record)
            index.write_json_line(line)
            self._rows += 1

    def write_error(self, error: DocumentError) -> None:
        self._open()["errors"].write_json_line(error_line(error))

    def close(self, complete: bool = True) -> None:
        if self._closed:
            return
        if self.untouchable:  # another run owns the destination, or a resume was refused
            self._closed = True
            self.unlock_part()
            return
        if complete:
            matrix = self._open()["matrix"]
            matrix.file.seek(0)
            matrix.write(npy_header(self._dtype, (self._rows, self._dim or 0)))
        self._closed = True
        try:
            if complete:
                self._group.publish()
                self.after_whole_publish()
            else:
                self._group.abandon()
        finally:
            self.unlock_part()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("npy sink: write after close")

    def _open(self) -> dict[str, AtomicFile]:
        """The partial files by purpose (``matrix``, ``index``, ``errors``), made on first use."""
        self._check_open()
        fresh = self._group.files is None
        files = self._group.open()
        if fresh:
            files["matrix"].write(b"\0" * HEADER_BYTES)  # filled in by close()
        return files
