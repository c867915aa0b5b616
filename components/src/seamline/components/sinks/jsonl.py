"""``jsonl``: one JSON line per output record, and one per document set aside.

Records are encoded and appended as they arrive, so memory does not grow with the
corpus. The lifecycle is the sink kit's (:class:`~seamline.contracts.sink_kit.PublishingSink`):
both files are written under hidden temporary names and published only by
``close(complete=True)``; the errors file is always published, empty when nothing
failed, so that "no errors" can be told apart from "never ran"; ``commit``
checkpoints both files with the loader cursor and ``recover`` continues from the
last checkpoint; a run split into shards writes one part per shard and publishes
them under one manifest. :class:`JsonlReader` reads the output back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from seamline.contracts import OutputRecord
from seamline.contracts.readback import LineReader
from seamline.contracts.sink_kit import (
    AtomicFile,
    OutputConfig,
    PublishingSink,
    checked_vector,
    record_fields,
    record_metadata,
)
from seamline.contracts.stored import StoredRow, json_row


class JsonlSinkConfig(OutputConfig):
    """The ``with:`` block of the ``jsonl`` sink: ``path`` is the records file."""

    precision: int | None = Field(
        default=None,
        description="Round embedding values to this many decimal places (0 to 17) to shrink "
        "the file; null writes every value exactly (float32 values round-trip bit for bit).",
    )

    @model_validator(mode="after")
    def _check_precision(self) -> JsonlSinkConfig:
        if self.precision is not None and not 0 <= self.precision <= 17:
            raise ValueError(f"precision must be between 0 and 17 (or null), not {self.precision}")
        return self


class JsonlReader(LineReader):
    """The records file, one JSON object a line, each checked as it is read."""

    def parse(self, line: bytes, where: str) -> tuple[StoredRow, Any]:
        return json_row(line, where)


class JsonlSink(PublishingSink[JsonlSinkConfig]):
    """Writes records as JSON Lines: ``{"id", "window", "span", "text"?, "embedding",
    "metadata"?}``."""

    name: ClassVar[str] = "jsonl"
    contract_version: ClassVar[str] = "1.6"
    Config = JsonlSinkConfig
    reader = JsonlReader
    line_streams = frozenset({"records"})

    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        out = files["records"]
        vectors = [checked_vector(record) for record in records]  # all, before any is written
        for record, vector in zip(records, vectors, strict=True):
            values: list[float] = vector.astype(np.float64).tolist()
            if self.config.precision is not None:
                values = [round(value, self.config.precision) for value in values]
            line = record_fields(record, text=self.config.text)
            line["embedding"] = values
            if record.metadata:
                line["metadata"] = record_metadata(record)
            out.write_json_line(line)
