"""Nearest-neighbour search over an index a pipeline wrote (JSONL or NPY sink).

The index's manifest names the model and its config, so the query is embedded
by the same model that embedded the documents. Vectors are read in chunks and
only the best ``k`` are kept, so memory stays bounded for any index size.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from seamline.contracts import Document, Model, UserError
from seamline.core.registry import Registry
from seamline.core.seams import CheckedAttention

CHUNK = 4096


@dataclass(frozen=True, slots=True)
class Hit:
    score: float
    doc_id: str
    window: int
    span: tuple[int, int]
    metadata: dict[str, Any]

    def snippet(self, width: int = 160) -> str:
        """The matched text, read back from the document's file when the record names one."""
        path = self.metadata.get("path")
        if not path:
            return ""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""
        start, end = self.span
        piece = " ".join(text[start:end].split())
        return piece if len(piece) <= width else piece[: width - 1] + "…"


def manifest_path(index: Path) -> Path:
    """Where a sink keeps the manifest of the index at ``index``."""
    return index.with_name(index.stem + ".manifest.json")


def read_manifest(index: Path) -> dict[str, Any]:
    if not index.exists():
        raise UserError(f"index {index} does not exist: run a pipeline whose sink writes it")
    path = manifest_path(index)
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(
            f"{path} is missing, so the model that made {index} is unknown; "
            "re-run the pipeline with a jsonl or npy sink"
        ) from None
    return manifest


def embed_query(registry: Registry, manifest: dict[str, Any], query: str) -> np.ndarray:
    """Embed ``query`` with the manifest's model and the reference-first attention choice."""
    spec = manifest["model"]
    model: Model[Any] = registry.create("model", spec["use"], spec["with"])  # type: ignore[assignment]
    params = model.load()
    examples = list(model.prepare(Document("query", query)))[:1]
    batch = model.collate(examples, 1, examples[0].length)
    names = registry.names("attention")
    attention = registry.create("attention", "native" if "native" in names else names[0])
    out = jax.jit(lambda p, a: model.apply(p, a, CheckedAttention(attention)))(  # type: ignore[arg-type]
        params, dict(batch.arrays)
    )
    vector = np.asarray(out)[0].astype(np.float32)
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def _jsonl_chunks(index: Path) -> Iterator[tuple[np.ndarray, list[dict[str, Any]]]]:
    rows: list[dict[str, Any]] = []
    vectors: list[list[float]] = []
    with index.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            vectors.append(record.pop("embedding"))
            rows.append(record)
            if len(rows) == CHUNK:
                yield np.asarray(vectors, dtype=np.float32), rows
                rows, vectors = [], []
    if rows:
        yield np.asarray(vectors, dtype=np.float32), rows


def _npy_chunks(index: Path) -> Iterator[tuple[np.ndarray, list[dict[str, Any]]]]:
    matrix = np.load(index, mmap_mode="r")
    index_path = index.with_name(index.stem + ".index.jsonl")
    with index_path.open(encoding="utf-8") as handle:
        start = 0
        while start < len(matrix):
            rows = [json.loads(handle.readline()) for _ in range(min(CHUNK, len(matrix) - start))]
            yield np.asarray(matrix[start : start + len(rows)], dtype=np.float32), rows
            start += len(rows)


def search(registry: Registry, index: Path, query: str, k: int = 5) -> list[Hit]:
    """The ``k`` records of ``index`` most similar (cosine) to ``query``, best first."""
    manifest = read_manifest(index)
    vector = embed_query(registry, manifest, query)
    chunks = _npy_chunks(index) if index.suffix == ".npy" else _jsonl_chunks(index)
    best: list[tuple[float, int, dict[str, Any]]] = []
    seen = 0
    for matrix, rows in chunks:
        norms = np.maximum(np.linalg.norm(matrix, axis=1), 1e-12)
        scores = (matrix @ vector) / norms
        for score, row in zip(scores.tolist(), rows, strict=True):
            item = (score, seen, row)
            seen += 1
            if len(best) < k:
                heapq.heappush(best, item)
            elif score > best[0][0]:
                heapq.heapreplace(best, item)
    ranked = sorted(best, key=lambda item: (-item[0], item[1]))
    return [
        Hit(
            score,
            str(row["id"]),
            int(row.get("window", 0)),
            tuple(row.get("span", (0, 0))),  # type: ignore[arg-type]
            dict(row.get("metadata", {})),
        )
        for score, _, row in ranked
    ]
