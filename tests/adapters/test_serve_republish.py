"""``/v1/search`` while the index is republished: a search under way on the index it began
with is answered, and that index is closed once it is done; none is opened at the stop.

A closed index refuses to search (:class:`~seamline.api.IndexClosed`), so the server
must never close one under a search: each search holds the searcher it began with,
and the one a republish replaced is closed when its last search is done. Requests go
through httpx's ASGI transport to the application in this process (no socket), with a
real index and its tiny query model; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import ctypes.util
import os
import platform
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from seamline.adapters.search import QueryEncoder, Searcher
from seamline.adapters.serve import freed_memory
from seamline.adapters.serve import index as serve_index
from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.freed_memory import release_freed_memory
from seamline.adapters.serve.index import IndexSearch
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.adapters.in_process import ReadyEngine
from tests.adapters.serving import TEXTS, pipeline_text

WAIT_S = 60.0
LONG = TEXTS[6]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def publish(registry: Registry, *overrides: str) -> None:
    """The pipeline run (again): its output published anew, by the same model unless
    ``overrides`` change it."""
    summary = Pipeline.from_yaml("p.yaml", list(overrides), registry=registry).run()
    assert summary.output.documents == len(TEXTS)


class Gate:
    """Holds the first search inside its searcher, after its query is embedded, until
    ``go``: a search under way while the test republishes the index."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.go = threading.Event()
        self.held: Searcher | None = None
        found = Searcher._found

        def held_found(searcher: Searcher, *args: Any) -> Iterator[Any]:
            if self.held is None:
                self.held = searcher
                self.entered.set()
                assert self.go.wait(WAIT_S), "never let go"
            return found(searcher, *args)

        monkeypatch.setattr(Searcher, "_found", held_found)


@pytest.fixture
def index(folder: Path, tiny_registry: Registry) -> Iterator[IndexSearch]:
    publish(tiny_registry)
    searched = IndexSearch(tiny_registry, Path("out/emb.jsonl"))
    try:
        yield searched
    finally:
        searched.close()


def client_of(index: IndexSearch) -> httpx.AsyncClient:
    engine: Any = ReadyEngine()
    app = build_app(Served(engine, index, Limits(), ServeMetrics(), "m"))
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://test", timeout=WAIT_S)


async def search(client: httpx.AsyncClient) -> httpx.Response:
    return await client.post("/v1/search", json={"query": LONG, "k": 1})


def test_a_search_under_way_on_a_replaced_index_is_answered_then_that_index_closed(
    index: IndexSearch, tiny_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing the replaced searcher at once would fail the search still using it (500).
    gate = Gate(monkeypatch)

    async def scenario() -> None:
        async with client_of(index) as client:
            under_way = asyncio.create_task(search(client))
            assert await asyncio.to_thread(gate.entered.wait, WAIT_S), "the search began"
            first = gate.held
            assert first is not None
            assert index._opened is not None
            assert index._opened.searcher is first
            await asyncio.to_thread(publish, tiny_registry)  # republished meanwhile
            later = await asyncio.wait_for(search(client), WAIT_S)
            assert later.status_code == 200, later.text
            assert later.json()["data"][0]["id"] == "d6"
            assert index._opened.searcher is not first, "opened anew for the later search"
            assert not first.closed, "still in use by the search under way"
            gate.go.set()
            answered = await asyncio.wait_for(under_way, WAIT_S)
            assert answered.status_code == 200, answered.text
            assert answered.json()["data"][0]["id"] == "d6"
            assert first.closed, "closed once its search was done"
            assert first._encoder is None, "its query model released"

    try:
        asyncio.run(scenario())
    finally:
        gate.go.set()


def test_at_the_stop_a_search_under_way_is_answered_and_a_later_one_opens_nothing(
    index: IndexSearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A search reaching the index after the server's stop closed it opened the index
    # again, and its model was never closed.
    gate = Gate(monkeypatch)

    async def scenario() -> None:
        async with client_of(index) as client:
            under_way = asyncio.create_task(search(client))
            assert await asyncio.to_thread(gate.entered.wait, WAIT_S), "the search began"
            first = gate.held
            assert first is not None
            await asyncio.to_thread(index.close)  # the lifespan's end
            assert not first.closed, "still in use by the search under way"
            late = await asyncio.wait_for(search(client), WAIT_S)
            assert late.status_code == 503, late.text
            assert late.json()["error"]["code"] == "not_ready"
            assert "shutting down" in late.json()["error"]["message"]
            assert index._opened is None, "no index opened after the stop"
            gate.go.set()
            answered = await asyncio.wait_for(under_way, WAIT_S)
            assert answered.status_code == 200, answered.text
            assert first.closed, "closed once its search was done"

    try:
        asyncio.run(scenario())
    finally:
        gate.go.set()


def test_the_memory_a_replaced_query_model_freed_is_handed_back_once_it_is_closed(
    index: IndexSearch, tiny_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # glibc's malloc kept what each replaced query model freed: the server grew by about
    # 27 MiB a republish (benchmarks/memory/republish.py). A republication by the same
    # model keeps its query model; one by another model replaces it.
    events: list[str] = []
    closed = QueryEncoder.close

    def closing(encoder: QueryEncoder) -> None:
        events.append("closed")
        closed(encoder)

    monkeypatch.setattr(QueryEncoder, "close", closing)
    monkeypatch.setattr(
        serve_index, "release_freed_memory", lambda: events.append("trimmed"), raising=False
    )

    async def scenario() -> None:
        async with client_of(index) as client:
            assert (await search(client)).status_code == 200
            assert events == [], "nothing closed, nothing to hand back"
            await asyncio.to_thread(publish, tiny_registry)  # the same model: kept
            assert (await search(client)).status_code == 200
            assert events == ["trimmed"], "the replaced index closed, its model kept"
            events.clear()
            await asyncio.to_thread(publish, tiny_registry, "model.with.max_length=2")
            assert (await search(client)).status_code == 200

    asyncio.run(scenario())
    assert events == ["closed", "trimmed"], "handed back after the replaced model's close"


def test_freed_memory_is_handed_back_with_glibc_and_skipped_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    freed_memory._malloc_trim.cache_clear()
    try:
        if platform.libc_ver()[0] == "glibc":
            assert release_freed_memory()

        def no_library(*_: Any) -> None:
            raise OSError("no C library here")

        freed_memory._malloc_trim.cache_clear()
        monkeypatch.setattr(freed_memory.ctypes, "CDLL", no_library)
        assert not release_freed_memory(), "nothing to call: nothing done, no error"
    finally:
        freed_memory._malloc_trim.cache_clear()


def test_malloc_trim_is_found_without_starting_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # ctypes.util.find_library("c") ran `ldconfig -p` in a subprocess, in the server, at
    # its first republish; the symbol is in the process already.
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")

    def no_process(*_: Any, **__: Any) -> None:
        raise AssertionError("a subprocess was started to find malloc_trim")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(os, "posix_spawn", no_process)
    monkeypatch.setattr(ctypes.util, "find_library", no_process)
    freed_memory._malloc_trim.cache_clear()
    try:
        assert freed_memory._malloc_trim() is not None
        assert release_freed_memory()
    finally:
        freed_memory._malloc_trim.cache_clear()


def test_a_c_library_without_malloc_trim_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    class Musl:  # a C library of other symbols: no malloc_trim attribute
        pass

    monkeypatch.setattr(freed_memory.ctypes, "CDLL", lambda _: Musl())
    freed_memory._malloc_trim.cache_clear()
    try:
        assert not release_freed_memory()
    finally:
        freed_memory._malloc_trim.cache_clear()
