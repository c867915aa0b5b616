"""A bound on searches at once: each holds a place until its worker thread is done.

A search runs in a worker thread (:func:`anyio.to_thread.run_sync`) and cannot be cut
short there: a client that gives up leaves its search running to its end. Unbounded,
64 clients asking ``k=1000`` and giving up after 1 s had 64 searches running for 6 s
more after they left, and every search behind them waited. The place is held until
the thread is done, not until the client leaves, so the bound is on the work itself.
"""

from __future__ import annotations


class Slots:
    """``limit`` places, taken and given back on the event loop's thread only."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    def take(self) -> bool:
        """A place, if one is free (True); else False at once: no wait."""
        if self.taken >= self.limit:
            return False
        self.taken += 1
        return True

    def give_back(self) -> None:
        self.taken -= 1
