"""Read back what the first-party sinks published, whole or in staged parts.

``jsonl`` and ``npy`` publish a run split into shards as its parts; ``parquet`` and
``lancedb`` copy the parts into one file or one table when they publish, which these
functions read as any whole output (the Arrow columns of :mod:`._columns`).

The manifest beside an output is the way in: it lists the output's files
(``outputs.files``) or, for a run split into shards, every part's files in shard
order (``outputs.parts``, see :mod:`._parts`). A reader that follows it sees exactly
what was published — never a part of a run that has not been — which is why these
functions read the manifest first and the files it names, and nothing else.

What they read is untrusted (whoever can write the folder can edit it): the manifest
is validated by its schema (:mod:`seamline.contracts.manifest`), only regular files
in the manifest's own folder are opened, and every line and row is checked as it is
read (:mod:`seamline.contracts.stored`). A problem is one ``UserError`` naming the
file and the line or row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from seamline.contracts import OutputRecord, UserError
from seamline.contracts.manifest import (
    REWRITE,
    Outputs,
    load_manifest,
    manifest_path,
    open_output,
    output_files,
    output_folder,
)
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

PRIMARY = ("records", "matrix", "parquet", "table")
"""The purposes of each sink's primary file, whose presence means the output is published."""


def published_files(primary: Path) -> list[dict[str, Path]] | None:
    """The files of each published part (one entry for a whole output), or None if none is.

    ``primary`` is the configured ``path`` of the sink (or its manifest).
    """
    path = manifest_path(primary)
    try:
        manifest = load_manifest(path)
    except FileNotFoundError:
        return None
    outputs = manifest.outputs or Outputs()
    parts = list(output_files(outputs, path))
    if outputs.parts is not None:
        return parts
    files = parts[0]
    primary_file = next((files[p] for p in PRIMARY if p in files), None)
    return [files] if primary_file is not None and primary_file.exists() else None


def read_records(primary: Path) -> list[OutputRecord] | None:
    """Every published record, part by part, as :class:`OutputRecord`s; None if unpublished."""
    parts = published_files(primary)
    if parts is None:
        return None
    manifest = manifest_path(primary)
    records: list[OutputRecord] = []
    for files in parts:
        if "records" in files:
            records.extend(_jsonl_records(files["records"], manifest))
        elif "parquet" in files:
            records.extend(_parquet_records(files["parquet"], manifest))
        elif "table" in files:
            records.extend(_lance_records(output_folder(files["table"], "table", manifest)))
        elif "matrix" in files and "index" in files:
            records.extend(_npy_records(files["matrix"], files["index"], manifest))
        else:
            raise UserError(f"{manifest} lists files {sorted(files)} of no first-party sink")
    return records


def read_errors(primary: Path) -> list[dict[str, Any]] | None:
    """Every published error record (documents set aside), part by part; None if unpublished."""
    parts = published_files(primary)
    if parts is None:
        return None
    manifest = manifest_path(primary)
    rows = []
    for files in parts:
        if "errors" not in files:
            raise UserError(f"{manifest} names no errors file{REWRITE}")
        with open_output(files["errors"], "errors", manifest) as handle:
            rows += [
                json_object(line, where) for where, line in record_lines(files["errors"], handle)
            ]
    return rows


def _record(row: StoredRow, vector: np.ndarray[Any, Any]) -> OutputRecord:
    return OutputRecord(row.id, row.window, row.span, vector, row.metadata, row.text)


def _jsonl_records(path: Path, manifest: Path) -> list[OutputRecord]:
    records = []
    dimension: int | None = None
    with open_output(path, "records", manifest) as handle:
        for where, line in record_lines(path, handle):
            row, values = json_row(line, where)
            vector = vector_of(values, dimension, where)
            dimension = len(vector)
            records.append(_record(row, vector))
    return records


def _npy_records(matrix_path: Path, index_path: Path, manifest: Path) -> list[OutputRecord]:
    with open_output(matrix_path, "matrix", manifest) as handle:
        matrix = np.asarray(open_matrix(handle, str(matrix_path)))
    check_vectors(matrix, None, str(matrix_path))
    with open_output(index_path, "index", manifest) as handle:
        rows = [
            row_of(json_object(line, where), where)
            for where, line in record_lines(index_path, handle)
        ]
    if len(rows) != len(matrix):
        raise UserError(
            f"{index_path}: {len(rows):,} rows for the {len(matrix):,} vectors of {matrix_path}"
            f"{REWRITE}"
        )
    return [_record(row, matrix[i]) for i, row in enumerate(rows)]


def _parquet_records(path: Path, manifest: Path) -> list[OutputRecord]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_output(path, "parquet", manifest) as handle:
        try:
            rows = pq.read_table(handle).to_pylist()
        except (pa.ArrowException, OSError, ValueError) as err:
            raise UserError(
                f"{path}: not Parquet as the parquet sink writes it ({first_line(err)}){REWRITE}"
            ) from None
    return arrow_records(rows, f"{path}: row")


def _lance_records(path: Path) -> list[OutputRecord]:
    import lancedb

    table = lancedb.connect(str(path.parent)).open_table(path.stem)
    return arrow_records(table.search().limit(None).to_list(), f"{path}: row")


def arrow_records(rows: list[dict[str, Any]], where: str = "row") -> list[OutputRecord]:
    """Rows of the parquet and lancedb sinks' layout as records (metadata without nulls),
    each checked as it is read (``where``: the file, for messages)."""
    records = []
    dimension: int | None = None
    for i, row in enumerate(rows):
        at = f"{where} {i}"
        metadata = row.get("metadata")
        stored = row_of(
            {
                "id": row.get("id"),
                "window": row.get("window_index"),
                "span": [row.get("span_start"), row.get("span_end")],
                "text": row.get("text"),
                "metadata": (
                    {k: v for k, v in metadata.items() if v is not None}
                    if isinstance(metadata, dict)
                    else metadata
                ),
            },
            at,
        )
        vector = vector_of(row.get("embedding"), dimension, at)
        dimension = len(vector)
        records.append(_record(stored, vector))
    return records
