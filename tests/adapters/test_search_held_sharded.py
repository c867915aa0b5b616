"""Search of the output of a run split into shards: held open, and found in its folder.

A sharded ``jsonl`` or ``npy`` run publishes one manifest naming every part's files,
and deletes the parts of the run it replaced. An index held open (``open_index``,
``seamline serve``) kept the parts it was opened with: every search after the next
publish failed ("... part-00000-of-00002/emb.jsonl ... does not exist; ... run the
pipeline again"), where a local output's index reads the newest publish. And a search
given the folder of such an output names the path that searches it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from seamline.adapters.search import Searcher, open_index
from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.contracts import OutputRecord, Shard, UserError
from seamline.contracts.manifest import manifest_path
from seamline.contracts.readback import (
    Republished,
    current_readers,
    published,
    read_records,
    reread,
)
from tests.adapters.test_search import TEXTS, registry, write_index

if TYPE_CHECKING:
    from pathlib import Path

SINKS: dict[str, Any] = {"jsonl": (JsonlSink, JsonlSinkConfig), "npy": (NpySink, NpySinkConfig)}
FILES = {
    "jsonl": [".jsonl", ".errors.jsonl", ".manifest.json"],
    "npy": [".npy", ".index.jsonl", ".errors.jsonl", ".manifest.json"],
}
"""What a local run of each sink publishes beside the manifest (suffixes of ``emb``)."""


def publish_in_parts(out: Path, records: list[OutputRecord], run_id: str, count: int) -> None:
    """What a sharded run (the ray executor's) publishes at ``out``, through the sink's
    staging, with the model of the manifest there."""
    sink, config = SINKS[out.suffix[1:]]
    manifest = json.loads(manifest_path(out).read_text())
    sink(config(path=out)).begin_parts(run_id, count, manifest)
    for index in range(count):
        part = sink(config(path=out)).part(run_id, Shard(index, count))
        part.recover(manifest)
        if written := records[index::count]:
            part.write(written)
        part.close()
    sink(config(path=out)).publish_parts(run_id, count, manifest)


@pytest.mark.parametrize("sink", ["jsonl", "npy"])
def test_an_index_held_open_reads_each_publish_of_a_sharded_run(tmp_path: Path, sink: str) -> None:
    out = tmp_path / f"emb.{sink}"
    written = f"{{use: {sink}, with: {{path: '{out}'}}}}"
    write_index(tmp_path, written)
    records = read_records(out, SINKS[sink][0])
    assert records is not None
    publish_in_parts(out, records, "run1", 2)
    with Searcher(registry(), out) as index:
        assert index.find(TEXTS[1], k=3).hits[0].doc_id == "d1"
        for run_id, count in (("run2", 3), ("run3", 4)):  # each deletes the parts before it
            publish_in_parts(out, records, run_id, count)
            hits = index.find(TEXTS[1], k=3).hits
            assert len(hits) == 3
            assert hits[0].doc_id == "d1"
        write_index(tmp_path, written)  # a whole output again (a local run)
        assert index.find(TEXTS[2], k=3).hits[0].doc_id == "d2"
        publish_in_parts(out, records, "run4", 2)  # and parts again
        assert index.find(TEXTS[2], k=3).hits[0].doc_id == "d2"


def test_a_part_deleted_as_it_is_read_is_read_again(tmp_path: Path) -> None:
    """A search that read the manifest just before a republish deleted its parts read a
    missing file: a plain ``UserError``, never read again (2 of 190 searches during
    republishes failed); now a ``Republished``, which ``reread`` reads again."""
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    records = read_records(out, JsonlSink)
    assert records is not None
    publish_in_parts(out, records, "run1", 2)
    readers = published(out, JsonlSink)
    assert readers is not None
    publish_in_parts(out, records, "run2", 2)
    with pytest.raises(Republished, match=r"run1/part-00000-of-00002/emb.jsonl .* does not exist"):
        list(readers[0].chunks(None))
    read = reread(
        lambda: [
            row.id for r in current_readers(readers) for _, rows in r.chunks(None) for row in rows
        ]
    )
    assert sorted(read) == sorted(record.doc_id for record in records)


@pytest.mark.parametrize("sharded", [False, True], ids=["whole", "sharded"])
@pytest.mark.parametrize("sink", ["jsonl", "npy"])
def test_a_folder_of_one_output_names_the_path_that_searches_it(
    tmp_path: Path, sink: str, sharded: bool
) -> None:
    """Named from the manifest: an npy folder suggested ``emb.index.jsonl`` (which is no
    output) beside ``emb.npy``, and a folder holding a sharded run's output only (no file
    under its name) said ``out.manifest.json is missing``, naming no output at all."""
    out = tmp_path / "out" / f"emb.{sink}"
    write_index(tmp_path, f"{{use: {sink}, with: {{path: '{out}'}}}}")
    if sharded:
        records = read_records(out, SINKS[sink][0])
        assert records is not None
        publish_in_parts(out, records, "run1", 2)
    assert sorted(p.name for p in out.parent.iterdir() if p.is_file()) == (
        ["emb.manifest.json"] if sharded else sorted(f"emb{s}" for s in FILES[sink])
    )
    with pytest.raises(UserError) as refused:
        open_index(out.parent)
    assert str(refused.value).endswith(f"by its sink's path ({out})")
    assert Searcher(registry(), out).find(TEXTS[1], k=1).hits[0].doc_id == "d1"


@pytest.mark.parametrize("sink", ["jsonl", "npy"])
def test_a_sharded_output_is_not_searched_under_another_sinks_name(
    tmp_path: Path, sink: str
) -> None:
    """The check that a manifest describes the output asked for ran for whole outputs
    only: `search out/emb.parquet` (no such output) searched a sharded emb.jsonl's rows,
    exit 0."""
    out = tmp_path / f"emb.{sink}"
    write_index(tmp_path, f"{{use: {sink}, with: {{path: '{out}'}}}}")
    records = read_records(out, SINKS[sink][0])
    assert records is not None
    publish_in_parts(out, records, "run1", 3)
    assert open_index(out).sink == sink  # its own name still finds it
    for other in ("emb.parquet", "emb.lance", "emb.npy" if sink == "jsonl" else "emb.jsonl"):
        with pytest.raises(UserError, match=rf"describes another output .* not .*{other}"):
            open_index(tmp_path / other)
