"""The LanceDB side of the ``lancedb`` sink: connections, tables, and one version of rows.

The sink opens two databases, the table's and its hidden staging database beside it,
through one LanceDB session whose caches are bounded (:class:`LanceDatabases`), and
publishes a run's rows into the table as one commit, whatever the mode
(:func:`publish_rows`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from seamline.components.sinks._columns import ID, WINDOW
from seamline.contracts import UserError

if TYPE_CHECKING:
    import pyarrow as pa
    from lancedb import Session
    from lancedb.db import DBConnection
    from lancedb.table import Table

Mode = Literal["overwrite", "append", "upsert", "sync"]


class LanceDatabases:
    """The table ``name`` in any database (folder) the sink uses, through one session."""

    def __init__(self, sink: str, name: str, cache_bytes: int | None) -> None:
        self.sink = sink
        self.name = name
        self.cache_bytes = cache_bytes

    @functools.cached_property
    def session(self) -> Session | None:
        """The LanceDB session of this sink's connections, its index and metadata caches
        holding at most ``cache_bytes`` each (None: LanceDB's default session). Made on
        first use, where ``lancedb`` is first imported (seconds): a sink that is built but
        never writes, one refused by its destination's lock, does not pay for it."""
        import lancedb

        bound = self.cache_bytes
        if bound is None:
            return None
        return lancedb.Session(index_cache_size_bytes=bound, metadata_cache_size_bytes=bound)

    def connect(self, database: Path) -> DBConnection:
        import lancedb

        return lancedb.connect(str(database), session=self.session)

    def open(self, database: Path) -> Table | None:
        """The table in ``database``, or None if there is none.

        A symbolic link at the table's name is refused, never followed: the rows would
        go wherever it points.
        """
        folder = database / f"{self.name}.lance"
        if folder.is_symlink():
            raise UserError(
                f"{str(folder)!r} is a symbolic link; the {self.sink} sink does not write a "
                "table through a link (it could point anywhere). Remove it, or give a path "
                "that is the table itself"
            )
        if not folder.is_dir() or not any(folder.iterdir()):  # an empty part's folder
            return None
        try:
            return self.connect(database).open_table(self.name)
        except ValueError:  # "Table '...' was not found": a folder that is not a table
            return None


def publish_rows(
    databases: LanceDatabases,
    database: Path,
    table: Table | None,
    rows: pa.RecordBatchReader | None,
    ids: Callable[[], set[str]],
    mode: Mode,
    keep: frozenset[str] = frozenset(),
) -> Table | None:
    """``rows`` into the table (``table``, the one in ``database`` if any), as one new version.

    ``rows`` is None when the run wrote no rows; ``ids`` gives the documents the rows are
    of (for upsert). ``keep``: under sync, the documents whose rows stay as they are
    (set aside by a failure, see :mod:`._lance_sync`); every other row not in ``rows``
    is deleted in the same commit.
    """
    unkept = _unkept(keep)
    if rows is None:  # the run wrote no rows
        if table is not None and mode in ("overwrite", "sync"):
            table.delete(unkept or "true")  # its rows are replaced by none
        return table
    if table is None:
        database.mkdir(parents=True, exist_ok=True)
        return databases.connect(database).create_table(databases.name, data=rows)
    if mode == "overwrite":
        return databases.connect(database).create_table(databases.name, data=rows, mode="overwrite")
    if mode == "append":
        table.add(rows)
        return table
    # upsert deletes the windows its documents no longer have; sync, every row not written
    # again but those kept. Both in the merge's one commit.
    doomed = f"{ID} IN ({_listed(ids())})" if mode == "upsert" else unkept
    (
        table.merge_insert([ID, WINDOW])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(doomed)
        .execute(rows)
    )
    return table


def table_rows(table: Table, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Every row of ``table``, in the order it was added, ``batch_rows`` at a time."""
    yield from table.search().limit(None).to_batches(batch_rows)


def table_ids(table: Table, batch_rows: int) -> set[str]:
    """The documents whose rows ``table`` holds."""
    ids: set[str] = set()
    for batch in table.search().select([ID]).limit(None).to_batches(batch_rows):
        ids.update(batch.column(ID).to_pylist())
    return ids


def _unkept(keep: frozenset[str]) -> str | None:
    """The SQL filter of the rows not of a document in ``keep`` (None: every row)."""
    return f"{ID} NOT IN ({_listed(keep)})" if keep else None


def _listed(ids: set[str] | frozenset[str]) -> str:
    return ", ".join(_sql_text(doc_id) for doc_id in sorted(ids))


def _sql_text(value: str) -> str:
    """A SQL string literal (single quotes doubled), for a filter LanceDB parses."""
    return "'" + value.replace("'", "''") + "'"
