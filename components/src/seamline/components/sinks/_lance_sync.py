"""``mode: sync`` of the ``lancedb`` sink: which documents are kept as they were, and the count
of what the one commit changed.

Sync makes the table hold exactly the documents of this run's input. The write itself
is one ``merge_insert`` (:func:`~._lance_table.publish_rows`); this module decides the
two things around it that need the data:

- **A document set aside by a failure keeps its rows.** It is still in the input
  (a file that could not be read this time, one the model could not prepare):
  deleting what the table holds of it would lose data the run could not replace, so
  its old rows stay untouched. Documents are set aside before any of their rows are
  written, so such a document has none in the run; if one does (an error record whose
  id is also a document's that was embedded: a loader's duplicate), the rows written
  win. A document *skipped* by a rule (stage ``skip``: now blank, or the model made no
  examples of it) has, as it is now, nothing to embed: its old rows describe text that
  is gone, and are deleted like those of a removed document.
- **A failure that names no document of the table holds every deletion back.** A
  loader that could not read a record far enough to know its id (a line of bad bytes
  or broken JSON, a Parquet file unreadable this time) sets it aside under a place in
  the input (``notes.jsonl:2``, ``data/b.parquet``), not a document id, and marks it
  so (``"place": true``); the documents it stands for are then missing from the run as
  if they had been removed. A place holds deletions back even when a document of the
  table or of the run has the same id (any string may be one). A repeated id's record
  (``"duplicate_of"``) is a place too, but it stands for no missing document: its id
  was read and the input holds it, so it holds nothing back (and names no document kept:
  the first record with that id decides). Since a loader's failure
  whose id the table does not hold may also be such a place (a third-party loader's, not
  marked; or a new document: a failure to prepare names its document), sync
  deletes nothing in that run: the documents missing from the input keep their rows
  (counted as ``held``, with a warning naming the failures), while those embedded are
  added or replaced as usual. The next run whose failures all name documents of the
  table deletes them.
- **A run that embedded nothing never empties the table.** When every document was
  skipped or set aside (an extraction that now gives empty texts), sync would delete
  every row and add none: it is refused, nothing changed, naming ``mode: overwrite``
  for a table that is meant to be emptied.
- **The counts are measured, not guessed.** Each document's rows (every column, the
  vector bit for bit, in window order) are hashed once in the table before the commit
  and once in the rows published; a document is ``added`` (not in the table before),
  ``replaced`` (its rows differ: text, windows, spans, metadata or vector),
  ``unchanged`` (the same rows), ``deleted`` (in the table, not in the input),
  ``kept`` (set aside by a failure, its old rows kept) or ``held`` (not in the input,
  its rows kept because a failure names no document of the table; only when not 0).
  Memory: one 128-bit number per document of the table and of the run, while
  publishing.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from seamline.components.sinks._columns import ID
from seamline.components.sinks._lance_table import (
    LanceDatabases,
    Mode,
    publish_rows,
    table_rows,
)
from seamline.contracts import UserError
from seamline.contracts.logs import get_logger

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa
    from lancedb.table import Table

EMBEDDING = "embedding"
_MODULUS = 1 << 128
_NAMED = 5
"""How many of the failures that hold deletions back the warning names."""

log = get_logger("seamline.components.sinks.lancedb")


@dataclass(frozen=True, slots=True)
class Changes:
    """What one sync did to the table, in documents."""

    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    deleted: int = 0
    kept: int = 0
    """Set aside by a failure in this run, their earlier rows left in the table."""
    held: int = 0
    """Not in this run's input, their rows left because a failure names no document."""

    def as_dict(self) -> dict[str, int]:
        counts = asdict(self)
        if not self.held:
            del counts["held"]  # the usual case: said only when it happened
        return counts


