"""A run whose every document failed publishes nothing (:mod:`seamline.core.before_publishing`).

Documents that fail one by one are set aside and the run goes on; when all of them fail,
a setting does not fit the input, and publishing would replace the last output with an
empty one. The user's side of it (a misspelt ``text_field``, from the command line) is
``tests/e2e/test_nothing_embedded.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seamline.contracts import DocumentError, RunCounts, UserError
from seamline.core.before_publishing import check_something_embedded
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.pipeline import Pipeline
from tests.core.test_pinning import registry as registry_with_jsonl_and_shards
from tests.core.toy import MemorySink, toy_registry


@pytest.fixture(autouse=True)
def _clean() -> None:
    MemorySink.reset()


def toy_run(texts: list[str]) -> Orchestrator:
    registry = toy_registry()
    text = (
        "pipeline: toy\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [8]}\n"
    )
    return Orchestrator(parse_pipeline(text, "p.yaml", registry), registry)


def test_a_run_whose_every_document_failed_publishes_nothing() -> None:
    with pytest.raises(UserError) as refused:
        toy_run(["!a", "!b", "!c"]).run()
    said = str(refused.value)
    assert said.startswith("all 3 documents read were set aside as failed, and none was embedded")
    assert "(the first, 'd0': unreadable)" in said
    assert "nothing was published, so the output keeps what it held" in said
    assert MemorySink.closed == [False], "the sink was closed without publishing"
    assert len(MemorySink.errors) == 3, "each document was still set aside as it failed"


def test_one_document_embedded_is_enough_to_publish() -> None:
    summary = toy_run(["!a", "w w", "!c"]).run()
    assert summary.output.documents == 1
    assert summary.output.failed_documents == 2
    assert MemorySink.closed == [True]


def test_an_empty_input_is_the_loaders_to_refuse() -> None:
    """Nothing read, nothing failed: not this check's (``text-files`` and ``parquet``
    refuse a path that matches nothing themselves)."""
    assert toy_run([]).run().output.read == 0


def test_the_refusal_quotes_a_bounded_visible_reason() -> None:
    hostile = DocumentError("d\x1b[2J", "line 1: " + "x" * 5000 + "\x07")
    with pytest.raises(UserError) as refused:
        check_something_embedded(RunCounts(read=1, failed_documents=1), hostile)
    said = str(refused.value)
    assert said.startswith("the one document read was set aside as failed")
    assert "\x1b" not in said
    assert "\x07" not in said
    assert len(said) < 1000


def test_documents_skipped_by_rule_are_named_beside_the_failed() -> None:
    held = RunCounts(read=5, failed_documents=3, skipped_documents=2)
    with pytest.raises(UserError, match=r"all 5 documents read were set aside \(3 failed, 2 "):
        check_something_embedded(held, None)
    with pytest.raises(UserError, match="the log monitor names each one's reason"):
        check_something_embedded(RunCounts(read=2, failed_documents=2), None)  # none to quote
    check_something_embedded(RunCounts(read=2, skipped_documents=2), None)  # a rule's choice
    check_something_embedded(None, None)  # unknown (an older checkpoint): not refused


def test_a_sharded_run_whose_shards_all_failed_publishes_nothing(tmp_path: Path) -> None:
    reg = registry_with_jsonl_and_shards()
    out = tmp_path / "emb.jsonl"
    text = (
        "pipeline: sharded\n"
        "loader: {use: list, with: {texts: ['!a', '!b', '!c', '!d']}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(str(out))}}}}}\n"
        "run: {batch_size: 2, buckets: [8], executor: {use: in-process, with: {shards: 2}}}\n"
    )
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", reg), reg)
    with pytest.raises(UserError) as refused:
        pipeline.run()
    said = str(refused.value)
    assert re.match(r"all \d+ documents read were set aside as failed", said)
    assert "(the first, 'd0': unreadable)" in said, "a shard's report carries its first"
    assert not out.exists(), "the shards' parts were not published"
