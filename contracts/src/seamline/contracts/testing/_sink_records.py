"""The sink suite's records, and how what a sink published is compared with them.

Shared by :mod:`.sink` and :mod:`._sink_staged` (the checks of staged parts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from seamline.contracts.sink import OutputRecord, Sink
from seamline.contracts.versions import parse_version

MakeSink = Callable[[Path], Sink[Any]]
ReadOutput = Callable[[Path], Sequence[OutputRecord] | None]
ReadErrors = Callable[[Path], Sequence[Mapping[str, Any]] | None]

MANIFEST = {"seamline_manifest": 1, "pipeline": "conformance", "run_id": "conformance"}
DIM = 8


def sample_batches(batches: int = 3, per_batch: int = 4) -> list[list[OutputRecord]]:
    """Deterministic records: document ``d<i>`` has windows 0 and 1, vectors of unit scale.

    Each carries a text (non-ASCII, with a tab and a line break, as real windows have)
    and metadata, as the host's records do: a sink declaring sink contract 1.2 must
    read the text back (:func:`stored_fields`); any sink that reads metadata back must
    read the record's own, whole (none at all is allowed: the contract does not ask it).
    """
    rng = np.random.default_rng(0)
    out = []
    number = 0
    for _ in range(batches):
        batch = []
        for _ in range(per_batch):
            doc, window = divmod(number, 2)
            vector = rng.standard_normal(DIM).astype(np.float32)
            span = (window * 10, window * 10 + 10)
            text = f"d{doc} wïndöw {window}:\ttab\nnext line"
            metadata = {"source": f"file-{doc}.txt", "line": doc}
            batch.append(OutputRecord(f"d{doc}", window, span, vector, metadata, text))
            number += 1
        out.append(batch)
    return out


def stored_fields(sink: Sink[Any]) -> tuple[str, ...]:
    """What of a record besides id, window, span and vector must read back as written:
    the text for a sink declaring sink contract 1.2 or later (it stores it)."""
    return ("text",) if parse_version(sink.contract_version) >= (1, 2) else ()


def _keys(records: Sequence[OutputRecord]) -> list[tuple[str, int]]:
    return [(record.doc_id, int(record.index)) for record in records]


def assert_published(
    sink: Sink[Any],
    found: Sequence[OutputRecord] | None,
    expected: list[OutputRecord],
    after: str = "close(True)",
) -> None:
    """``found`` is ``expected``, once each and in order; ``after`` names the call that
    should have published it, so that a failure points at the call that did not."""
    assert found is not None, f"sink {sink.name!r} published nothing after {after}"
    counts: dict[tuple[str, int], int] = {}
    for key in _keys(found):
        counts[key] = counts.get(key, 0) + 1
    repeated = {key: n for key, n in counts.items() if n > 1}
    assert not repeated, (
        f"sink {sink.name!r}: records published more than once: {repeated} "
        "(exactly once is the contract)"
    )
    missing = [key for key in _keys(expected) if key not in counts]
    assert not missing, (
        f"sink {sink.name!r}: {len(missing)} of {len(expected)} records lost, first {missing[:5]}"
    )
    assert _keys(found) == _keys(expected), f"sink {sink.name!r}: records out of order"
    for got, want in zip(found, expected, strict=True):
        assert_same_record(sink, got, want)


def assert_same_record(sink: Sink[Any], got: OutputRecord, want: OutputRecord) -> None:
    """One record read back as written: span and vector, and what its version stores."""
    key = _keys([want])[0]
    assert tuple(got.span) == tuple(want.span), (
        f"sink {sink.name!r}: record {key} has span {got.span}, expected {want.span}"
    )
    vector = np.asarray(got.vector, np.float64)
    assert vector.shape == want.vector.shape, (
        f"sink {sink.name!r}: record {key} reads back a vector of shape "
        f"{vector.shape}, expected {want.vector.shape}"
    )
    assert np.allclose(vector, want.vector, rtol=1e-3, atol=1e-3), (
        f"sink {sink.name!r}: record {key} reads back a different vector"
    )
    for name in stored_fields(sink):
        stored, given = getattr(got, name), getattr(want, name)
        assert stored == given, (
            f"sink {sink.name!r}: record {key} reads back {name} {stored!r}, expected "
            f"{given!r} (a sink declaring contract {sink.contract_version} stores it)"
        )
    metadata = dict(got.metadata or {})
    assert not metadata or metadata == dict(want.metadata), (
        f"sink {sink.name!r}: record {key} reads back metadata {metadata!r}, expected "
        f"{dict(want.metadata)!r} (a sink may store none, never another record's or a part)"
    )
