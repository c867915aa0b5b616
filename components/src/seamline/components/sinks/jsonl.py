"""``jsonl``: one JSON line per output record, and one per document set aside.

Records are encoded and appended as they arrive, so memory does not grow with the
corpus. Both files are written under hidden temporary names and published only by
``close(complete=True)`` (see :mod:`._atomic`). The errors file is always
published, empty when nothing failed, so that "no errors" can be told apart from
"never ran". The sink is resumable: ``commit`` checkpoints both files with the
loader cursor, and ``recover`` continues from the last checkpoint (see
:mod:`._checkpoint`). It stages parts: a run split into shards writes one part per
shard and publishes them under one manifest (see :mod:`._parts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
from pydantic import Field, model_validator

from seamline.components._json_safe import json_safe, safe_text
from seamline.components.sinks._checkpoint import ResumableGroup
from seamline.components.sinks._parts import StagingSink
from seamline.components.sinks._paths import OutputPath, check_distinct
from seamline.components.sinks._records import NoState
from seamline.contracts import (
    ComponentConfig,
    ContractViolation,
    DocumentError,
    OutputRecord,
    Sink,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from seamline.components.sinks._atomic import AtomicFile


def default_errors_path(path: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/emb.errors.jsonl``: beside the output, named after it."""
    return path.with_name(f"{path.stem}.errors.jsonl")


def default_manifest_path(path: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/emb.manifest.json``: what made the output, beside it."""
    return path.with_name(f"{path.stem}.manifest.json")


def errors_label(errors_path: Path | None) -> str:
    """How a collision message names the errors file: its field, or what it is by default."""
    return "errors_path" if errors_path is not None else "the errors file ('<stem>.errors.jsonl')"


def error_line(error: DocumentError) -> dict[str, Any]:
    """The JSON object recorded for a document that was set aside (the dead-letter record).

    Strict JSON whatever the loader put in it (see :mod:`seamline.components._json_safe`),
    so that one odd file name cannot end the run that is setting it aside.
    """
    return {
        "id": safe_text(error.id),
        "stage": safe_text(getattr(error, "stage", "load")),
        "reason": safe_text(error.reason),
        "metadata": json_safe(dict(error.metadata)),
    }


def record_fields(record: OutputRecord) -> dict[str, Any]:
    """The fields that identify a record (everything but its vector), in output order."""
    start, end = record.span
    return {
        "id": safe_text(record.doc_id),
        "window": int(record.index),
        "span": [int(start), int(end)],
    }


def record_metadata(record: OutputRecord) -> dict[str, Any]:
    """The record's metadata as strict JSON: NaN and infinity become null, texts UTF-8 safe."""
    return cast(dict[str, Any], json_safe(dict(record.metadata)))


def checked_vector(record: OutputRecord) -> np.ndarray[Any, Any]:
    """The record's vector as a finite 1-D array, or a ContractViolation naming the record.

    Every first-party sink takes its vectors through here, so each refuses a NaN or an
    infinite value the same way, before it writes anything of the batch: an output
    never holds a vector no search can use.
    """
    vector = np.asarray(record.vector)
    if vector.ndim != 1:
        raise ContractViolation(
            f"record {record.doc_id!r} window {record.index}: expected a 1-D vector, "
            f"got shape {vector.shape}"
        )
    if not np.isfinite(vector).all():
        raise ContractViolation(
            f"record {record.doc_id!r} window {record.index}: the vector holds NaN or "
            "infinity; the model or its attention produced it (run with verify: true to "
            "check the attention against the reference). Nothing of this batch was written"
        )
    return vector


class JsonlSinkConfig(ComponentConfig):
    """The ``with:`` block of the ``jsonl`` sink."""

    path: OutputPath = Field(
        description="Output file, one JSON object per record; parents are created. A relative "
        "path is relative to the working directory of the run."
    )
    errors_path: OutputPath | None = Field(
        default=None,
        description="Where documents that were set aside are recorded, one JSON object each. "
        "Default: '<path stem>.errors.jsonl' beside path.",
    )
    precision: int | None = Field(
        default=None,
        description="Round embedding values to this many decimal places to shrink the file; "
        "null writes every value exactly (float32 values round-trip bit for bit).",
    )

    @model_validator(mode="after")
    def _check(self) -> JsonlSinkConfig:
        if self.precision is not None and not 0 <= self.precision <= 17:
            raise ValueError(f"precision must be between 0 and 17 (or null), not {self.precision}")
        check_distinct(
            [
                ("path", self.path),
                (errors_label(self.errors_path), self.resolved_errors_path()),
                ("the manifest", default_manifest_path(self.path)),
            ]
        )
        return self

    def resolved_errors_path(self) -> Path:
        return self.errors_path if self.errors_path is not None else default_errors_path(self.path)


class JsonlSink(StagingSink, Sink[JsonlSinkConfig]):
    """Writes records as JSON Lines: ``{"id", "window", "span", "embedding", "metadata"?}``."""

    name: ClassVar[str] = "jsonl"
    contract_version: ClassVar[str] = "1.3"
    Config = JsonlSinkConfig
    resumable: ClassVar[bool] = True
    stageable: ClassVar[bool] = True

    def __init__(self, config: JsonlSinkConfig) -> None:
        super().__init__(config)
        # Files are created on first use, so building a sink (to validate a pipeline,
        # say) leaves no trace on disk. The manifest is published first, then the
        # errors file, then the records: see AtomicGroup.
        self._group = ResumableGroup(
            self.name,
            default_manifest_path(config.path),
            [("errors", config.resolved_errors_path()), ("records", config.path)],
            state=NoState,
        )
        self._closed = False

    def staging_targets(self) -> tuple[Path, list[tuple[str, Path]]]:
        return self._group.manifest_path, self._group.targets

    def relocated(self, directory: Path) -> JsonlSink:
        config = self.config.model_copy(
            update={
                "path": directory / self.config.path.name,
                "errors_path": directory / self.config.resolved_errors_path().name,
            }
        )
        return JsonlSink(config)

    def start(self, manifest: Mapping[str, Any]) -> None:
        self.lock_part()
        self._group.manifest = manifest
        self._group.clear()  # a fresh run: forget what an interrupted one left behind

    def _recover(self, manifest: Mapping[str, Any]) -> str | None:
        recovered = self._group.recover(manifest)
        return None if recovered is None else recovered[0]

    def commit(self, cursor: str) -> None:
        self._check_open()
        self._group.commit(cursor, NoState())

    def write(self, records: Sequence[OutputRecord]) -> None:
        out = self._open()["records"]
        vectors = [checked_vector(record) for record in records]  # all, before any is written
        for record, vector in zip(records, vectors, strict=True):
            values: list[float] = vector.astype(np.float64).tolist()
            if self.config.precision is not None:
                values = [round(value, self.config.precision) for value in values]
            line = record_fields(record)
            line["embedding"] = values
            if record.metadata:
                line["metadata"] = record_metadata(record)
            out.write_json_line(line)

    def write_error(self, error: DocumentError) -> None:
        self._open()["errors"].write_json_line(error_line(error))

    def close(self, complete: bool = True) -> None:
        if self._closed:
            return
        self._closed = True
        if self.untouchable:  # another run owns the destination, or a resume was refused
            self.unlock_part()
            return
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
            raise RuntimeError("jsonl sink: write after close")

    def _open(self) -> dict[str, AtomicFile]:
        """The partial files by purpose (``records``, ``errors``), created on first use."""
        self._check_open()
        return self._group.open()
