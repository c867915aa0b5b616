"""What index_recall.py counts: its queries, and recall as a share of the exact answer."""

from __future__ import annotations

from pathlib import Path

from benchmarks.search import index_recall
from seamline.contracts.stored import StoredRow


def test_the_queries_are_first_lines_of_evenly_spaced_documents(tmp_path: Path) -> None:
    for number in range(10):
        body = f"\n\n  Summary of document {number}.  \nMore text.\n"
        (tmp_path / f"doc-{number}.txt").write_text(body, encoding="utf-8")
    assert index_recall.queries(tmp_path, 4) == [
        "Summary of document 0.",
        "Summary of document 2.",
        "Summary of document 5.",
        "Summary of document 7.",
    ]
    assert len(index_recall.queries(tmp_path, 50)) == 10, "no more queries than documents"


def test_recall_counts_documents_and_windows_not_scores() -> None:
    def row(doc: str, window: int) -> StoredRow:
        return StoredRow(id=doc, window=window, span=(0, 1))

    exact = [(0.9, row("a", 0)), (0.8, row("a", 1))]
    approximate = [(0.7, row("a", 1)), (0.6, row("b", 0))]
    found, truth = index_recall.keys(approximate), index_recall.keys(exact)
    assert index_recall.recall(found, truth) == 0.5
    assert index_recall.recall(truth, truth) == 1.0
