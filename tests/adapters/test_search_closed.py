"""A closed index (``open_index(...)``, closed or past its ``with`` block) refuses to search.

It rebuilt its query model on the next search instead, silently: a model nobody would
close, held by an object its owner believed released. A closed ``Embedder`` refuses use,
as a closed file does; an index now does too, with :class:`IndexClosed` (a
``RuntimeError``, as the closed ``Embedder``'s), whose message names the index and the fix.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import seamline.adapters.search as search_module
from seamline.adapters.search import QueryEncoder
from seamline.api import IndexClosed, Searcher, open_index
from tests.adapters.test_search import TEXTS, registry, write_index

CLOSED = r"^this index \(.*emb\.jsonl\) is closed: open it again \(open_index\) .* `with open_index"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("closed-index") / "emb.jsonl"
    write_index(out.parent, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    return out


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[QueryEncoder]:
    """Every query model built from now on."""
    models: list[QueryEncoder] = []

    class Counted(QueryEncoder):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            models.append(self)

    monkeypatch.setattr(search_module, "QueryEncoder", Counted)
    return models


def refused_every_way(searcher: Searcher) -> None:
    """Each way of searching ``searcher`` raises :class:`IndexClosed`, a ``RuntimeError``."""
    calls = [
        lambda: searcher.search(TEXTS[1]),
        lambda: searcher.find(TEXTS[1], k=1),
        lambda: searcher.find_each([TEXTS[1], TEXTS[2]], k=1),
        lambda: searcher.encoder,
    ]
    for call in calls:
        with pytest.raises(IndexClosed, match=CLOSED) as refused:
            call()
        assert isinstance(refused.value, RuntimeError)


def test_a_closed_index_refuses_every_search_and_builds_no_model(
    index: Path, built: list[QueryEncoder]
) -> None:
    searcher = open_index(index, registry=registry())
    assert searcher.find(TEXTS[1], k=1).hits[0].doc_id == "d1"
    assert not searcher.closed
    searcher.close()
    assert searcher.closed
    refused_every_way(searcher)
    assert len(built) == 1, "no model built again"
    assert searcher._encoder is None
    searcher.close()  # closing again is harmless
    refused_every_way(searcher)


def test_an_index_past_its_with_block_refuses_and_cannot_be_entered_again(
    index: Path, built: list[QueryEncoder]
) -> None:
    with open_index(index, registry=registry()) as searcher:
        assert searcher.search(TEXTS[2], k=1)[0].doc_id == "d2"
        later = searcher.find_each([TEXTS[1], TEXTS[2]], k=1)  # lazy: nothing found yet
    refused_every_way(searcher)
    with pytest.raises(IndexClosed, match=CLOSED):
        next(later)
    with pytest.raises(IndexClosed, match=CLOSED), searcher:
        pass
    searcher.close()  # and the with block's close, then this one: harmless
    assert len(built) == 1


def test_an_index_closed_before_any_search_refuses_without_building(
    index: Path, built: list[QueryEncoder]
) -> None:
    searcher = open_index(index, registry=registry())
    searcher.close()
    refused_every_way(searcher)
    assert built == []


def test_find_each_stops_at_the_close_of_its_index(index: Path, built: list[QueryEncoder]) -> None:
    with open_index(index, registry=registry()) as searcher:
        answers = searcher.find_each([TEXTS[1], TEXTS[2], TEXTS[0]], k=1)
        assert next(answers).hits[0].doc_id == "d1"
        searcher.close()
        with pytest.raises(IndexClosed, match=CLOSED):
            next(answers)


def test_a_close_by_another_thread_during_a_search_is_index_closed(index: Path) -> None:
    # The released model's own "this Embedder is closed" named no index.
    searcher = open_index(index, registry=registry())
    searcher._encoder = ClosingFirst(searcher, searcher.encoder)  # type: ignore[assignment]
    with pytest.raises(IndexClosed, match=CLOSED):
        searcher.find(TEXTS[1], k=1)
    assert searcher.closed


class ClosingFirst:
    """The query model, its searcher closed (as by another thread) as a query reaches it."""

    def __init__(self, searcher: Searcher, model: QueryEncoder) -> None:
        self.searcher = searcher
        self.model = model

    def __call__(self, query: str) -> np.ndarray:
        self.searcher.close()
        return self.model(query)  # the model is closed: "this Embedder is closed"

    def close(self) -> None:
        self.model.close()

    def let_go(self) -> None:
        self.model.let_go()


def test_a_closed_index_dropped_is_freed_with_its_model_without_the_cyclic_collector(
    index: Path,
) -> None:
    # The query model (an Embedder) lived on in reference cycles after close() until
    # the cyclic collector ran: its queue held its pass, its compiled steps its report.
    searcher = open_index(index, registry=registry())
    searcher.find(TEXTS[1], k=1)
    embedder = weakref.ref(searcher.encoder.embedder)
    gc.collect()
    gc.disable()
    try:
        searcher.close()
        gone = weakref.ref(searcher)
        del searcher
        assert gone() is None
        assert embedder() is None, "its query model freed with it"
    finally:
        gc.enable()
