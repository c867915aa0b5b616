"""Bounded counting for :meth:`Loader.size` (loader contract 1.1): a total, or None, fast.

A progress bar's total is worth a moment at start, never a stall: a folder of
millions of files, or a glob over a slow network file system, must not hold the
run back while it is counted. So a count stops after :data:`LIMIT` items or
:data:`SECONDS` of counting, and the loader answers None (the bar becomes a spinner).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TypeVar

from seamline.contracts import Shard

T = TypeVar("T")

LIMIT = 1_000_000
"""The most items counted; beyond it the total is unknown."""
SECONDS = 2.0
"""The longest a count may take, measured between items."""


def bounded(items: Iterable[T]) -> list[T] | None:
    """``items`` as a list, or None when there are more than :data:`LIMIT` or listing
    them takes longer than :data:`SECONDS` (both read at each call)."""
    deadline = Deadline()
    found: list[T] = []
    for item in items:
        found.append(item)
        if len(found) > LIMIT or deadline.passed:
            return None
    return found


def owned(total: int, shard: Shard) -> int:
    """How many of positions ``0 .. total - 1`` ``shard`` owns (round robin, :meth:`Shard.owns`)."""
    return len(range(shard.index, total, shard.count))


class Deadline:
    """A time budget checked between steps of a count that is not a plain iteration."""

    def __init__(self) -> None:
        self.until = time.monotonic() + SECONDS

    @property
    def passed(self) -> bool:
        return time.monotonic() > self.until
