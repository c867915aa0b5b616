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
    """The window's text, where the sink stored it (every first-party sink, contract 1.2)."""
    corpus_root: Path | None = None
    """The folder the run read its documents from (its manifest's provenance), if known."""

    def snippet(self, width: int = 160) -> str:
        """The matched text: as the index stores it, else read back from the document's file.

        The file is read only when it lies under the run's corpus root (after following
        links): an index's metadata ``path`` is data anyone who can write the index
        controls, and must never make search print an arbitrary file.
        """
        piece = self.text
        if piece is None:
            piece = _text_under_root(self.metadata.get("path"), self.corpus_root, self.span)
        piece = " ".join(piece.split())
        return piece if len(piece) <= width else piece[: width - 1] + "…"


MAX_SNIPPET_FILE = 16 << 20
"""The largest document file a snippet is read back from (16 MiB)."""


def _text_under_root(path: object, root: Path | None, span: tuple[int, int]) -> str:
    """``span`` of the file at ``path``, if it is a regular file under ``root``; else ""."""
    if not isinstance(path, str) or not path or root is None:
        return ""
    try:
        real_root = root.resolve(strict=True)
        candidate = Path(path)
        real = (candidate if candidate.is_absolute() else real_root / candidate).resolve(
            strict=True
        )
        if not real.is_relative_to(real_root) or not real.is_file():
            return ""
        with real.open("rb") as handle:
            data = handle.read(MAX_SNIPPET_FILE + 1)
        if len(data) > MAX_SNIPPET_FILE:
            return ""
        whole = data.decode("utf-8")
    except (OSError, UnicodeDecodeError, RuntimeError):  # RuntimeError: a symlink loop
        return ""
    start, end = span
    return whole[start:end]


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
    root = _corpus_root(opened)
    if lance:
        found = search_table(opened, vector, k, exact=exact, where=where)
        hits = [_hit(score, row, root) for score, row in found.rows]
        return Found(hits, found.how, found.plan)
    rows, scanned = nearest(opened, vector, k)
    hits = [_hit(score, row, root) for score, row in rows]
    return Found(hits, f"exact: every one of {scanned:,} rows")


def _corpus_root(index: Index) -> Path | None:
    """The corpus root the run recorded in its manifest (provenance), if any."""
    provenance = index.manifest.get("provenance")
    root = provenance.get("corpus_root") if isinstance(provenance, dict) else None
    return Path(root) if isinstance(root, str) and root else None


def search(
    registry: Registry, index: Path, query: str, k: int = 5, attention: str | None = None
) -> list[Hit]:
    """The ``k`` records of ``index`` most similar (cosine) to ``query``, best first."""
    return find(registry, index, query, k, attention).hits


def _hit(score: float, row: dict[str, Any], root: Path | None = None) -> Hit:
    start, end = row.get("span", (0, 0))
    text = row.get("text")
    return Hit(
        score,
        str(row["id"]),
        int(row.get("window", 0)),
        (int(start), int(end)),
        dict(row.get("metadata") or {}),
        text if isinstance(text, str) else None,
        root,
    )
