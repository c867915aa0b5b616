"""Read back what the first-party sinks published, whole or in staged parts.

``jsonl`` and ``npy`` publish a run split into shards as its parts; ``parquet`` and
``lancedb`` copy the parts into one file or one table when they publish, which these
functions read as any whole output (the Arrow columns of :mod:`._columns`).

The manifest beside an output is the way in: it lists the output's files
(``outputs.files``) or, for a run split into shards, every part's files in shard
order (``outputs.parts``, see :mod:`._parts`). A reader that follows it sees exactly
what was published — never a part of a run that has not been — which is why these
functions read the manifest first and the files it names, and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from seamline.components.sinks.jsonl import default_manifest_path
from seamline.contracts import OutputRecord

PRIMARY = ("records", "matrix", "parquet", "table")
"""The purposes of each sink's primary file, whose presence means the output is published."""


def published_files(primary: Path) -> list[dict[str, Path]] | None:
    """The files of each published part (one entry for a whole output), or None if none is.

    ``primary`` is the configured ``path`` of the sink (or its manifest).
    """
    manifest_path = primary if primary.name.endswith(".manifest.json") else None
    manifest_path = manifest_path or default_manifest_path(primary)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    outputs = manifest.get("outputs", {})
    base = manifest_path.parent
    if "parts" in outputs:
        return [
            {purpose: base / name for purpose, name in part["files"].items()}
            for part in outputs["parts"]
        ]
    files = {purpose: base / name for purpose, name in outputs.get("files", {}).items()}
    primary_file = next((files[p] for p in PRIMARY if p in files), None)
    return [files] if primary_file is not None and primary_file.exists() else None


def read_records(primary: Path) -> list[OutputRecord] | None:
    """Every published record, part by part, as :class:`OutputRecord`s; None if unpublished."""
    parts = published_files(primary)
    if parts is None:
        return None
    records: list[OutputRecord] = []
    for files in parts:
        if "records" in files:
            records.extend(_jsonl_records(files["records"]))
        elif "parquet" in files:
            records.extend(_parquet_records(files["parquet"]))
        elif "table" in files:
            records.extend(_lance_records(files["table"]))
        else:
            records.extend(_npy_records(files["matrix"], files["index"]))
    return records


def read_errors(primary: Path) -> list[dict[str, Any]] | None:
    """Every published error record (documents set aside), part by part; None if unpublished."""
    parts = published_files(primary)
    if parts is None:
        return None
    return [row for files in parts for row in _lines(files["errors"])]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _jsonl_records(path: Path) -> list[OutputRecord]:
    return [
        OutputRecord(
            row["id"],
            row["window"],
            (row["span"][0], row["span"][1]),
            np.asarray(row["embedding"], np.float32),
            row.get("metadata", {}),
        )
        for row in _lines(path)
    ]


def _npy_records(matrix_path: Path, index_path: Path) -> list[OutputRecord]:
    matrix = np.load(matrix_path)
    return [
        OutputRecord(
            row["id"],
            row["window"],
            (row["span"][0], row["span"][1]),
            matrix[i],
            row.get("metadata", {}),
        )
        for i, row in enumerate(_lines(index_path))
    ]


def _parquet_records(path: Path) -> list[OutputRecord]:
    import pyarrow.parquet as pq

    return arrow_records(pq.read_table(path).to_pylist())


def _lance_records(path: Path) -> list[OutputRecord]:
    import lancedb

    table = lancedb.connect(str(path.parent)).open_table(path.stem)
    return arrow_records(table.search().limit(None).to_list())


def arrow_records(rows: list[dict[str, Any]]) -> list[OutputRecord]:
    """Rows of the parquet and lancedb sinks' layout as records (metadata without nulls)."""
    return [
        OutputRecord(
            row["id"],
            row["window_index"],
            (row["span_start"], row["span_end"]),
            np.asarray(row["embedding"], np.float32),
            {k: v for k, v in (row.get("metadata") or {}).items() if v is not None},
            row.get("text"),
        )
        for row in rows
    ]
