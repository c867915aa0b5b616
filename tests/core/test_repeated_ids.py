"""A loader that yields one id twice gets the repeat set aside, naming the loader.

The host checked nothing: a third-party loader yielding every document as id "same"
finished "done" with 370 rows under one (id, window) in LanceDB, and the next
``upsert`` run computed everything, then failed at publication ("Ambiguous merge
inserts") on every try.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from seamline.contracts import Document, DocumentError, Loaded, Shard
from seamline.core.config import parse_pipeline
from seamline.core.host import timed_reads
from seamline.core.monitor_hub import MonitorHub
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.repeated_ids import YieldedIds
from seamline.core.seams import Seam
from tests.core.toy import ListLoader, ListLoaderConfig, MemorySink, toy_registry


class SameIdLoader(ListLoader):
    """Every document's id is "same" (a loader that forgot its id column)."""

    name: ClassVar[str] = "same-id"

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        for i, text in enumerate(self.config.texts):
            yield Loaded(str(i), Document("same", text))


def test_seen_ids_tells_a_repeat_apart_through_every_growth() -> None:
    seen = YieldedIds(capacity=8)
    assert all(seen.add(f"doc-{n}") for n in range(5_000)), "all new"
    assert len(seen) == 5_000
    assert not any(seen.add(f"doc-{n}") for n in range(0, 5_000, 3)), "all seen"
    assert seen.add("doc-5000")
    assert not seen.add("doc-5000")


def test_a_repeated_id_is_set_aside_naming_the_loader_and_its_distribution() -> None:
    loader: Any = SameIdLoader(ListLoaderConfig(texts=["a", "b", "c"]))
    info = ComponentInfo("loader", "same-id", "x:y", "acme-loader", "0.3.1", "ok", "", SameIdLoader)
    seam = Seam(loader, info, MonitorHub(()))
    items = [loaded.item for loaded in timed_reads(loader, seam, Shard(), None, 100)]
    assert isinstance(items[0], Document), "the first document with the id keeps it"
    assert all(isinstance(item, DocumentError) for item in items[1:])
    reason = items[2].reason
    assert "loader 'same-id' (from acme-loader 0.3.1) yielded id 'same' again" in reason
    assert "at cursor '2'" in reason
    assert items[2].metadata["cursor"] == "2"


def test_a_run_writes_one_row_per_id_and_sets_the_repeats_aside() -> None:
    MemorySink.reset()
    same_id = ComponentInfo(
        "loader", "same-id", "x:y", "acme-loader", "0.3.1", "ok", "", SameIdLoader, "1.0"
    )
    registry = Registry([*toy_registry().entries(), same_id])
    text = (
        "pipeline: same\n"
        "loader: {use: same-id, with: {texts: ['one two', 'three', 'four five']}}\n"
        "model: {use: toy}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    Orchestrator(parse_pipeline(text, "same.yaml", registry), registry).run()
    assert {record.doc_id for record in MemorySink.records} == {"same"}
    assert len(MemorySink.records) == 1, "one document's rows, not three"
    assert [error.id for error in MemorySink.errors] == ["same", "same"]
