"""Batches launched on the device and not yet finished, kept in launch order.

JAX dispatches a compiled call and returns before the device is done, so a loop over
batches can launch the next one before it waits for the one before: the device
computes while the host checks, writes and reports (``run.in_flight``). A run's
orchestrator and an in-process embedder both keep their launched batches here, and
finish them in the order they were launched.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class InFlight(Generic[T]):
    """At most ``depth`` launched batches left unfinished; the oldest finished first.

    ``finish`` is called with each launched batch exactly once, in launch order. An
    exception from it leaves the batches after that one unfinished: they came after
    the last thing written, and a caller that stops there drops them.
    """

    def __init__(self, depth: int, finish: Callable[[T], None]) -> None:
        if depth < 0:
            raise ValueError(f"depth must be 0 or more, not {depth}")
        self.depth = depth
        self._finish = finish
        self._launched: deque[T] = deque()
        self.last_finished = time.perf_counter()
        """When the last batch was finished (its outputs handed on): see :meth:`added`."""

    def __len__(self) -> int:
        return len(self._launched)

    def add(self, launched: T) -> None:
        """Keep a batch just launched; finish the oldest ones while more than ``depth`` wait."""
        self._launched.append(launched)
        while len(self._launched) > self.depth:
            self._finish(self._launched.popleft())

    def launch(self, start: Callable[[], T], *, compiles: bool) -> None:
        """Launch a batch with ``start`` and keep it (:meth:`add`).

        ``compiles``: its shape has no compiled step yet. Compiling takes seconds, so every
        batch in flight is finished first: counted into the batch before, that time would
        show as the batch's own (and in the steady state).
        """
        if compiles:
            self.drain()
        self.add(start())

    def drain(self) -> None:
        """Finish every batch launched so far (before a checkpoint, at the end)."""
        while self._launched:
            self._finish(self._launched.popleft())

    def abandon(self) -> list[T]:
        """The batches launched and not finished, forgotten here (a caller that failed)."""
        left = list(self._launched)
        self._launched.clear()
        return left

    def added(self, started: float) -> float:
        """Seconds a batch launched at ``started`` and finished now added to the work.

        From its launch, or from the previous batch's finish if that came later (it was
        computed meanwhile): consecutive batches' seconds do not overlap, so they add up
        to the time the device was busy or waited for, and tokens over seconds is the
        rate of the whole, not each batch's latency.
        """
        now = time.perf_counter()
        seconds = now - max(started, self.last_finished)
        self.last_finished = now
        return seconds
