"""Exact search over the file sinks' outputs (jsonl, npy, parquet): every vector, in chunks.

Vectors are read ``CHUNK`` rows at a time and only the best ``k`` are kept, so
memory stays bounded for any index size. Rows come back in one shape
(:class:`~seamline.contracts.stored.StoredRow`: ``id``, ``window``, ``span``,
``metadata``, and ``text`` where the sink stored it), whatever the file format.

The files are untrusted: each is opened only if the manifest's folder holds it as a
regular file (:func:`~seamline.contracts.manifest.open_output`), and every line, row
and vector is checked as it is read (:mod:`seamline.contracts.stored`), so that an
edited file ends in one line naming the file and the line or row.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from seamline.adapters.search.index import Index
from seamline.contracts import UserError
from seamline.contracts.manifest import REWRITE, open_output
from seamline.contracts.stored import (
    StoredRow,
    check_vectors,
    first_line,
    json_object,
    json_row,
    open_matrix,
    record_lines,
    row_of,
    vector_of,
)

CHUNK = 4096

Chunk = tuple[np.ndarray, list[StoredRow]]


def _jsonl_chunks(index: Index, records: Path, dimension: int) -> Iterator[Chunk]:
    rows: list[StoredRow] = []
    vectors: list[np.ndarray] = []
    with open_output(records, "records", index.manifest_path) as handle:
        for where, line in record_lines(records, handle):
            row, values = json_row(line, where)
            vectors.append(vector_of(values, dimension, where))
            rows.append(row)
            if len(rows) == CHUNK:
                yield np.stack(vectors), rows
                rows, vectors = [], []
    if rows:
        yield np.stack(vectors), rows


def _npy_chunks(
    index: Index, matrix_path: Path, rows_path: Path, dimension: int
) -> Iterator[Chunk]:
    """The npy sink's matrix, with the row of each vector from its index file, in step:
    as many rows as the matrix has vectors, or a ``UserError`` saying how many there are."""
    with open_output(matrix_path, "matrix", index.manifest_path) as handle:
        matrix = open_matrix(handle, str(matrix_path))
    check_vectors(matrix[:0], dimension, str(matrix_path))
    count = len(matrix)

    def block(start: int, rows: list[StoredRow]) -> Chunk:
        end = start + len(rows)
        vectors = np.asarray(matrix[start:end], dtype=np.float32)
        check_vectors(vectors, dimension, f"{matrix_path}: rows {start:,} to {end:,}")
        return vectors, rows

    start, rows = 0, list[StoredRow]()
    with open_output(rows_path, "index", index.manifest_path) as handle:
        for where, line in record_lines(rows_path, handle):
            if start + len(rows) == count:
                raise UserError(
                    f"{rows_path}: more rows than the {count:,} vectors of {matrix_path}{REWRITE}"
                )
            rows.append(row_of(json_object(line, where), where))
            if len(rows) == CHUNK:
                yield block(start, rows)
                start, rows = start + len(rows), []
    if start + len(rows) < count:
        raise UserError(
            f"{rows_path}: {start + len(rows):,} rows for the {count:,} vectors of "
            f"{matrix_path}{REWRITE}"
        )
    if rows:
        yield block(start, rows)


def _parquet_chunks(index: Index, path: Path, dimension: int) -> Iterator[Chunk]:
    """The parquet sink's rows, a batch of ``CHUNK`` at a time, checked as the JSON sinks' are."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_output(path, "parquet", index.manifest_path) as handle:
        try:
            batches = pq.ParquetFile(handle).iter_batches(batch_size=CHUNK)
            seen = 0
            for batch in batches:
                columns = batch.to_pydict()
                where = f"{path}: row"
                if "embedding" not in columns:
                    raise UserError(f"{path}: no column embedding{REWRITE}")
                rows = arrow_rows(columns, where, seen)
                vectors = [
                    vector_of(v, dimension, f"{where} {seen + i}")
                    for i, v in enumerate(columns["embedding"])
                ]
                seen += len(rows)
                if rows:
                    yield np.stack(vectors), rows
        except (pa.ArrowException, OSError, ValueError) as err:
            raise UserError(
                f"{path}: not Parquet as the parquet sink writes it ({first_line(err)}){REWRITE}"
            ) from None


REQUIRED = ("id", "window_index", "span_start", "span_end")
"""The columns of the parquet and lancedb sinks' layout that a row needs (and the vector)."""


def arrow_rows(columns: dict[str, list[Any]], where: str, first: int = 0) -> list[StoredRow]:
    """Columns of the parquet and lancedb sinks' layout as checked rows (``where``: the file)."""
    missing = [name for name in REQUIRED if name not in columns]
    if missing:
        raise UserError(f"{where.removesuffix(': row')}: no column {', '.join(missing)}{REWRITE}")
    count = len(columns["id"])
    texts = columns.get("text", [None] * count)
    metadata = columns.get("metadata", [None] * count)
    rows = []
    for i in range(count):
        found = metadata[i]
        row = {
            "id": columns["id"][i],
            "window": columns["window_index"][i],
            "span": [columns["span_start"][i], columns["span_end"][i]],
            "text": texts[i],
            "metadata": (
                {k: v for k, v in found.items() if v is not None}
                if isinstance(found, dict)
                else found
            ),
        }
        rows.append(row_of(row, f"{where} {first + i}"))
    return rows


def chunks(index: Index, dimension: int) -> Iterator[Chunk]:
    """Every vector of a file index, with its row, in output order (part after part)."""
    for files in index.parts:
        yield from _part_chunks(index, files, dimension)


def _part_chunks(index: Index, files: dict[str, Path], dimension: int) -> Iterator[Chunk]:
    if "matrix" in files and "index" in files:
        return _npy_chunks(index, files["matrix"], files["index"], dimension)
    if "records" in files:
        return _jsonl_chunks(index, files["records"], dimension)
    if "parquet" in files:
        return _parquet_chunks(index, files["parquet"], dimension)
    raise UserError(
        f"{index.manifest_path} lists files {sorted(files)} of a {index.sink or 'unknown'} "
        "sink; search reads the outputs of the jsonl, npy, parquet and lancedb sinks"
    )


def nearest(index: Index, vector: np.ndarray, k: int) -> tuple[list[tuple[float, StoredRow]], int]:
    """The ``k`` rows most similar (cosine) to the unit ``vector``, best first; and rows scanned."""
    best: list[tuple[float, int, StoredRow]] = []
    seen = 0
    for matrix, rows in chunks(index, len(vector)):
        norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
        scores = (matrix @ vector) / norms
        for score, row in zip(scores.tolist(), rows, strict=True):
            item = (score, seen, row)
            seen += 1
            if len(best) < k:
                heapq.heappush(best, item)
            elif score > best[0][0]:
                heapq.heapreplace(best, item)
    ranked = sorted(best, key=lambda item: (-item[0], item[1]))
    return [(score, row) for score, _, row in ranked], seen
