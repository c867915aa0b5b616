"""The LanceDB side of the ``lancedb`` sink: connections, tables, and one version of rows.

The sink opens two databases, the table's and its hidden staging database beside it,
through one LanceDB session whose caches are bounded (:class:`LanceDatabases`), and
publishes a run's rows into the table as one commit, whatever the mode
(:func:`publish_rows`). With ``prune``, the sink then leaves no trace of the rows a run
deleted or replaced: :func:`compacted` before the manifest, :func:`prune_versions` after.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
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


_NOTHING_OLDER = timedelta(days=36_500)
"""``optimize`` always prunes the versions older than its ``cleanup_older_than`` (seven days
when it is None): this much keeps every version, for an ``optimize`` that only compacts."""


def compacted(databases: LanceDatabases, database: Path, table: Table, batch_rows: int) -> Table:
    """``table`` with its newest version's rows alone in the files that version uses, and
    no index (the sink builds its own next, over every row, as it always does).

    A Lance delete (a sync's or an upsert's, inside the merge) does not rewrite the data
    file: it writes a deletion file that masks the rows, and LanceDB's compaction rewrites
    a file only past 10% of its rows deleted, so one document deleted of many kept its
    text and vector on disk, in the newest version's own file. A table with any deletion
    file is therefore written anew from its rows (a new version). Then it is compacted
    (the small files ``append`` leaves merged), with its indexes dropped first: LanceDB
    merges only files the same indexes cover, and :func:`prune_versions`, which compacts
    too, merged them once the sink's new indexes covered both, making a version after the
    one the manifest names and removing that. Old versions are all kept here: this runs
    before the manifest names the result, and the publication can still be undone.
    """
    for index in table.list_indices():
        table.drop_index(index.name)
    deletions = database / f"{databases.name}.lance" / "_deletions"
    if deletions.is_dir() and any(deletions.iterdir()):
        import pyarrow as pa

        rows = pa.RecordBatchReader.from_batches(table.schema, table_rows(table, batch_rows))
        connection = databases.connect(database)
        table = connection.create_table(databases.name, data=rows, mode="overwrite")
    table.optimize(cleanup_older_than=_NOTHING_OLDER)
    return table


def prune_versions(table: Table, where: str) -> None:
    """Every version of ``table`` older than its newest deleted, with every file only they
    used (``where``: the table, for the message).

    Called once the manifest names the newest version (:func:`compacted` made it), so an
    interruption leaves the version the manifest names: LanceDB never removes the newest.
    LanceDB's ``optimize`` compacts (nothing left to, after :func:`compacted`), prunes, and
    then optimizes the indexes, which can commit one more version (a vector index's): the
    same rows, kept until the next publication prunes it. ``delete_unverified``: files of a
    write that never committed (an interrupted run's) go too; the sink's lock keeps any
    other seamline writer out of the table meanwhile.

    LanceDB removes versions by age alone (written before now, by this machine's clock),
    never by number: a version stamped ahead of the clock (written while it was set ahead,
    or on a machine whose clock was) survives, with the rows the run was to erase. The
    sink reads the versions left back after the run (:func:`left_by_prune`), and any older
    than the published one fails the run once its summary is out (:func:`unpruned`): an
    erasure request is never reported done when it is not.
    """
    import warnings

    published = table.version
    with warnings.catch_warnings():  # "removes every version except the latest": the point
        warnings.simplefilter("ignore", UserWarning)
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    if published not in {version["version"] for version in table.list_versions()}:
        raise UserError(  # LanceDB compacted after all, and pruned the manifest's version
            f"lancedb sink: pruning {where} removed version {published:,} of it, which its "
            "manifest names (LanceDB compacted the table again first): search refuses the "
            "output until the pipeline is run again, which publishes it anew"
        )


def left_by_prune(table: Table, where: str, published: int) -> str | None:
    """Why pruning left versions of ``table`` older than ``published`` (the version its
    manifest names), and what removes them (:func:`unpruned`); None when it left none."""
    versions = table.list_versions()
    left = {v["version"]: v["timestamp"] for v in versions if v["version"] < published}
    return unpruned(where, published, left, datetime.now()) if left else None


def unpruned(where: str, published: int, left: dict[int, datetime], now: datetime) -> str:
    """Why the versions ``left`` (number: when LanceDB wrote it, the machine's local time,
    as ``list_versions`` gives it) outlived pruning, and what removes them."""
    ahead = {number: stamp for number, stamp in left.items() if stamp >= now}
    listed = ", ".join(
        f"{number:,} (written {stamp:%Y-%m-%d %H:%M:%S})" for number, stamp in sorted(left.items())
    )
    why = (
        f"{len(ahead)} of them written after this machine's clock now says it is "
        f"({now:%Y-%m-%d %H:%M:%S}): LanceDB removes a version only once the clock has "
        "passed the time it was written, so a clock set back, or a version written while "
        "the clock was ahead, keeps it. Fix the clock, or run again with prune once it has "
        f"passed {max(ahead.values()):%Y-%m-%d %H:%M:%S}"
        if ahead
        else "LanceDB kept them. Run again with prune to remove them"
    )
    return (
        f"lancedb sink: the rows are published in {where} (version {published:,}), but "
        f"pruning left older versions that still hold the rows it deleted or replaced: "
        f"{listed}; {why}"
    )


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


def older_versions(table: Table, folder: Path) -> tuple[int, int, int]:
    """How many versions of ``table`` (its folder ``folder``) are older than its newest, the
    bytes of the data and index files that only they use, and the rows its newest version
    still holds in its files, masked (deleted): what pruning frees, the bytes exactly but
    for the few KB of their version records (manifests, transactions, deletion files),
    and the masked rows besides.

    The table's data and index files (``data/``, ``_indices/``) less those its newest
    version reads: its data files (the size its version record gives) and its indexes (each
    index's own size). A first publication's older versions are the commits before its
    indexes were built, which share its files: 0 bytes. An ``upsert`` (or a ``sync``
    keeping set-aside rows) that leaves rows of an old data file in place masks the rest
    of that file, which the newest version still reads: pruning compacts it away, a
    whole data file more than the bytes counted (the tester's 419,016 against 916,073
    freed), and how much that frees is known only once it is written anew. So the masked
    rows are given, from the version record, and the bytes are then a lower bound. Cheap:
    one listing of two folders and two reads of metadata.
    """
    versions = table.list_versions()
    newest = max(versions, key=lambda version: int(version["version"]))
    metadata = newest.get("metadata", {})
    data = int(metadata.get("total_files_size", 0))
    masked = int(metadata.get("total_deletion_file_rows", 0))
    indexes = sum(int(index.size_bytes or 0) for index in table.list_indices())
    total = sum(
        entry.stat().st_size
        for kind in ("data", "_indices")
        for entry in (folder / kind).rglob("*")
        if entry.is_file() and not entry.is_symlink()
    )
    return len(versions) - 1, max(total - data - indexes, 0), masked
