"""``/v1/search``'s index (:class:`~seamline.adapters.serve.index.IndexSearch`) in process.

The index a server searches may be written again while it is served: the pipeline
re-run, perhaps with another model setting. Each search must embed its query with the
model the index's current manifest names, never the one the server first opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seamline.adapters.serve.bodies import SearchRequest
from seamline.adapters.serve.errors import SERVER_ERROR, ApiError
from seamline.adapters.serve.index import IndexSearch
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.adapters.serving import TEXTS, pipeline_text

LONG = TEXTS[6]
"""Twelve words: ``max_length: 2`` embeds the first two only."""


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


def count_builds(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The query models built from now on (each search's searcher builds through this name)."""
    import seamline.adapters.search as search

    built: list[Any] = []

    class Counted(search.QueryEncoder):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            built.append(self)

    monkeypatch.setattr(search, "QueryEncoder", Counted)
    return built


def test_a_republication_by_the_same_model_keeps_the_warm_query_model(
    folder: Path, tiny_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first search after each daily republication took 5 to 16 s: a new query model
    # was built (weights loaded, attention verified, compiled) inside it, under the lock.
    built = count_builds(monkeypatch)
    run(tiny_registry)
    index = IndexSearch(tiny_registry, Path("out/emb.jsonl"))
    try:
        assert top(index, LONG) == ("d6", 1.0)
        first = index._opened
        assert first is not None
        assert len(built) == 1
        run(tiny_registry)  # republished, by the same model
        assert top(index, LONG) == ("d6", 1.0)
        assert index._opened is not first, "the output opened anew"
        assert len(built) == 1, "no query model built again"
        assert first.searcher.closed
        assert first.searcher._encoder is None, "let go by the searcher it replaced"
        assert index._opened.searcher._encoder is built[0], "kept, open, by the new one"
        run(tiny_registry, "model.with.max_length=2")  # another model: built, as before
        assert top(index, LONG) == ("d6", 1.0)
        assert len(built) == 2
    finally:
        index.close()
    assert len(built) == 2  # every model closed at the stop: an embedder refuses use
    for encoder in built:
        with pytest.raises(RuntimeError):
            encoder.embedder.encode("x")


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


def test_a_republish_by_another_model_during_a_search_is_searched_again(
    folder: Path, tiny_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The manifest's stat is taken before the search; a republish by another model landing
    # between it and the rows' read had the rows of one run scored by the other's model.
    from seamline.adapters.serve import index as module

    run(tiny_registry)
    index = IndexSearch(tiny_registry, Path("out/emb.jsonl"))
    try:
        assert top(index, LONG) == ("d6", 1.0)
        first = index._opened
        monkeypatch.setattr(module, "manifest_signature", lambda _: first and first.signature)
        run(tiny_registry, "model.with.max_length=2")  # unseen by the stat, as in the race
        assert top(index, LONG) == ("d6", 1.0), "searched again, with the new model"
        assert index._opened is not first
    finally:
        index.close()


def refusal(index: IndexSearch, query: str, where: str | None = None) -> ApiError:
    with pytest.raises(ApiError) as refused:
        index.find(SearchRequest(query, 3, where))
    return refused.value


def damage_jsonl(output: Path, how: str) -> None:
    if how == "garbage line":
        with output.open("a", encoding="utf-8") as handle:
            handle.write("{not json\n")
    elif how == "truncated":
        output.write_bytes(output.read_bytes()[:-40])
    elif how == "deleted":
        output.unlink()
    else:  # a directory in its place
        output.unlink()
        output.mkdir()


@pytest.mark.parametrize("how", ["garbage line", "truncated", "deleted", "directory"])
def test_a_jsonl_index_broken_while_served_is_a_503_naming_it_by_its_name(
    folder: Path, tiny_registry: Registry, how: str
) -> None:
    # Was 422 invalid_search: the client told the request was its fault.
    run(tiny_registry)
    index = IndexSearch(tiny_registry, folder / "out" / "emb.jsonl")
    try:
        assert top(index, LONG)[0] == "d6"
        damage_jsonl(folder / "out" / "emb.jsonl", how)
        error = refusal(index, LONG)
        assert (error.status, error.code, error.kind) == (503, "index_unavailable", SERVER_ERROR)
        assert "emb.jsonl" in error.message
        assert str(folder) not in error.message
        assert str(folder).lstrip("/") not in error.message
    finally:
        index.close()


def test_a_where_a_jsonl_output_cannot_apply_stays_the_requests_fault(
    folder: Path, tiny_registry: Registry
) -> None:
    run(tiny_registry)
    index = IndexSearch(tiny_registry, folder / "out" / "emb.jsonl")
    try:
        error = refusal(index, LONG, where="id = 'd1'")
        assert (error.status, error.code, error.param) == (400, "invalid_search", "where")
        empty = refusal(index, LONG, where="")  # was answered with every row
        assert (empty.status, empty.code, empty.param) == (400, "invalid_search", "where")
        assert "the where filter is empty" in empty.message
    finally:
        index.close()


LANCE = "sink: {use: lancedb, with: {path: out/emb.lance}}\n"


def test_a_lancedb_table_with_a_data_file_gone_is_a_503_without_server_paths(
    folder: Path, tiny_registry: Registry
) -> None:
    # LanceDB's message named the table's folder without its leading '/' (which the
    # message's cleaning missed) and its own Rust sources (/root/.cargo/registry/...).
    text = (folder / "p.yaml").read_text(encoding="utf-8")
    lance = "\n".join(line for line in text.splitlines() if not line.startswith("sink:"))
    (folder / "p.yaml").write_text(lance + "\n" + LANCE, encoding="utf-8")
    run(tiny_registry)
    index = IndexSearch(tiny_registry, folder / "out" / "emb.lance")
    try:
        assert top(index, LONG)[0] == "d6"
        bad = refusal(index, LONG, where="nope = 1")
        assert (bad.status, bad.code, bad.param) == (400, "invalid_search", "where")
        for data in (folder / "out" / "emb.lance" / "data").iterdir():
            data.unlink()
        for where in (None, "id = 'd1'"):
            error = refusal(index, LONG, where)
            assert (error.status, error.code) == (503, "index_unavailable"), error.message
            assert "emb.lance" in error.message
            assert str(folder).lstrip("/") not in error.message, error.message
            assert ".rs:" not in error.message, error.message
            assert "/root/" not in error.message, error.message
    finally:
        index.close()


def use_lancedb(folder: Path) -> None:
    text = (folder / "p.yaml").read_text(encoding="utf-8")
    lance = "\n".join(line for line in text.splitlines() if not line.startswith("sink:"))
    (folder / "p.yaml").write_text(lance + "\n" + LANCE, encoding="utf-8")


@pytest.mark.parametrize(
    ("where", "said"), [("1/0 = 1", "Divide by zero"), ("CAST(text AS INT) = 1", "Cast error")]
)
def test_a_filter_that_fails_on_the_rows_is_the_requests_fault(
    folder: Path, tiny_registry: Registry, where: str, said: str
) -> None:
    # Was 503 index_unavailable, "not as seamline wrote it: run the pipeline again" (and
    # `seamline search --where` said the same): the table was fine, the filter was not.
    use_lancedb(folder)
    run(tiny_registry)
    index = IndexSearch(tiny_registry, folder / "out" / "emb.lance")
    try:
        error = refusal(index, LONG, where=where)
        assert (error.status, error.code, error.param) == (400, "invalid_search", "where")
        assert said in error.message
        assert "failed on the rows" in error.message
        assert "run the pipeline again" not in error.message
        assert not any(text in error.message for text in TEXTS), "no row's text quoted"
        assert ".rs:" not in error.message
    finally:
        index.close()


def test_a_message_keeps_no_server_path(tmp_path: Path, tiny_registry: Registry) -> None:
    # LanceDB's "Not found" named the table's folder without its leading '/', and the
    # Rust sources it was raised in: both reached the client.
    folder = str(tmp_path / "out")
    said = (
        f"Not found: {folder.lstrip('/')}/emb.lance/data/0110.lance, "
        "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-io-13.0.0/src/"
        "local.rs:120:20, /rustc/2d8144b7/library/core/src/result.rs:1896:29; "
        f"also {folder}/emb.lance and /srv/elsewhere/secret.json"
    )
    shown = IndexSearch(tiny_registry, tmp_path / "out" / "emb.lance")._for_clients(said)
    assert shown == "Not found: emb.lance/data/0110.lance; also emb.lance and …"


def test_an_index_given_by_a_relative_path_is_named_by_its_name(
    tmp_path: Path, tiny_registry: Registry
) -> None:
    # ``--index out/lancedb/emb.lance``: messages said "... apply to out/lancedb/emb.lance"
    said = (
        "where '(((' is not a filter LanceDB can apply to out/lancedb/emb.lance: ...; and "
        "./out/lancedb/emb.lance is the output of a lancedb sink"
    )
    shown = IndexSearch(tiny_registry, Path("out/lancedb/emb.lance"))._for_clients(said)
    assert "out/lancedb" not in shown, shown
    assert "apply to emb.lance:" in shown
    bare = IndexSearch(tiny_registry, Path("emb.lance"))._for_clients("apply to emb.lance: x/y")
    assert bare == "apply to emb.lance: x/y", "a bare name takes nothing else out"


def test_a_lancedb_table_republished_by_another_model_is_served_at_its_manifests_version(
    folder: Path, tiny_registry: Registry
) -> None:
    # A LanceDB table commits a run's rows before its manifest is renamed into place: a
    # search in between was answered with the new model's rows scored by the old model's
    # query (200, silently). It reads the version the manifest in place records.
    text = (folder / "p.yaml").read_text(encoding="utf-8")
    lance = "\n".join(line for line in text.splitlines() if not line.startswith("sink:"))
    (folder / "p.yaml").write_text(lance + "\n" + LANCE, encoding="utf-8")
    run(tiny_registry)
    manifest = Path("out/emb.manifest.json")
    published = manifest.read_bytes()
    index = IndexSearch(tiny_registry, Path("out/emb.lance"))
    try:
        assert top(index, LONG) == ("d6", 1.0)
        run(tiny_registry, "model.with.max_length=2")
        manifest.write_bytes(published)  # the window: the new rows in, the old manifest
        assert top(index, LONG) == ("d6", 1.0), "the rows the old manifest's model made"
        run(tiny_registry, "model.with.max_length=2")  # its manifest out: the new version
        assert top(index, LONG) == ("d6", 1.0), "the new rows, with the new model"
    finally:
        index.close()
