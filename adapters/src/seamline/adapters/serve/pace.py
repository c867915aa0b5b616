"""How fast the engine answers, in characters a second: the basis of ``--max-queue-wait``.

The queue's bounds count texts and characters, not time: long texts filled a queue
of 16 Mi characters with minutes of work, and a request admitted behind them waited
those minutes before its client (or its balancer) gave up. The wait a new request
would have is estimated from what is ahead of it and the pace measured on the last
answers.

Each answer is one sample: its characters, and the seconds the engine spent since the
previous answer or since the request's arrival, whichever is later (the engine worked
on it, and on nothing answered since, all that time). Summed over the last samples, the
ratio is the engine's throughput whatever the order in which requests are answered (a
large request's parts interleave with small requests: one sample alone says little).
"""

from __future__ import annotations

import time
from collections import deque

SAMPLES = 64
"""Answers the pace is measured over."""
LEAST_BUSY_S = 0.05
"""Below this much measured work, the pace is not known yet: no estimate."""


class Pace:
    """Characters answered a second, over the last :data:`SAMPLES` answers."""

    def __init__(self) -> None:
        self._samples: deque[tuple[int, float]] = deque(maxlen=SAMPLES)
        self._last_answer = 0.0

    def answered(self, characters: int, arrived: float, now: float | None = None) -> None:
        """A request of ``characters``, which arrived at ``arrived`` (``time.monotonic``),
        is answered now."""
        now = time.monotonic() if now is None else now
        busy = now - max(self._last_answer, arrived)
        self._last_answer = now
        if busy > 0:
            self._samples.append((characters, busy))

    def per_second(self) -> float | None:
        """Characters a second, or None until enough was measured."""
        characters = sum(sample[0] for sample in self._samples)
        busy = sum(sample[1] for sample in self._samples)
        if busy < LEAST_BUSY_S or characters <= 0:
            return None
        return characters / busy
