"""Search in a LanceDB table: through its vector index when it has one, else an exact scan.

The lancedb sink builds its index with the cosine distance and records its search
settings (``nprobes``, ``refine_factor``) in the manifest's ``outputs.index``; they
apply here. ``exact`` bypasses the index: LanceDB then computes the distance to
every row (still with the cosine distance, as the index does). ``where`` is a SQL
filter LanceDB applies before the nearest neighbours are chosen, so ``k`` rows
that match come back when there are ``k``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from seamline.adapters.search.index import Index
from seamline.adapters.search.scan import arrow_rows
from seamline.contracts import UserError
from seamline.contracts.manifest import REWRITE, output_folder
from seamline.contracts.stored import StoredRow, first_line

if TYPE_CHECKING:
    from lancedb.query import LanceVectorQueryBuilder

COLUMNS = ["id", "window_index", "span_start", "span_end", "text", "metadata"]


@dataclass(frozen=True, slots=True)
class LanceFound:
    rows: list[tuple[float, StoredRow]]
    """``(cosine similarity, row)``, best first; rows checked as the file sinks' are."""
    how: str
    """How they were found: the index and its settings, or an exact scan."""
    plan: str
    """LanceDB's plan of the query (``ANNSubIndex`` where the index served it)."""


def table_path(index: Index) -> Path:
    """The table the manifest names: a folder in the manifest's folder, of regular files."""
    path = index.files.get("table")
    if path is None:
        raise UserError(f"{index.manifest_path} names no table of a lancedb sink")
    return output_folder(path, "table", index.manifest_path)


def search_table(
    index: Index, vector: np.ndarray, k: int, *, exact: bool = False, where: str | None = None
) -> LanceFound:
    """The ``k`` rows of the index's table nearest to the unit ``vector``."""
    import lancedb

    path = table_path(index)
    try:
        table = lancedb.connect(str(path.parent)).open_table(path.stem)
        names = table.schema.names
    except (ValueError, RuntimeError, OSError) as err:
        raise UserError(
            f"{path}: not a LanceDB table as the lancedb sink writes it ({first_line(err)})"
            f"{REWRITE}"
        ) from None
    columns = [name for name in COLUMNS if name in names]
    searched = cast("LanceVectorQueryBuilder", table.search(vector, vector_column_name="embedding"))
    query = searched.distance_type("cosine").select([*columns, "_distance"]).limit(k)
    if where:
        query = query.where(where, prefilter=True)
    vector_indexes = [i for i in table.list_indices() if "embedding" in i.columns]
    if exact or not vector_indexes:
        query = query.bypass_vector_index()
        how = f"exact: every one of {table.count_rows():,} rows"
    else:
        settings = index.outputs.index
        vector_index = vector_indexes[0]
        # An IVF-PQ index trains on 256 rows or more: below, it holds none, and LanceDB
        # compares the rows it does not hold exactly. Say so.
        indexed, unindexed = vector_index.num_indexed_rows, vector_index.num_unindexed_rows
        used = [f"{vector_index.index_type}: {indexed:,} rows indexed"]
        if unindexed:
            used.append(f"{unindexed:,} compared exactly")
        if settings is not None and settings.nprobes:
            query = query.nprobes(settings.nprobes)
            used.append(f"nprobes {settings.nprobes}")
        if settings is not None and settings.refine_factor:
            query = query.refine_factor(settings.refine_factor)
            used.append(f"refine_factor {settings.refine_factor}")
        how = f"vector index {vector_index.name} ({', '.join(used)})"
    try:
        plan = query.explain_plan()
        found = query.to_arrow().to_pydict()
    except (ValueError, RuntimeError, OSError) as err:
        if where:
            raise UserError(
                f"--where {where!r} is not a filter LanceDB can apply to {path}: "
                f"{str(err).rstrip('.')}. The "
                f"columns: {', '.join(_column_names(table.schema))}"
            ) from err
        raise UserError(
            f"{path}: LanceDB could not search it ({first_line(err)}){REWRITE}"
        ) from None
    distances = found.pop("_distance")
    rows = arrow_rows(found, f"{path}: row")
    if where:
        how += f", where {where}"
    scored = [(1.0 - float(d), row) for d, row in zip(distances, rows, strict=True)]
    return LanceFound(scored, how, plan)


def _column_names(schema: Any) -> list[str]:
    """Top-level columns, and ``metadata.<key>`` for each metadata field."""
    names = []
    for field in schema:
        if field.name == "metadata":
            names += [f"metadata.{child.name}" for child in field.type]
        elif field.name != "embedding":
            names.append(field.name)
    return names
