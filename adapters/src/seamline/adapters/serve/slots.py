"""A bound on searches at once: each holds a place until its worker thread is done, and a
bounded line of searches waits for a place.

A search runs in a worker thread (:func:`anyio.to_thread.run_sync`) and cannot be cut
short there: a client that gives up leaves its search running to its end. Unbounded,
64 clients asking ``k=1000`` and giving up after 1 s had 64 searches running for 6 s
more after they left, and every search behind them waited. The place is held until
the thread is done, not until the client leaves, so the bound is on the work itself.

A search past the bound waits its turn, first come first served, and one whose client
leaves while it waits is dropped before any work is done; only when :data:`WAITING_PER_PLACE`
searches per place are already waiting is one refused (429). Refusing at once past the
bound turned an ordinary burst (16 clients asking ``k=10`` on 2 CPUs, 8 places) into
429s for searches that would have been answered in a fraction of a second.
"""

from __future__ import annotations

import asyncio
from collections import deque

WAITING_PER_PLACE = 8
"""How many searches may wait for each place before one more is refused."""


class Slots:
    """``limit`` places and a line of at most ``limit * WAITING_PER_PLACE`` waiting for
    one; used on the event loop's thread only."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0
        self.waiting: deque[asyncio.Future[None]] = deque()

    @property
    def full(self) -> bool:
        """Every place taken and the line as long as it may be: refuse (429)."""
        return self.taken >= self.limit and len(self.waiting) >= self.limit * WAITING_PER_PLACE

    async def take(self) -> None:
        """A place: at once if one is free and nobody waits, else in turn. Cancelled while
        waiting (its client left), it leaves the line; cancelled just as a place was
        handed to it, it hands the place on."""
        if self.taken < self.limit and not self.waiting:
            self.taken += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn in self.waiting:
                self.waiting.remove(turn)
            elif turn.done() and not turn.cancelled():
                self.give_back()
            raise

    def give_back(self) -> None:
        """A place freed: to the first still waiting (the count stays), else back."""
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.taken -= 1
