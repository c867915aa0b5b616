"""The migration guides a team coming from sentence-transformers or
text-embeddings-inference reads: python.md's table covers ``util.semantic_search``
(it had no row: a migrating user wrote their own top-k, or kept torch for it), its
recipe does what it says, and README.md links both guides."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PYTHON_PAGE = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")


def table_row(first_cell: str) -> str:
    (row,) = [line for line in PYTHON_PAGE.splitlines() if line.startswith(f"| {first_cell}")]
    return row


def test_semantic_search_has_a_row_whose_recipe_finds_the_best_hits_first() -> None:
    row = table_row("`util.semantic_search(")
    snippets = re.findall(r"`((?:scores|top) = [^`]+)`", row)
    assert len(snippets) == 2, row
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((50, 8)).astype(np.float32)
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    names = {"queries": queries, "corpus": corpus, "k": 4, "np": np}
    for snippet in snippets:
        exec(snippet, names)  # the page's own code, as a reader copies it
    best = [sorted(range(50), key=lambda j: -float(queries[i] @ corpus[j]))[:4] for i in range(3)]
    assert names["top"].tolist() == best


def test_the_readme_links_both_migration_guides() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/python.md#coming-from-sentence-transformers" in readme
    assert "docs/serving.md#coming-from-text-embeddings-inference" in readme