def publish_synced(
    databases: LanceDatabases,
    database: Path,
    table: Table | None,
    rows: pa.RecordBatchReader | None,
    ids: Callable[[], set[str]],
    errors: Iterable[bytes],
    batch_rows: int,
) -> tuple[Table | None, Changes]:
    """``rows`` (of the documents ``ids``) into the table as its whole content, in one
    commit, but for the documents ``errors`` (the run's errors files) name as set aside
    by a failure, kept as they were; and what that changed."""
    import pyarrow as pa

    contents = list(errors)
    failed = failed_ids(contents)
    embedded = ids() if failed else set()
    unread = failed_ids(contents, stages={"load"}) - embedded
    tally = SyncTally(failed - embedded, unread, place_ids(contents))
    if table is not None:
        try:
            tally.before(table_rows(table, batch_rows))
        except (RuntimeError, OSError, ValueError) as err:  # a table damaged on disk
            where = str(database / f"{databases.name}.lance")
            raise UserError(
                f"{databases.sink} sink: cannot sync into {where!r}: its rows cannot be read "
                f"({err}); nothing was changed. Restore it to a readable "
                "version (table.restore(n)), or replace it with mode: overwrite"
            ) from err
    if rows is None and tally.empties_the_table():
        where = str(database / f"{databases.name}.lance")
        skipped = sum(1 for entry in _entries(contents) if entry.get("stage") == "skip")
        raise UserError(
            f"{databases.sink} sink: cannot sync {where!r}: this run embedded no document "
            f"({skipped} skipped by a rule: blank now, or the model made nothing of it; "
            f"{len(failed | tally.places)} set aside by a failure), so sync would delete all "
            f"{tally.documents_before} documents of the table and add none; nothing was "
            "changed. Check the input (an extraction that now gives empty texts?); if the "
            "table is meant to be emptied, use mode: overwrite"
        )
    unnamed = tally.unnamed()
    if unnamed and tally.documents_before:
        shown = ", ".join(repr(doc) for doc in sorted(unnamed)[:_NAMED])
        more = f" and {len(unnamed) - _NAMED} more" if len(unnamed) > _NAMED else ""
        log.warning(
            "sync deletes no document this run: documents set aside by a failure name no "
            f"document of the table ({shown}{more}: a place in the input the loader could "
            "not read far enough to know its id, or a new document), so the documents "
            "missing from the input keep their rows; fix those inputs (see the errors "
            "file) and run again to delete what was removed",
            sink=databases.sink,
        )
    source = rows
    if source is not None:
        rows = pa.RecordBatchReader.from_batches(source.schema, tally.published(source))
    # Held back, sync is upsert: the run's documents replaced, stale windows of theirs gone.
    mode: Mode = "upsert" if unnamed else "sync"
    published = publish_rows(databases, database, table, rows, ids, mode, keep=tally.kept)
    return published, tally.changes()


def failed_ids(errors: Iterable[bytes], stages: set[str] | None = None) -> frozenset[str]:
    """The documents set aside by a failure (any stage but ``skip``, or those of ``stages``),
    from errors files' contents (one JSON object per line, as the sink kit writes them).
    A record whose id is a place in the input (``"place": true``) names no document."""
    failed = (
        entry.get(ID)
        for entry in _entries(errors)
        if entry.get("stage") != "skip"
        and (stages is None or entry.get("stage") in stages)
        and entry.get("place") is not True
    )
    return frozenset(doc for doc in failed if isinstance(doc, str))


def place_ids(errors: Iterable[bytes]) -> frozenset[str]:
    """The places in the input (``"place": true``) of the records set aside by a failure
    whose id the loader could not read.

    Any string may be a document's id: a place taken for one (``docs.jsonl:1``, the id of
    another, embedded, line) stood for nothing missing, so sync deleted the rows of the
    document the unreadable line stood for. A place holds every deletion back, whatever
    the table or the run holds under the same string. Not that of a repeated id
    (``"duplicate_of"``): its id is known and in the input, and one repeated line held
    back the deletion of every document removed from it.
    """
    places = (
        entry.get(ID)
        for entry in _entries(errors)
        if entry.get("stage") != "skip"
        and entry.get("place") is True
        and not isinstance(entry.get("duplicate_of"), str)
    )
    return frozenset(str(place) for place in places)


