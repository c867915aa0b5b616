"""The ids a loader has read so far, so that a repeated id is refused: bounded, and shard-stable.

Two records a reader cannot tell apart must never reach the sink (a LanceDB
``upsert`` would fail at publication, after all the work). A loader therefore
remembers where each id was first seen and refuses a later item with the same id.
It must make the same choice in every shard and on every resume, so it registers
the ids of the items before its own too, in input order, whichever it yields.

Each id is remembered as an 8-byte BLAKE2b digest with its place (an integer the
loader chooses: a line number, a packed row position), about 100 bytes an id
whatever the id's length, up to ``limit`` ids; past that, new ids are not
remembered (repeats of them are not caught) and one warning says so. A digest is
the same in every process, so shards agree. Two different ids sharing a digest
(odds about n² in 2⁶⁵) would make the later one a false duplicate, named as such
with the place of the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seamline.contracts.documents import id_digest
from seamline.contracts.json_safe import safe_text
from seamline.contracts.logs import get_logger

log = get_logger("seamline.components.loaders")


class SeenIds:
    """Where each id was first seen, for at most ``limit`` ids (0: no tracking)."""

    def __init__(
        self,
        limit: int,
        loader: str,
        where: Callable[[int], dict[str, Any]],
    ) -> None:
        self.limit = limit
        self.loader = loader
        self.where = where
        """A place as the fields of the warning that the bound was reached."""
        self.first_places: dict[int, int] = {}
        self.warned = False

    @property
    def active(self) -> bool:
        return self.limit > 0

    @property
    def learning(self) -> bool:
        """Whether an id not yet seen may still change what :meth:`first` says: not once the
        table is full and the warning that says so is out (nothing is remembered after
        it), so a loader need not read the ids of lines it does not load any more."""
        return self.active and not self.warned

    def first(self, doc_id: str, place: int) -> int:
        """The place ``doc_id`` was first seen: ``place`` itself unless an earlier one had it.

        The first time an id is seen it is remembered at ``place`` (while there is room),
        so asking again for the same ``(doc_id, place)`` gives ``place`` again: a loader
        may register a stretch of ids first and check its own items afterwards.
        """
        if not self.active:
            return place
        key = id_digest(doc_id)
        first = self.first_places.get(key)
        if first is not None:
            return first
        if len(self.first_places) < self.limit:
            self.first_places[key] = place
        elif not self.warned:
            self.warned = True
            log.warning(
                f"{self.loader} loader: too many ids to remember; repeated ids after this are "
                "not refused (raise max_tracked_ids to check them)",
                max_tracked_ids=self.limit,
                **self.where(place),
            )
        return place


SKIP_REPORT_SECONDS = 10.0
"""How often a loader resuming far into its input says how far it has read."""


class Skipping:
    """Says, every :data:`SKIP_REPORT_SECONDS`, how far a loader has read towards the place
    it resumes after: reading up to line 8,000,000 of a file took seconds to minutes with
    no word, and looked like a hang."""

    def __init__(self, loader: str, path: Path, through: int) -> None:
        self.loader = loader
        self.path = path
        self.through = through
        self.next = time.monotonic() + SKIP_REPORT_SECONDS

    def at(self, place: int) -> None:
        """At ``place`` (a line, a row) of those up to the cursor: a log line when it is time."""
        if place % 4096 or time.monotonic() < self.next:  # the clock read once in 4096
            return
        self.next = time.monotonic() + SKIP_REPORT_SECONDS
        log.info(
            f"{self.loader} loader: reading up to where the run resumes",
            path=safe_text(str(self.path)),
            at=place,
            resumes_after=self.through,
        )
