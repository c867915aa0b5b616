"""What a lancedb table's older versions keep on disk, said after each publication.

Every publication keeps a full copy of the rows it rewrote and of the indexes it built
anew in older versions, until ``prune`` removes them: a daily ``sync`` of a few edits grew
a table by its own size each day, and nothing the run printed said so. The sink measures
them after the run (``published_changes``: ``older_versions``, ``older_versions_bytes``),
and the summary says it, in text and in JSON
(``test_seamline_run_says_what_older_versions_keep``, beside the sync's other runs).
"""

from __future__ import annotations

from pathlib import Path

from seamline.components.sinks._lance_table import prune_versions
from tests.components.test_sink_lancedb_sync import manifest, sink, sync, table, windows


def folder_bytes(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file())


def test_the_bytes_said_are_what_pruning_frees(tmp_path: Path) -> None:
    records = [r for doc in "abcdef" for r in windows(doc, 3, 1.0)]
    sync(tmp_path, records, full_text_index=True, text=True)
    edited = [*records[:-3], *windows("f", 3, 2.0)]  # one document edited
    changes = sync(tmp_path, edited, full_text_index=True, text=True, older_versions=True)
    assert changes is not None
    kept, size = changes["older_versions"], changes["older_versions_bytes"]
    assert kept == len(table(tmp_path).list_versions()) - 1 >= 1
    folder = tmp_path / "db" / "emb.lance"
    before = folder_bytes(folder)
    prune_versions(table(tmp_path), "the table")
    freed = before - folder_bytes(folder)
    # Short by no more than the older versions' records (manifests, transactions: KBs).
    assert size <= freed <= size + 8_000, (freed, size)
    assert size > 0, "the rows and indexes the edited run rewrote"  # 7,118 of 10,518 freed


def test_a_first_publication_keeps_nothing_older_worth_saying(tmp_path: Path) -> None:
    # Building its indexes made versions of a fresh table that share its files: no line.
    records = [r for doc in "abcdef" for r in windows(doc, 3, 1.0)]
    changes = sync(tmp_path, records, full_text_index=True, text=True, older_versions=True)
    assert len(table(tmp_path).list_versions()) > 1
    assert changes is not None
    assert "older_versions" not in changes


def test_a_pruned_table_says_nothing_of_older_versions(tmp_path: Path) -> None:
    records = windows("a", 2, 1.0)
    sync(tmp_path, records, prune=True)
    changes = sync(tmp_path, windows("a", 2, 3.0), prune=True, older_versions=True)
    assert changes is not None
    assert "older_versions" not in changes


def test_an_upsert_leaving_rows_in_place_says_at_least(tmp_path: Path) -> None:
    """An upsert that leaves some rows of an old data file in place masks the rest of it,
    which the newest version still reads: pruning compacts that file away, a whole data
    file more than the bytes counted (tR2 F2: 419,016 said, 916,073 freed). The masked
    rows are said, and the bytes are then a lower bound ("at least")."""
    records = [r for doc in "abcdef" for r in windows(doc, 60, 1.0)]
    sync(tmp_path, records, full_text_index=True, text=True)
    out = sink(tmp_path, mode="upsert", full_text_index=True, text=True)
    out.start(manifest("r"))
    out.write([r for doc in "abcde" for r in windows(doc, 60, 2.0)])  # f's rows stay in place
    out.close()
    changes = sink(tmp_path).published_changes("r")
    assert changes is not None
    assert changes["older_versions_masked_rows"] == 300, changes  # a to e's rows in the old file
    size = changes["older_versions_bytes"]
    folder = tmp_path / "db" / "emb.lance"
    before = folder_bytes(folder)
    compacted = table(tmp_path)
    compacted.optimize()  # what prune does first: the masked rows' file written anew
    prune_versions(compacted, "the table")
    freed = before - folder_bytes(folder)
    assert freed > size + 8_000, (freed, size)  # more than the older versions' records
    assert size > 0
