"""What a span or log line repeats of the input is cut: a document id of a megabyte.

A loader takes ids of any length (an index keeps them whole), but every span of a
document, and the log line of a failed one, repeated it: five 1 MiB ids made one trace
batch larger than an OTLP receiver takes (4 MiB), and the run's whole trace was lost.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from seamline.contracts import Document, DocumentError, Loaded
from seamline.contracts.untrusted import TELEMETRY_TEXT_CHARS
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import ListLoader, MemorySink, toy_registry
from tests.faults.call_scenarios import recorded_spans

LONG = 1_000_000


def test_span_attributes_carry_a_cut_document_id(monkeypatch: pytest.MonkeyPatch) -> None:
    MemorySink.reset()
    read = ListLoader.read

    def long_ids(self: ListLoader, **kwargs: Any) -> Iterator[Loaded]:
        for loaded in read(self, **kwargs):  # each id a megabyte long, and still its own
            item: Document | DocumentError = loaded.item
            longer = dataclasses.replace(item, id="x" * LONG + item.id)
            yield dataclasses.replace(loaded, item=longer)

    monkeypatch.setattr(ListLoader, "read", long_ids)
    registry = toy_registry()
    text = (
        "pipeline: long-ids\n"
        "loader: {use: list, with: {texts: ['a b', '!unreadable', 'c d e']}}\n"
        "model: {use: toy}\nattention: {use: native}\nsink: {use: memory}\n"
    )
    with recorded_spans() as exporter:
        Orchestrator(parse_pipeline(text, "long-ids.yaml", registry), registry).run()
        spans = exporter.get_finished_spans()
    ids = {
        span.name: str(span.attributes["seamline.document.id"])
        for span in spans
        if span.attributes and "seamline.document.id" in span.attributes
    }
    assert set(ids) == {"seamline.model.prepare", "seamline.sink.write_error"}, ids
    for shown in ids.values():
        assert shown.startswith("x" * TELEMETRY_TEXT_CHARS + "... (1,000,00")
        assert len(shown) < TELEMETRY_TEXT_CHARS + 40
    assert [len(r.doc_id) for r in MemorySink.records] == [LONG + 2, LONG + 2], "the data keeps it"


def test_span_events_cut_texts_and_write_mappings_as_json() -> None:
    from seamline.contracts import AttentionChosen, DocumentFailed
    from seamline.core.telemetry import EVENT_TEXT_CHARS, span_event, tracer

    with recorded_spans() as exporter:
        with tracer().start_as_current_span("holder"):
            span_event(DocumentFailed(doc_id="x" * LONG, reason="r", stage="load"))
            rejected = {"tpu-flash": ("not on a TPU", "needs 'pallas'")}
            span_event(AttentionChosen("b4", "native", "first that serves", rejected))
        (span,) = exporter.get_finished_spans()
    failed, chosen = span.events
    assert str(failed.attributes["seamline.doc_id"]).startswith("x" * EVENT_TEXT_CHARS + "...")
    assert json.loads(str(chosen.attributes["seamline.rejected"])) == {
        "tpu-flash": ["not on a TPU", "needs 'pallas'"]
    }
