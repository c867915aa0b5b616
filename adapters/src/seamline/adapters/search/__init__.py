"""Nearest-neighbour search over an index a pipeline wrote: any first-party sink's output.

Everything comes from the index's manifest, which the sink publishes beside its
output (:mod:`.index`): where the files or the table are, the model and its config
(the query is embedded by the same model that embedded the documents, :mod:`.query`),
and the run's ``attention`` section. A LanceDB table is searched through its vector
index when it has one (:mod:`.lance`); the files of the ``jsonl``, ``npy`` and
``parquet`` sinks are scanned exactly, in chunks (:mod:`.scan`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamline.adapters.search.index import Index, manifest_path, open_index, read_manifest
from seamline.adapters.search.lance import search_table
from seamline.adapters.search.query import QueryEncoder, embed_query, index_attention
from seamline.adapters.search.scan import nearest
from seamline.contracts import UserError
from seamline.core.registry import Registry

__all__ = [
    "Found",
    "Hit",
    "Index",
    "QueryEncoder",
    "embed_query",
    "find",
    "index_attention",
    "manifest_path",
    "open_index",
    "read_manifest",
    "search",
]


@dataclass(frozen=True, slots=True)
class Hit:
    score: float
    doc_id: str
    window: int
    span: tuple[int, int]
    metadata: dict[str, Any]
    text: str | None = None
    """The window's text, where the sink stored it (parquet, lancedb)."""

    def snippet(self, width: int = 160) -> str:
        """The matched text: as stored, or read back from the document's file when it names one."""
        piece = self.text
        if piece is None:
            path = self.metadata.get("path")
            if not path:
                return ""
            try:
                whole = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return ""
            start, end = self.span
            piece = whole[start:end]
        piece = " ".join(piece.split())
        return piece if len(piece) <= width else piece[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    how: str
    """How they were found: an exact scan of how many rows, or which vector index."""
    plan: str = ""
    """The store's plan of the query, where it has one (LanceDB)."""


def find(
    registry: Registry,
    index: Path,
    query: str,
    k: int = 5,
    attention: str | None = None,
    *,
    exact: bool = False,
    where: str | None = None,
) -> Found:
    """The ``k`` records of ``index`` most similar (cosine) to ``query``, best first.

    ``exact`` scans every vector even where an index exists; ``where`` is a SQL
    filter on the rows, for a LanceDB table (the file sinks' outputs have no query
    engine to apply it: a ``UserError`` says so before any work is done).
    """
    opened = open_index(index)
    lance = opened.sink == "lancedb"
    if where and not lance:
        raise UserError(
            f"--where filters the rows of a LanceDB table, and {index} is the output of a "
            f"{opened.sink or 'unknown'} sink; write the pipeline's output with the lancedb "
            "sink, or filter this file with a query engine (DuckDB reads Parquet as it is)"
        )
    vector = QueryEncoder(registry, opened, attention)(query)
    if lance:
        found = search_table(opened, vector, k, exact=exact, where=where)
        return Found([_hit(score, row) for score, row in found.rows], found.how, found.plan)
    rows, scanned = nearest(opened, vector, k)
    return Found([_hit(score, row) for score, row in rows], f"exact: every one of {scanned:,} rows")


def search(
    registry: Registry, index: Path, query: str, k: int = 5, attention: str | None = None
) -> list[Hit]:
    """The ``k`` records of ``index`` most similar (cosine) to ``query``, best first."""
    return find(registry, index, query, k, attention).hits


def _hit(score: float, row: dict[str, Any]) -> Hit:
    start, end = row.get("span", (0, 0))
    return Hit(
        score,
        str(row["id"]),
        int(row.get("window", 0)),
        (int(start), int(end)),
        dict(row.get("metadata") or {}),
        row.get("text"),
    )
