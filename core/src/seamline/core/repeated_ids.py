"""Which document ids a loader has yielded in this read, so that the host sees a repeat.

A loader promises unique ids; one that breaks the promise (a third party's, a bug)
made two documents a reader cannot tell apart: a ``jsonl`` or LanceDB ``append`` run
wrote both silently, and a LanceDB ``upsert`` failed at publication, after all the
work, and failed again on every run. The host therefore remembers every document id
of one read of a loader (one shard, from its start or its resume cursor) and sets a
repeat aside as an error record naming the loader.

The check must stay cheap for a corpus of tens of millions of documents, so each id is
kept as an 8-byte BLAKE2b digest in an open-addressing table (a numpy array of
``uint64``, linear probing, grown by doubling at 70 % full): 11 to 23 bytes a document
whatever the id's length (10 million documents: 134 MB, briefly 201 MB while the table
grows). Two different ids sharing a digest (odds about n² in 2⁶⁵: one in 370,000 for
10 million documents) would set the later document aside as a false repeat.

What it cannot see: a repeat across shards (each shard reads its own) or across a
resume (the documents before the cursor are not read again). A loader that must catch
those tracks its ids from the start of its input, as the first-party loaders do.
"""

from __future__ import annotations

import numpy as np

from seamline.contracts.documents import id_digest

_EMPTY = 0
_MAX_LOAD = 0.7
_CHUNK = 1 << 16


def _key(doc_id: str) -> int:
    """The id's 64-bit digest, never 0 (the table's empty slot)."""
    return id_digest(doc_id) or 1


class YieldedIds:
    """A set of ids as 64-bit digests, in about 11 to 23 bytes each."""

    def __init__(self, capacity: int = 1 << 12) -> None:
        self._table = np.zeros(capacity, dtype=np.uint64)
        self._mask = capacity - 1
        self._count = 0
        self._grow_at = int(capacity * _MAX_LOAD)

    def __len__(self) -> int:
        return self._count

    def add(self, doc_id: str) -> bool:
        """Remember ``doc_id``: True if it is new, False if it was seen before."""
        key = _key(doc_id)
        table, mask = self._table, self._mask
        slot = key & mask
        while True:
            held = int(table[slot])
            if held == _EMPTY:
                break
            if held == key:
                return False
            slot = (slot + 1) & mask
        table[slot] = key
        self._count += 1
        if self._count >= self._grow_at:
            self._grow()
        return True

    def _grow(self) -> None:
        """Double the table and place every digest again, a chunk of the old table at a time
        (the old table, the new one and one chunk's list are all it holds at once)."""
        old = self._table
        capacity = len(old) * 2
        self._table = np.zeros(capacity, dtype=np.uint64)
        self._mask = capacity - 1
        self._grow_at = int(capacity * _MAX_LOAD)
        self._count = 0
        for start in range(0, len(old), _CHUNK):
            chunk = old[start : start + _CHUNK]
            for key in chunk[chunk != _EMPTY].tolist():
                self._place(key)

    def _place(self, key: int) -> None:
        """Put a digest known to be absent into the first free slot of its probe."""
        table, mask = self._table, self._mask
        slot = key & mask
        while int(table[slot]) != _EMPTY:
            slot = (slot + 1) & mask
        table[slot] = key
        self._count += 1