def _entries(errors: Iterable[bytes]) -> Iterator[dict[str, object]]:
    """The error records in errors files' contents (a line that is not one is passed over)."""
    for content in errors:
        for line in content.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                yield entry


class SyncTally:
    """The per-document digests of the table before a sync and of the rows it publishes."""

    def __init__(
        self,
        kept: frozenset[str],
        unread: frozenset[str] = frozenset(),
        places: frozenset[str] = frozenset(),
    ) -> None:
        self.kept = kept
        self.unread = unread
        """Those of ``kept`` set aside by the loader (stage ``load``): the only failures
        whose id may be a place in the input rather than a document's (a model that
        could not prepare a document was given it, id and all)."""
        self.places = places
        """The failures a loader marked as named by a place in the input, not an id."""
        self._before: dict[str, int] = {}
        self._after: _Digests = _Digests()

    def before(self, batches: Iterable[pa.RecordBatch]) -> None:
        """Digest the table's rows, as they are before the commit."""
        digests = _Digests()
        for batch in batches:
            digests.add(batch)
        self._before = digests.per_document()

    @property
    def documents_before(self) -> int:
        """How many documents the table held before the commit."""
        return len(self._before)

    def unnamed(self) -> frozenset[str]:
        """The loader's failures that name no document of the table: each a new document,
        or a place in the input standing for one of the table's that the loader could not
        read far enough to name (all of :attr:`places`). Any holds every deletion of the
        sync back."""
        return (self.unread - self._before.keys()) | self.places

    def empties_the_table(self) -> bool:
        """Whether a sync that publishes no rows would leave a table that had some empty:
        none of its documents is kept (set aside by a failure in this run)."""
        return bool(self._before) and not (self._before.keys() & self.kept) and not self.unnamed()

    def published(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``batches``, digested as they pass on to the commit."""
        for batch in batches:
            self._after.add(batch)
            yield batch

    def changes(self) -> Changes:
        """The counts, once the published rows have all passed through :meth:`published`."""
        before, after = self._before, self._after.per_document()
        both = before.keys() & after.keys()
        same = sum(1 for doc in both if before[doc] == after[doc])
        kept = self.kept - after.keys()
        gone = before.keys() - after.keys() - kept
        held = len(gone) if self.unnamed() else 0
        return Changes(
            added=len(after.keys() - before.keys()),
            replaced=len(both) - same,
            unchanged=same,
            deleted=len(gone) - held,
            kept=len(kept & before.keys()),
            held=held,
        )


class _Digests:
    """One digest per document: the sum, modulo 2**128, of its windows' digests.

    Each window's digest covers its ``window_index``, so the sum does not depend on the
    order the rows come in, and one number per document is held, not one per window.
    """

    def __init__(self) -> None:
        self._sums: defaultdict[str, int] = defaultdict(int)

    def add(self, batch: pa.RecordBatch) -> None:
        import numpy as np

        vectors = batch.column(EMBEDDING) if EMBEDDING in batch.schema.names else None
        if vectors is None or vectors.null_count:  # not the sink's layout: compare as values
            plain, matrix = batch.to_pylist(), [np.empty(0)] * len(batch)
        else:
            plain = batch.drop_columns([EMBEDDING]).to_pylist()
            flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False))
            matrix = list(flat.reshape(len(batch), -1)) if len(batch) else []
        for row, vector in zip(plain, matrix, strict=True):
            fields = json.dumps(row, sort_keys=True, default=str).encode()
            digest = hashlib.blake2b(fields, digest_size=16)
            digest.update(vector.tobytes())
            doc = str(row.get(ID))
            self._sums[doc] = (self._sums[doc] + int.from_bytes(digest.digest())) % _MODULUS

    def per_document(self) -> dict[str, int]:
        return dict(self._sums)
