"""What a notebook shows for seamline's objects: a short line that says what each one is.

An ``Embedder``, ``Pipeline``, index (``Searcher``) and ``Pending`` printed
``<seamline.core.embedder.Embedder at 0x7f…>``, nothing of the model or whether it was
closed; a ``RunSummary`` and a ``Found`` printed as one line of several KB (every shard's
report and the provenance; every hit's text and metadata). Each now has a bounded repr.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from seamline.adapters.search import Found, Hit
from seamline.api import Embedder, Pipeline, open_index
from seamline.core.config import parse_pipeline
from tests.adapters.test_search import TEXTS, registry, write_index
from tests.core.toy import MemorySink, toy_registry

LIMIT = 250


def test_embedder_and_pending_say_their_model_precision_and_state() -> None:
    embedder = Embedder({"use": "toy"}, "native", registry=toy_registry())
    assert repr(embedder) == "<Embedder toy float32, long_text=truncate, open>"
    pending = embedder.submit(["one", "two"])
    assert repr(pending) == "<Pending 2 texts, queued>"
    assert repr(embedder).endswith("open, 2 texts queued>")
    pending.result()
    assert repr(pending) == "<Pending 2 texts, done>"
    waiting = embedder.submit("one")
    assert waiting.cancel()
    assert repr(waiting) == "<Pending 1 text, cancelled>"
    embedder.close()
    assert repr(embedder) == "<Embedder toy float32, long_text=truncate, closed>"


def test_pipeline_and_run_summary_are_one_short_line() -> None:
    reg = toy_registry()
    text = (
        f"pipeline: {'a-long-name-' * 20}\n"
        f"loader: {{use: list, with: {{texts: {['w w'] * 40!r}}}}}\n"
        "model: {use: toy}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [8]}\n"
    )
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", reg), reg)
    shown = repr(pipeline)
    assert shown.startswith("<Pipeline 'a-long-name-a-long")
    assert shown.endswith("…': list -> toy -> memory>")
    assert len(shown) < LIMIT
    summary = pipeline.run()
    MemorySink.reset()
    shown = repr(summary)
    assert "output=RunCounts(documents=40, failed_documents=0" in shown, shown
    assert "precision={'chosen': 'float32', ...}" in shown, shown
    # Each name shown is one the summary is read by (a notebook user types what they see).
    assert summary.output.documents == 40
    assert summary.output.failed_documents == summary.output.skipped_documents == 0
    assert summary.shard_count == 1
    assert summary.precision["chosen"] == "float32"
    many = replace(summary, provenance={f"stage{i}": "x" * 100 for i in range(100)})
    assert len(repr(many)) < LIMIT + 100, "the provenance was printed whole"


def test_an_index_and_what_it_found_are_bounded(tmp_path: Path) -> None:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    with open_index(out, registry=registry()) as index:
        assert repr(index) == f"<Searcher {out} (jsonl): toy float32, open>"
        found = index.find(TEXTS[1], k=3)
        assert repr(index).endswith("open, model built>")
    assert repr(index).endswith("closed>")
    assert repr(found).startswith("Found(3 hits, best ")
    assert "'d1'" in repr(found)
    hit = replace(found.hits[0], text="word " * 2000, metadata={f"k{i}": i for i in range(500)})
    big = Found([hit] * 100, found.how)
    assert len(repr(hit)) < LIMIT + 100
    assert len(repr(big)) < LIMIT
    assert isinstance(hit, Hit)


def test_a_hit_shows_a_newline_in_its_text_as_a_space_not_as_damage(tmp_path: Path) -> None:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    with open_index(out, registry=registry()) as index:
        hit = index.find(TEXTS[1], k=1).hits[0]
    shown = repr(replace(hit, text="a copy is made and\nreturned"))
    assert "text='a copy is made and returned'" in shown
    assert "\ufffd" not in repr(replace(hit, text="tab\there"))
