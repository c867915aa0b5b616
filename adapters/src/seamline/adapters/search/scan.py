"""Exact search over the file sinks' outputs (jsonl, npy, parquet): every vector, in chunks.

Vectors are read ``CHUNK`` rows at a time and only the best ``k`` are kept, so
memory stays bounded for any index size. Rows come back in the one shape the
JSON sinks write (``id``, ``window``, ``span``, ``metadata``, and ``text`` where the
sink stored it), whatever the file format.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from seamline.adapters.search.index import Index
from seamline.contracts import UserError

CHUNK = 4096

Chunk = tuple[np.ndarray, list[dict[str, Any]]]


def _jsonl_chunks(records: Path) -> Iterator[Chunk]:
    rows: list[dict[str, Any]] = []
    vectors: list[list[float]] = []
    with records.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            vectors.append(record.pop("embedding"))
            rows.append(record)
            if len(rows) == CHUNK:
                yield np.asarray(vectors, dtype=np.float32), rows
                rows, vectors = [], []
    if rows:
        yield np.asarray(vectors, dtype=np.float32), rows


def _npy_chunks(matrix_path: Path, index_path: Path) -> Iterator[Chunk]:
    matrix = np.load(matrix_path, mmap_mode="r")
    with index_path.open(encoding="utf-8") as handle:
        start = 0
        while start < len(matrix):
            rows = [json.loads(handle.readline()) for _ in range(min(CHUNK, len(matrix) - start))]
            yield np.asarray(matrix[start : start + len(rows)], dtype=np.float32), rows
            start += len(rows)


def _parquet_chunks(path: Path) -> Iterator[Chunk]:
    """The parquet sink's rows, a batch of ``CHUNK`` at a time, in the JSON sinks' shape."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=CHUNK):
        columns = batch.to_pydict()
        yield np.asarray(columns["embedding"], dtype=np.float32), arrow_rows(columns)


def arrow_rows(columns: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Columns of the parquet and lancedb sinks' layout as rows in the JSON sinks' shape."""
    count = len(columns["id"])
    texts = columns.get("text", [None] * count)
    metadata = columns.get("metadata", [None] * count)
    return [
        {
            "id": columns["id"][i],
            "window": columns["window_index"][i],
            "span": [columns["span_start"][i], columns["span_end"][i]],
            "text": texts[i],
            "metadata": {k: v for k, v in (metadata[i] or {}).items() if v is not None},
        }
        for i in range(count)
    ]


def chunks(index: Index) -> Iterator[Chunk]:
    """Every vector of a file index, with its row, in output order (part after part)."""
    for files in index.parts:
        yield from _part_chunks(index, files)


def _part_chunks(index: Index, files: dict[str, Path]) -> Iterator[Chunk]:
    if "matrix" in files and "index" in files:
        return _npy_chunks(files["matrix"], files["index"])
    if "records" in files:
        return _jsonl_chunks(files["records"])
    if "parquet" in files:
        return _parquet_chunks(files["parquet"])
    raise UserError(
        f"{index.manifest_path} lists files {sorted(files)} of a {index.sink or 'unknown'} "
        "sink; search reads the outputs of the jsonl, npy, parquet and lancedb sinks"
    )


def nearest(
    index: Index, vector: np.ndarray, k: int
) -> tuple[list[tuple[float, dict[str, Any]]], int]:
    """The ``k`` rows most similar (cosine) to the unit ``vector``, best first; and rows scanned."""
    best: list[tuple[float, int, dict[str, Any]]] = []
    seen = 0
    for matrix, rows in chunks(index):
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
