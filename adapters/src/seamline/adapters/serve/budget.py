"""The bytes of request bodies the server holds at once: read, not yet parsed.

A body is held from its first byte until it is parsed and checked (bodies over
:data:`~.checking.INLINE_BYTES` wait their turn to be parsed, one at a time), and each
connection may send ``--max-request-bytes`` of it: 40 connections of 16 MiB bodies held
1.1 GiB more, and ``--max-connections`` (1,024) would let 16 GiB in. So the bytes held
across all requests are bounded too (``--max-body-bytes-held``): a body whose declared
length would pass the bound is refused before it is read, and one sent without a length
(chunked) as soon as its bytes do; 429 with ``Retry-After``, as the queue's bounds are.
"""

from __future__ import annotations

from dataclasses import dataclass

from seamline.adapters.serve.errors import RATE_LIMIT, ApiError


class BodyBudget:
    """Bytes of bodies held, across every request (the event loop's: no lock)."""

    def __init__(self, limit: int, retry_after_s: int = 1) -> None:
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.held = 0

    def hold(self) -> Held:
        """A request's share, empty, to give back once its body is parsed."""
        return Held(self)

    def _take(self, size: int) -> None:
        if self.held + size > self.limit:
            raise ApiError(
                429,
                f"the server holds {self.held:,} bytes of request bodies not yet parsed, and "
                f"this body's {size:,} more would pass its bound of {self.limit:,} "
                f"(--max-body-bytes-held): retry after {self.retry_after_s} s",
                code="queue_full",
                kind=RATE_LIMIT,
                headers={"Retry-After": str(self.retry_after_s)},
            )
        self.held += size


@dataclass(slots=True)
class Held:
    """One request's bytes held in a :class:`BodyBudget`."""

    budget: BodyBudget
    taken: int = 0

    def take(self, size: int) -> None:
        """Hold ``size`` bytes more, or 429 past the budget (what is held stays held)."""
        self.budget._take(size)
        self.taken += size

    def cover(self, size: int) -> None:
        """Hold at least ``size`` bytes in all: what the body has reached so far."""
        if size > self.taken:
            self.take(size - self.taken)

    def give_back(self) -> None:
        self.budget.held -= self.taken
        self.taken = 0
