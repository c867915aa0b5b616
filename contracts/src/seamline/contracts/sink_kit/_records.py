"""What every first-party sink writes of a record and of a document set aside, in one place.

Each sink stores records its own way (a JSON line, a row of a matrix, a row of a
table), but what it takes from a record is the same: the identifying fields, the
metadata as strict JSON, and a vector that is finite and flat; and a document set
aside is one JSON object in the errors file, whatever the sink. A sink that reads
these from here refuses a NaN vector or writes an odd file name exactly as the
others do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np

from seamline.contracts.documents import DocumentError
from seamline.contracts.errors import ContractViolation
from seamline.contracts.json_safe import json_safe, safe_text
from seamline.contracts.sink import OutputRecord


def default_errors_path(path: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/emb.errors.jsonl``: beside the output, named after it."""
    return path.with_name(f"{path.stem}.errors.jsonl")


def default_manifest_path(path: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/emb.manifest.json``: what made the output, beside it."""
    return path.with_name(f"{path.stem}.manifest.json")


def error_line(error: DocumentError) -> dict[str, Any]:
    """The JSON object recorded for a document that was set aside (the dead-letter record).

    Strict JSON whatever the loader put in it (see :mod:`seamline.contracts.json_safe`),
    so that one odd file name cannot end the run that is setting it aside. ``place``
    is written only when true (``id`` is a place in the input, not a document's id),
    so the records of documents named by their ids are as they always were; so is
    ``duplicate_of`` (the id a place's record repeats), written only when there is one.
    """
    line = {
        "id": safe_text(error.id),
        "stage": safe_text(getattr(error, "stage", "load")),
        "reason": safe_text(error.reason),
        "metadata": json_safe(dict(error.metadata)),
    }
    if getattr(error, "place", False):
        line["place"] = True
    if isinstance(repeated := getattr(error, "duplicate_of", None), str):
        line["duplicate_of"] = safe_text(repeated)
    return line


def record_fields(record: OutputRecord, *, text: bool = False) -> dict[str, Any]:
    """The fields that identify a record, in output order; with ``text``, also the window's
    text where the record carries it (sink contract 1.2), UTF-8 safe."""
    start, end = record.span
    fields: dict[str, Any] = {
        "id": safe_text(record.doc_id),
        "window": int(record.index),
        "span": [int(start), int(end)],
    }
    if text and record.text is not None:
        fields["text"] = safe_text(record.text)
    return fields


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
            "infinity; the model or its attention produced it: weights that hold NaN or "
            "infinity make it whatever the attention (check the model's weights file), and an "
            "attention is checked against the reference when attention.verify is true (the "
            "default). Nothing of this batch was written"
        )
    return vector
