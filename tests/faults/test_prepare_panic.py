"""``seamline run``: a third party's ``prepare`` that panics (a Rust tokenizer's panic, pyo3's
``PanicException``, a ``BaseException``) sets the document aside, as an exception does.

It ended the run with a 175-line traceback and exit code 1, where the docs say "An
exception here sets the document aside" (writing-a-component.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seamline.components.sinks.jsonl import JsonlSink
from seamline.core.registry import Registry
from tests.core.panicky import PANIC, PANIC_IN_PREPARE, panicky_registry
from tests.faults import component_scenarios
from tests.faults.fixture_plugin import info


def test_a_panic_in_prepare_sets_the_document_aside_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    texts = ["one two", PANIC_IN_PREPARE, "three four"]
    Path("pipeline.yaml").write_text(
        "pipeline: panics\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: jsonl, with: {path: out/emb.jsonl}}\n"
        "run: {batch_size: 4, buckets: [4]}\n",
        encoding="utf-8",
    )
    registry = Registry([*panicky_registry().entries(), info(JsonlSink)])
    with component_scenarios.in_process_cli(registry) as cli:
        ran = component_scenarios.seamline(cli, Path("pipeline.yaml"))
    assert ran.exit_code == 0, ran.said
    assert "Traceback" not in ran.stdout + ran.stderr
    assert "set aside: 1 failed" in ran.stdout
    errors = Path("out/emb.errors.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["reason"] for line in errors] == [
        f"prepare failed: PanicException: {PANIC}"
    ]
    assert len(Path("out/emb.jsonl").read_text(encoding="utf-8").splitlines()) == 2
