"""Nearest-neighbour search over an index a pipeline wrote (JSONL or NPY sink).

Everything comes from the index's manifest, which the sink publishes beside its
files: where the files are (``outputs.files``, so a custom ``index_path`` is
found, or ``outputs.parts``, the files of every shard of a run split into shards,
read part after part), the model and its config (the query is embedded by the same model that
embedded the documents), and the run's ``attention`` section (negotiated here as
the run negotiated it, unless ``attention`` overrides it). Vectors are read in
chunks and only the best ``k`` are kept, so memory stays bounded for any index size.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import jax
import numpy as np

from seamline.contracts import Attention, ConfigError, Document, Model, UserError
from seamline.core.attention.candidates import build_candidates
from seamline.core.attention.checked import CheckedAttention
from seamline.core.attention.probe import attention_specs
from seamline.core.config import resolve_attention
from seamline.core.config.located import Located, parse_located
from seamline.core.registry import Registry

CHUNK = 4096
MANIFEST_SUFFIX = ".manifest.json"


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


@dataclass(frozen=True, slots=True)
class Index:
    """An index on disk, as its manifest describes it."""

    manifest_path: Path
    located: Located
    """The manifest, with the place of every value (for errors about its contents)."""
    sink: str
    parts: tuple[dict[str, Path], ...]
    """The files of each part, by purpose: one part for a whole output, one per shard for a
    run split into shards (``outputs.parts``)."""

    @property
    def files(self) -> dict[str, Path]:
        """The first part's files (the only part, for a whole output)."""
        return self.parts[0] if self.parts else {}

    @property
    def manifest(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.located.data)


def manifest_path(index: Path) -> Path:
    """The manifest of ``index``: the file itself if it is one, else the one beside it."""
    if index.name.endswith(MANIFEST_SUFFIX):
        return index
    return index.with_name(index.stem + MANIFEST_SUFFIX)


def open_index(index: Path) -> Index:
    """Read the manifest of ``index`` and find its files from it."""
    path = manifest_path(index)
    if not index.exists() and not path.exists():
        raise UserError(f"index {index} does not exist: run a pipeline whose sink writes it")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(
            f"{path} is missing, so the model that made {index} is unknown; "
            "re-run the pipeline with a jsonl or npy sink"
        ) from None
    located = parse_located(text, str(path))
    manifest = located.data
    if not isinstance(manifest, dict) or "model" not in manifest:
        raise ConfigError("not a seamline manifest (no 'model' section)", located.where(()))
    outputs = manifest.get("outputs") or _outputs_before_manifests_named_them(index)
    base = path.parent
    listed = outputs.get("parts", [outputs])
    parts = tuple(
        {purpose: base / name for purpose, name in part.get("files", {}).items()} for part in listed
    )
    return Index(path, located, str(outputs.get("sink", "")), parts)


def _outputs_before_manifests_named_them(index: Path) -> dict[str, Any]:
    """The default layout, for indexes published before manifests listed their files."""
    if index.suffix == ".npy":
        return {
            "sink": "npy",
            "files": {"matrix": index.name, "index": index.stem + ".index.jsonl"},
        }
    return {"sink": "jsonl", "files": {"records": index.name}}


def read_manifest(index: Path) -> dict[str, Any]:
    """The manifest of ``index`` as plain data."""
    return open_index(index).manifest


def index_attention(
    registry: Registry, index: Index, model: Model[Any], params: Any, arrays: Any, use: str | None
) -> Attention[Any]:
    """The attention the run negotiated, negotiated again here for the query's shape.

    The manifest's ``attention`` section is resolved like a pipeline's (problems are
    located in the manifest), or ``{use: <use>}`` when the caller overrides it.
    """
    located = index.located
    if use is not None:
        located = parse_located(json.dumps({"attention": {"use": use}}), "--attention")
    elif "attention" not in index.manifest:  # an index from before manifests recorded it
        located = parse_located(
            json.dumps({"attention": {"use": "auto"}}), str(index.manifest_path)
        )
    candidates = build_candidates(resolve_attention(located, registry), registry)
    decision = candidates.planner().choose(attention_specs(model, params, arrays))
    chosen = next(c for c in candidates.implementations if c.name == decision.chosen)
    for other in candidates.implementations:
        if other is not chosen:
            other.close()
    return chosen


def embed_query(
    registry: Registry, index: Index, query: str, attention: str | None = None
) -> np.ndarray:
    """Embed ``query`` with the index's model and attention (or ``attention`` if given)."""
    spec = index.manifest["model"]
    model = cast(Model[Any], registry.create("model", spec["use"], spec["with"]))
    params = model.load()
    examples = list(model.prepare(Document("query", query)))[:1]
    batch = model.collate(examples, 1, examples[0].length)
    chosen = index_attention(registry, index, model, params, batch.arrays, attention)
    checked = CheckedAttention(chosen)
    out = jax.jit(lambda p, a: model.apply(p, a, checked))(params, dict(batch.arrays))
    vector: np.ndarray = np.asarray(out)[0].astype(np.float32)
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def _jsonl_chunks(records: Path) -> Iterator[tuple[np.ndarray, list[dict[str, Any]]]]:
    rows: list[dict[str, Any]] = []
    vectors: list[list[float]] = []
    with records.open(encoding="utf-8") as handle:
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


def _npy_chunks(
    matrix_path: Path, index_path: Path
) -> Iterator[tuple[np.ndarray, list[dict[str, Any]]]]:
    matrix = np.load(matrix_path, mmap_mode="r")
    with index_path.open(encoding="utf-8") as handle:
        start = 0
        while start < len(matrix):
            rows = [json.loads(handle.readline()) for _ in range(min(CHUNK, len(matrix) - start))]
            yield np.asarray(matrix[start : start + len(rows)], dtype=np.float32), rows
            start += len(rows)


def _chunks(index: Index) -> Iterator[tuple[np.ndarray, list[dict[str, Any]]]]:
    """Every part's vectors and rows, in chunks, part after part."""
    for files in index.parts:
        yield from _part_chunks(index, files)


def _part_chunks(
    index: Index, files: dict[str, Path]
) -> Iterator[tuple[np.ndarray, list[dict[str, Any]]]]:
    if "matrix" in files and "index" in files:
        return _npy_chunks(files["matrix"], files["index"])
    if "records" in files:
        return _jsonl_chunks(files["records"])
    raise UserError(
        f"{index.manifest_path} lists files {sorted(files)} of a {index.sink or 'unknown'} "
        "sink; search reads the jsonl and npy sinks' outputs"
    )


def search(
    registry: Registry, index: Path, query: str, k: int = 5, attention: str | None = None
) -> list[Hit]:
    """The ``k`` records of ``index`` most similar (cosine) to ``query``, best first."""
    opened = open_index(index)
    vector = embed_query(registry, opened, query, attention)
    best: list[tuple[float, int, dict[str, Any]]] = []
    seen = 0
    for matrix, rows in _chunks(opened):
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
            _span(row.get("span", (0, 0))),
            dict(row.get("metadata", {})),
        )
        for score, _, row in ranked
    ]


def _span(value: Any) -> tuple[int, int]:
    """A record's ``[start, end)`` character span as stored (a JSON list of two ints)."""
    start, end = value
    return int(start), int(end)
