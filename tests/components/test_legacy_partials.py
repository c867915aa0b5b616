"""Partial files an older seamline left are deleted when a run starts over.

Before 2026-12-01 a partial file had one fixed name (``.emb.jsonl.partial.tmp``); the
names are unpredictable now (``.emb.jsonl.partial.<random>.tmp``), and a run that
started over after an older version's killed run deleted the checkpoint but looked
only for the new names: the old partial files stayed for good, hidden, as large as
the output they were to become.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.contracts import OutputRecord

if TYPE_CHECKING:
    from pathlib import Path

RECORD = OutputRecord("a", 0, (0, 1), np.ones(4, np.float32))


def test_an_older_versions_partial_files_are_deleted_by_a_fresh_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    legacy = [out / ".emb.jsonl.partial.tmp", out / ".emb.errors.jsonl.partial.tmp"]
    for path in legacy:
        path.write_bytes(b'{"id": "old"}\n' * 1000)
    sink = JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl"))
    sink.start({"model": {"use": "m", "with": {}}})
    sink.write([RECORD])
    sink.close()
    assert [path.exists() for path in legacy] == [False, False]
    assert sorted(p.name for p in out.iterdir()) == [
        "emb.errors.jsonl",
        "emb.jsonl",
        "emb.manifest.json",
    ]


def test_a_folder_of_that_name_is_not_taken_for_one(tmp_path: Path) -> None:
    # A folder named so is a sink's own store (the lancedb and parquet sinks stage rows
    # there, partial_path): not a partial file, and not deleted as one.
    out = tmp_path / "out"
    store = out / ".emb.jsonl.partial.tmp"
    store.mkdir(parents=True)
    (store / "kept").write_bytes(b"x")
    sink = JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl"))
    sink.start({"model": {"use": "m", "with": {}}})
    sink.write([RECORD])
    sink.close()
    assert (store / "kept").read_bytes() == b"x"
