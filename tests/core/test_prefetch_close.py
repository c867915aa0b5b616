"""A reader stopped early is closed in the thread that ran it, not by the garbage collector.

After a Ctrl-C, a SQLite loader's ``finally`` (closing its connection) ran later, during
garbage collection, on another thread: ``sqlite3.ProgrammingError: SQLite objects created
in a thread can only be used in that same thread``, reported as "Exception ignored".
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from seamline.contracts import Document, Loaded, Shard
from seamline.core.host import timed_reads
from seamline.core.monitor_hub import MonitorHub
from seamline.core.prefetch import prefetched
from seamline.core.seams import Seam
from tests.core.toy import ListLoader, ListLoaderConfig


class ThreadBoundLoader(ListLoader):
    """Yields many documents; records the thread its read began and ended in."""

    began: str = ""
    ended: str = ""

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        ThreadBoundLoader.began = threading.current_thread().name
        try:
            for n in range(10_000):
                yield Loaded(str(n), Document(f"d{n}", "a b"))
        finally:
            ThreadBoundLoader.ended = threading.current_thread().name


def test_a_stopped_read_ends_in_the_thread_it_ran_in() -> None:
    loader: Any = ThreadBoundLoader(ListLoaderConfig(texts=[]))
    seam = Seam(loader, None, MonitorHub(()))
    reads = prefetched(timed_reads(loader, seam, Shard(), None, 100), depth=2)
    taken = [next(reads) for _ in range(5)]
    reads.close()  # the consumer stops early (a Ctrl-C, a failure downstream)
    assert len(taken) == 5
    assert ThreadBoundLoader.began == "seamline-host"
    assert ThreadBoundLoader.ended == "seamline-host", "closed there, when the read stopped"
