"""``--max-queue-wait``: a request that would wait too long behind the queue is a 429.

The queue's bounds count texts and characters: with long texts, 16 Mi characters queued
were minutes of work, and a request admitted behind them waited those minutes (its
client, or its load balancer, gave up long before). The wait is estimated from the
characters ahead and the engine's measured pace (:mod:`seamline.adapters.serve.pace`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from seamline.adapters.serve.engine import MOST_RETRY_AFTER_S, TRUNCATED_CHARS, Engine
from seamline.adapters.serve.errors import ApiError
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.adapters.serve.pace import Pace


class Queued:
    """What the engine asks of a pending request: never answered here."""

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        pass

    def cancelled(self) -> bool:
        return False


class QueueOnly:
    def submit(self, texts: list[str], **_: Any) -> Queued:
        return Queued()


def _engine(limits: Limits, chars_per_second: float) -> Engine:
    engine = Engine(QueueOnly(), limits, ServeMetrics())  # type: ignore[arg-type]
    engine.state = "ready"
    engine.pace.answered(int(chars_per_second), arrived=100.0, now=101.0)  # 1 s of work
    return engine


def _submit(engine: Engine, characters: int, longest: int = 1000) -> None:
    """A request of ``characters`` in texts of at most ``longest`` characters each."""
    texts = ["x" * longest] * (characters // longest)
    texts += ["x" * (characters % longest)] if characters % longest else []
    loop = asyncio.new_event_loop()
    try:
        engine.submit(texts, characters, loop)
    finally:
        loop.close()


def test_a_request_that_would_wait_past_the_bound_is_refused_with_when_to_retry() -> None:
    engine = _engine(Limits(max_queue_wait_s=2), chars_per_second=1000)
    _submit(engine, 5000)  # an empty queue takes any request, however long
    with pytest.raises(ApiError) as refused:
        _submit(engine, 10)  # 5,000 characters ahead at 1,000 a second: 5 s > 2 s
    err = refused.value
    assert (err.status, err.code, err.kind) == (429, "queue_full", "rate_limit_error")
    assert "--max-queue-wait" in err.message
    assert err.headers["Retry-After"] == "3"  # 5 s of work, 2 s of it may be waited
    assert engine.requests_waiting == 1


def test_a_request_within_the_bound_and_any_without_one_are_queued() -> None:
    engine = _engine(Limits(max_queue_wait_s=10), chars_per_second=1000)
    _submit(engine, 5000)
    _submit(engine, 10)  # 5 s ahead, within 10 s
    unbounded = _engine(Limits(), chars_per_second=1)
    for _ in range(3):
        _submit(unbounded, 5000)  # the default: no bound by time
    assert (engine.requests_waiting, unbounded.requests_waiting) == (2, 3)


def test_the_pace_is_summed_over_answers_and_unknown_before_any() -> None:
    pace = Pace()
    assert pace.per_second() is None
    pace.answered(100, arrived=0.0, now=1.0)  # 1 s of work for 100 characters
    pace.answered(300, arrived=0.5, now=2.0)  # waited behind it: 1 s of its own
    assert pace.per_second() == pytest.approx(200.0)


def test_the_bound_is_refused_outside_its_range() -> None:
    assert "--max-queue-wait must be above 0" in " ".join(Limits(max_queue_wait_s=0).problems())
    assert Limits(max_queue_wait_s=0.5).problems() == []
    assert Limits().max_queue_wait_s is None


def test_under_truncate_a_long_text_counts_one_window_of_work() -> None:
    # 64 texts of 30,000 characters, cut to their first window (3.4 s of work), were
    # counted as 1.9 M characters: short requests behind them were refused "about 948 s
    # of work: retry after 946 s".
    truncating = _engine(Limits(max_queue_wait_s=2), chars_per_second=100_000)
    _submit(truncating, 64 * 30_000, longest=30_000)
    _submit(truncating, 10)  # 64 x 2,048 characters of work: 1.3 s, within 2 s
    assert truncating.work_waiting == 64 * TRUNCATED_CHARS + 10
    averaging = _engine(Limits(max_queue_wait_s=2, long_text="mean"), chars_per_second=100_000)
    _submit(averaging, 64 * 30_000, longest=30_000)  # every window embedded: 19 s
    with pytest.raises(ApiError) as refused:
        _submit(averaging, 10)
    assert refused.value.headers["Retry-After"] == "18"


def test_retry_after_is_at_most_a_minute() -> None:
    engine = _engine(Limits(max_queue_wait_s=1, long_text="mean"), chars_per_second=10)
    _submit(engine, 100_000)  # 10,000 s ahead by the estimate
    with pytest.raises(ApiError) as refused:
        _submit(engine, 10)
    assert refused.value.headers["Retry-After"] == str(MOST_RETRY_AFTER_S) == "60"
