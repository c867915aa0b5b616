"""``/v1/search``'s index (:class:`~seamline.adapters.serve.index.IndexSearch`) in process.

The index a server searches may be written again while it is served: the pipeline
re-run, perhaps with another model setting. Each search must embed its query with the
model the index's current manifest names, never the one the server first opened.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seamline.adapters.serve.bodies import SearchRequest
from seamline.adapters.serve.index import IndexSearch
from seamline.core.config.user import user_trust
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.adapters.serving import PLUGIN, TEXTS, pipeline_text

LONG = TEXTS[6]
"""Twelve words: ``max_length: 2`` embeds the first two only."""


@pytest.fixture(scope="module")
def tiny_registry() -> Iterator[Registry]:
    sys.path.insert(0, str(PLUGIN))
    try:
        yield Registry.discover(user_trust())
    finally:
        sys.path.remove(str(PLUGIN))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(registry: Registry, *overrides: str) -> None:
    summary = Pipeline.from_yaml("p.yaml", list(overrides), registry=registry).run()
    assert summary.output.documents == len(TEXTS)


def top(index: IndexSearch, query: str) -> tuple[str, float]:
    """The best hit's id, and its score rounded (1.0: the query is embedded as its document)."""
    hit = index.find(SearchRequest(query, 1, None))["data"][0]
    return hit["id"], round(hit["score"], 5)


def test_a_rerun_with_another_model_setting_is_searched_with_the_new_model(
    folder: Path, tiny_registry: Registry
) -> None:
    # The server kept the first model for its life: after a re-run with another setting,
    # queries were embedded with the old one while the documents had the new, silently.
    run(tiny_registry)
    index = IndexSearch(tiny_registry, Path("out/emb.jsonl"))
    try:
        assert top(index, LONG) == ("d6", 1.0)
        first = getattr(index, "_opened", None)
        run(tiny_registry, "model.with.max_length=2")
        assert top(index, LONG) == ("d6", 1.0), "the new model"
        assert first is not None
        assert index._opened is not first, "opened anew"
        assert first.searcher._encoder is None, "the old query model is released"
    finally:
        index.close()


def test_a_searcher_in_use_is_closed_only_when_its_search_is_done(
    folder: Path, tiny_registry: Registry
) -> None:
    run(tiny_registry)
    index = IndexSearch(tiny_registry, Path("out/emb.jsonl"))
    try:
        busy = index._acquire()  # a search under way while the index is written again
        _ = busy.searcher.encoder
        run(tiny_registry, "model.with.max_length=2")
        assert top(index, LONG) == ("d6", 1.0)
        assert busy.retired
        assert busy.searcher._encoder is not None, "still in use"
        index._release(busy)
        assert busy.searcher._encoder is None
    finally:
        index.close()
