"""Search by document (``per_document``): the best window of each of ``k`` documents.

A search ranked windows only: the top 5 of a retrieval prompt held several overlapping
windows of one or two documents (over 65 questions on the Python docs, the top 10 held
6.75 documents on average, as few as 2). ``per_document`` (``find``/``find_each``/
``search``, ``seamline search --per-document``, ``/v1/search``'s ``per_document``) returns
each document once, by its best window, ``k`` documents, best first. On exact search it
is the brute force's answer, checked here against NumPy over the stored vectors of every
kind of output the readback reads, on an index whose windows repeat within and across
documents.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, cast

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from seamline.adapters.cli import main as cli
from seamline.adapters.search import Found, Searcher, scan
from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.index import IndexSearch
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.contracts import OutputRecord
from seamline.contracts.readback import OutputReader, cosines, read_records
from seamline.contracts.stored import StoredRow
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry
from tests.adapters.in_process import ReadyEngine
from tests.adapters.test_search import columnar_registry
from tests.adapters.test_search_held_sharded import publish_in_parts

TEXTS = [
    "alpha " * 20 + "omega",  # 20 equal windows, better than any other document's for alpha
    "beta gamma beta",  # a window repeated within the document
    "gamma delta",  # gamma: a window equal to one of d1's
    "epsilon zeta eta theta",
    "iota kappa beta lambda",  # beta again, in another document
    "mu nu xi omicron pi rho",
]
QUERIES = ["alpha", "beta", "gamma", "theta", "omega", "rho"]
SUFFIX = {"jsonl": "jsonl", "npy": "npy", "parquet": "parquet", "lancedb": "lance"}


def write(folder: Path, sink: str, **options: Any) -> Path:
    """``TEXTS`` embedded one window a word (the toy model's ``windows``) by ``sink``."""
    path = folder / sink / f"emb.{SUFFIX[sink]}"
    reg = columnar_registry()
    text = (
        "pipeline: per-document\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: toy, with: {windows: true}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}, with: {json.dumps({'path': str(path), **options})}}}\n"
        "run: {batch_size: 8, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    return path


def stored(path: Path) -> list[OutputRecord]:
    records = read_records(path, lambda name: columnar_registry().get("sink", name).cls)
    assert records is not None
    return records


def brute_force(records: list[OutputRecord], vector: np.ndarray, k: int) -> list[Any]:
    """``(id, window, score)`` of each of the ``k`` best documents by its best window,
    from every stored vector: ties to the row (and the document) read first."""
    scores = cosines(np.stack([r.vector for r in records]), vector[None, :])[:, 0].tolist()
    best: dict[str, int] = {}
    for position, record in enumerate(records):
        held = best.get(record.doc_id)
        if held is None or scores[position] > scores[held]:
            best[record.doc_id] = position
    ranked = sorted(best.values(), key=lambda position: (-scores[position], position))
    return [(records[p].doc_id, records[p].index, scores[p]) for p in ranked[:k]]


def assert_the_brute_forces(found: Found, expected: list[Any], ties_exact: bool) -> None:
    """``found`` is ``expected``; where an engine orders equal scores its own way
    (``ties_exact`` False), up to which of equally good windows or documents it chose."""
    got = [(hit.doc_id, hit.window, hit.score) for hit in found.hits]
    if ties_exact:
        assert got == expected
        return
    assert [score for *_, score in got] == pytest.approx([s for *_, s in expected], abs=1e-6)
    assert len({doc for doc, *_ in got}) == len(got), "each document once"
    last = expected[-1][2] if expected else 0.0
    surely = {doc for doc, _, score in expected if score > last + 1e-6}
    assert surely <= {doc for doc, *_ in got}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``TEXTS`` written by every sink kind, a sharded jsonl run's parts included."""
    folder = tmp_path_factory.mktemp("per-document")
    written = {sink: write(folder, sink) for sink in SUFFIX}
    written["lancedb-indexed"] = write(
        folder / "indexed", "lancedb", index={"type": "hnsw", "num_partitions": 1}
    )
    sharded = write(folder / "sharded", "jsonl")
    publish_in_parts(sharded, stored(sharded), "run-2", 3)
    written["jsonl-sharded"] = sharded
    return written


@pytest.mark.parametrize(
    "kind", ["jsonl", "jsonl-sharded", "npy", "parquet", "lancedb", "lancedb-indexed"]
)
@pytest.mark.parametrize("k", [1, 3, 6, 10])
def test_per_document_is_the_brute_forces_best_window_of_each_document(
    outputs: dict[str, Path], kind: str, k: int
) -> None:
    path = outputs[kind]
    records = stored(path)
    scanned = not kind.startswith("lancedb")
    with Searcher(columnar_registry(), path) as index:
        answers = list(index.find_each(QUERIES, k, exact=True, per_document=True))
        for query, found in zip(QUERIES, answers, strict=True):
            expected = brute_force(records, index.encoder(query), k)
            assert len(expected) == min(k, len(TEXTS))
            assert_the_brute_forces(found, expected, ties_exact=scanned)
            assert "the best window of each document" in found.how
            alone = index.find(query, k, exact=True, per_document=True)
            assert [(h.doc_id, h.window) for h in alone.hits] == [
                (h.doc_id, h.window) for h in found.hits
            ]
        # Through the table's vector index (approximate in general): still each document
        # once, best first, each hit's score its window's own.
        for found in index.find_each(QUERIES, k, per_document=True):
            scores = [hit.score for hit in found.hits]
            assert scores == sorted(scores, reverse=True)
            assert len({hit.doc_id for hit in found.hits}) == len(found.hits)


def test_the_default_is_still_windows_several_of_a_document(outputs: dict[str, Path]) -> None:
    with Searcher(columnar_registry(), outputs["jsonl"]) as index:
        windows = index.find("alpha", 5)
        documents_ = index.find("alpha", 5, per_document=True)
        hits = index.search("alpha", 5, per_document=True)
    assert [hit.doc_id for hit in windows.hits] == ["d0"] * 5
    assert windows.how == "exact: every one of 40 rows"
    assert documents_.hits[0].doc_id == "d0"
    assert len({hit.doc_id for hit in documents_.hits}) == 5
    assert [(h.doc_id, h.window) for h in hits] == [(h.doc_id, h.window) for h in documents_.hits]


def test_an_engine_is_asked_for_more_windows_until_k_documents_are_found(
    outputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 12 windows nearest "alpha" (4 a document, for 3) are all d0's: asked again for 48,
    # the table's 40 come back.
    path = outputs["lancedb"]
    with Searcher(columnar_registry(), path) as index:
        found = index.find("alpha", 3, per_document=True)
        expected = brute_force(stored(path), index.encoder("alpha"), 3)
        assert_the_brute_forces(found, expected, ties_exact=False)
        assert found.how.endswith("; the best window of each document, from the 40 nearest windows")
        # Bounded: past the most windows one search reads, the documents found there (the
        # best, in order), and the answer says it found fewer.
        from seamline.adapters.search import documents

        monkeypatch.setattr(documents, "MAX_WINDOWS", 12)
        short = index.find("alpha", 3, per_document=True)
    assert [hit.doc_id for hit in short.hits] == ["d0"]
    assert "(1 of 3 documents found there: the most windows one search reads)" in short.how


def test_an_engine_with_no_more_windows_says_it_found_fewer_than_k_documents(
    outputs: dict[str, Path],
) -> None:
    # The table holds fewer documents than asked for: every window comes back, and the
    # answer says how many of k it found rather than stopping short in silence.
    path = outputs["lancedb"]
    documents_ = len({record.doc_id for record in stored(path)})
    with Searcher(columnar_registry(), path) as index:
        found = index.find("alpha", documents_ + 5, per_document=True)
        whole = index.find("alpha", documents_, per_document=True)
    assert len(found.hits) == documents_
    note = f"({documents_} of {documents_ + 5} documents: the engine returned no more windows)"
    assert found.how.endswith(note)
    assert "documents: the engine returned" not in whole.how


def test_a_where_filter_applies_before_the_documents_are_chosen(outputs: dict[str, Path]) -> None:
    path = outputs["lancedb-indexed"]
    kept = [record for record in stored(path) if record.doc_id not in ("d0", "d2")]
    with Searcher(columnar_registry(), path) as index:
        for exact in (True, False):
            found = index.find(
                "gamma", 3, exact=exact, where="id NOT IN ('d0', 'd2')", per_document=True
            )
            expected = brute_force(kept, index.encoder("gamma"), 3)
            assert_the_brute_forces(found, expected, ties_exact=False)
            assert "where id NOT IN" in found.how


def test_per_document_must_be_a_bool(outputs: dict[str, Path]) -> None:
    refused = pytest.raises(TypeError, match="per_document must be True or False, not 'no'")
    with Searcher(columnar_registry(), outputs["jsonl"]) as index, refused:
        index.find("alpha", per_document=cast("bool", "no"))


def test_the_scan_keeps_the_brute_forces_documents_across_chunks_and_parts() -> None:
    # Small chunks, documents interleaved: a document pushed out of the best k comes back
    # with a better window later; equal vectors within and across documents.
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((60, 6)).astype(np.float32)
    vectors[41] = vectors[3]
    vectors[50] = vectors[3] * 3
    ids = [f"d{(i * 7) % 13}" for i in range(60)]
    rows = [StoredRow(id=doc, window=i, span=(0, 1)) for i, doc in enumerate(ids)]

    class Part:
        def __init__(self, first: int, last: int) -> None:
            self.first, self.last = first, last

        def republished(self) -> list[Part]:
            return parts

        def chunks(self, dimension: int | None) -> Any:
            for start in range(self.first, self.last, 4):
                stop = min(start + 4, self.last)
                yield vectors[start:stop], rows[start:stop]

    parts = [Part(0, 25), Part(25, 60)]
    records = [OutputRecord(doc, i, (0, 1), vectors[i], {}, None) for i, doc in enumerate(ids)]
    queries = [v / np.linalg.norm(v) for v in rng.standard_normal((8, 6)).astype(np.float32)]
    queries.append(vectors[3] / np.linalg.norm(vectors[3]))
    for k in (1, 2, 5, 13, 20):
        answers = scan.nearest_each(cast("list[OutputReader]", parts), queries, k, True)
        for query, (ranked, seen) in zip(queries, answers, strict=True):
            assert seen == 60
            got = [(row.id, row.window, score) for score, row in ranked]
            assert got == brute_force(records, query, k)


def test_the_command_line_lists_each_document_once(
    outputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        Registry, "discover", classmethod(lambda cls, trust=None: columnar_registry())
    )
    path = str(outputs["parquet"])
    args = ["search", path, "beta", "-k", "3", "--format", "json"]
    windows = CliRunner().invoke(cli.app, args)
    shown = CliRunner().invoke(cli.app, [*args, "--per-document"])
    assert (windows.exit_code, shown.exit_code) == (0, 0), shown.output
    hits = json.loads(shown.stdout)["hits"]
    assert len({hit["id"] for hit in hits}) == 3
    assert len({hit["id"] for hit in json.loads(windows.stdout)["hits"]}) < 3


def test_v1_search_takes_per_document(outputs: dict[str, Path]) -> None:
    index = IndexSearch(columnar_registry(), outputs["npy"])
    served = Served(cast("Any", ReadyEngine()), index, Limits(), ServeMetrics(), "m")

    async def talk() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=build_app(served))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            bodies = [
                {"query": "beta", "k": 3},
                {"query": "beta", "k": 3, "per_document": True},
                {"query": "beta", "k": 3, "per_document": "yes"},
            ]
            return [await client.post("/v1/search", json=body) for body in bodies]

    try:
        windows, by_document, refused = asyncio.run(talk())
    finally:
        index.close()
    assert (windows.status_code, by_document.status_code) == (200, 200), by_document.text
    assert len({hit["id"] for hit in windows.json()["data"]}) < 3
    assert len({hit["id"] for hit in by_document.json()["data"]}) == 3
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["param"], error["message"]) == (
        "per_document",
        "'per_document' must be true or false, not string",
    )
