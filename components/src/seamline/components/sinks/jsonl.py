"""``jsonl``: one JSON line per output record, and one per document set aside.

Records are encoded and appended as they arrive, so memory does not grow with the
corpus. The lifecycle is the sink kit's (:class:`~seamline.contracts.sink_kit.PublishingSink`):
both files are written under hidden temporary names and published only by
``close(complete=True)``; the errors file is always published, empty when nothing
failed, so that "no errors" can be told apart from "never ran"; ``commit``
checkpoints both files with the loader cursor and ``recover`` continues from the
last checkpoint; a run split into shards writes one part per shard and publishes
them under one manifest. :class:`JsonlReader` reads the output back, checking the
records file against the manifest's count and sha256 of it (``outputs.lines``,
``outputs.sha256``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from seamline.contracts import OutputRecord, UserError
from seamline.contracts.readback import LineReader
from seamline.contracts.sink_kit import (
    AtomicFile,
    OutputConfig,
    PublishingSink,
    checked_vector,
    record_fields,
    record_metadata,
)
from seamline.contracts.stored import StoredRow, json_record


class JsonlSinkConfig(OutputConfig):
    """The ``with:`` block of the ``jsonl`` sink: ``path`` is the records file."""

    precision: int | None = Field(
        default=None,
        description="Round embedding values to this many decimal places (0 to 17) to shrink "
        "the file; null writes every value exactly (float32 values round-trip bit for bit). "
        "A rounding that moves a vector below cosine 0.999 from the exact one stops the run "
        "with the precision that would not (3 for unit vectors of 384 or 768 values).",
    )

    @model_validator(mode="after")
    def _check_precision(self) -> JsonlSinkConfig:
        if self.precision is not None and not 0 <= self.precision <= 17:
            raise ValueError(f"precision must be between 0 and 17 (or null), not {self.precision}")
        return self


KEPT_COSINE = 0.999
"""How close to its exact vector a rounded one must stay (cosine): a coarser rounding ranks
search results by rounding noise (a unit vector of 384 values, each about 0.05, rounded
to 0 places is all zeros), so the run stops rather than write it."""


def rounded(values: list[float], places: int, record: OutputRecord) -> list[float]:
    """``values`` rounded to ``places`` decimal places, or a UserError naming the precision
    that would keep the vector (cosine >= KEPT_COSINE to the exact one)."""
    kept = [round(value, places) for value in values]
    if _cosine(values, kept) >= KEPT_COSINE:
        return kept
    enough = next(
        (
            p
            for p in range(places + 1, 18)
            if _cosine(values, [round(v, p) for v in values]) >= KEPT_COSINE
        ),
        None,
    )
    hint = f"a precision of at least {enough}" if enough is not None else "precision: null"
    raise UserError(
        f"jsonl sink: precision {places} rounds the vector of document {record.doc_id!r} "
        f"(window {record.index}) to one at cosine {_cosine(values, kept):.4f} from the exact "
        f"one (below {KEPT_COSINE}): search would rank by rounding noise. Use {hint}, or null "
        "to write every value exactly"
    )


def _cosine(exact: list[float], kept: list[float]) -> float:
    a, b = np.asarray(exact), np.asarray(kept)
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norms == 0.0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(np.dot(a, b) / norms)


class JsonlReader(LineReader):
    """The records file, one JSON object a line, each checked as it is read."""

    def parse(self, line: bytes, where: str) -> tuple[StoredRow | dict[str, Any], Any]:
        return json_record(line, where)


class JsonlSink(PublishingSink[JsonlSinkConfig]):
    """Writes records as JSON Lines: ``{"id", "window", "span", "text"?, "embedding",
    "metadata"?}``."""

    name: ClassVar[str] = "jsonl"
    contract_version: ClassVar[str] = "1.6"
    Config = JsonlSinkConfig
    reader = JsonlReader
    line_streams = frozenset({"records"})
    digested_streams = frozenset({"records"})
    """The manifest keeps the records file's sha256 as well as its count: a value or a text
    edited in place, the line count kept, was searched without a word. The reader reads
    the file whole and already digests it as it streams by (one pass), and publishing
    digests it in the read that counts its lines."""

    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        out = files["records"]
        vectors = [checked_vector(record) for record in records]  # all, before any is written
        rows: list[list[float]] = []
        for record, vector in zip(records, vectors, strict=True):
            values: list[float] = vector.astype(np.float64).tolist()
            if self.config.precision is not None:
                values = rounded(values, self.config.precision, record)
            rows.append(values)
        for record, values in zip(records, rows, strict=True):
            line = record_fields(record, text=self.config.text)
            line["embedding"] = values
            if record.metadata:
                line["metadata"] = record_metadata(record)
            out.write_json_line(line)
