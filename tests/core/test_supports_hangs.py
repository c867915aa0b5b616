"""A ``supports()`` or ``priority()`` that blocks is refused after a time limit, not waited for.

An attention whose ``supports()`` waited (on a GPU driver, a lock, the network) hung
``seamline explain`` and ``components --auto-order`` for every pipeline, saying
nothing, though no pipeline named it; so did one whose ``priority()`` waited, which
``auto`` asks first, to order the candidates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import pytest
from structlog.testing import capture_logs

from seamline.components.attention.native import NativeAttention
from seamline.core.attention import asking
from seamline.core.attention.order import auto_order_table
from seamline.core.attention.plan import explain
from seamline.core.config import parse_pipeline
from tests.core.toy import NeverAttention, toy_registry, with_attention

RELEASE = threading.Event()


@pytest.fixture
def blocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(asking, "ASK_TIMEOUT_S", 0.2)
    monkeypatch.setattr(NeverAttention, "supports", lambda self, spec: RELEASE.wait(60))
    RELEASE.clear()
    yield
    RELEASE.set()  # the threads left behind end


AUTO = (
    "pipeline: p\nloader: {use: list, with: {texts: ['a b']}}\nmodel: {use: toy}\n"
    "attention: {use: auto}\nsink: {use: memory}\nrun: {batch_size: 2, buckets: [4, 8]}\n"
)


@pytest.mark.usefixtures("blocks")
def test_explain_refuses_it_once_and_goes_on() -> None:
    registry = toy_registry()
    text = AUTO
    started = time.monotonic()
    plan = explain(parse_pipeline(text, "p.yaml", registry), registry)
    assert time.monotonic() - started < 10
    reasons = [r.reasons for b in plan.buckets for r in b.refusals if r.candidate == "never"]
    assert reasons[0] == ("supports() did not answer in 0.2 s",)
    assert all(
        reason == ("supports() did not answer in 0.2 s (asked earlier, and still not answered)",)
        for reason in reasons[1:]
    )
    assert all(bucket.chosen is not None for bucket in plan.buckets)


@pytest.mark.usefixtures("blocks")
def test_the_auto_order_table_strikes_it_through() -> None:
    never = NeverAttention(NeverAttention.Config())
    started = time.monotonic()
    table = auto_order_table([never])  # one shape a row: it is waited for once, not per row
    assert time.monotonic() - started < 0.2 * 3
    assert table.count("~~never (10)~~") == table.count("never (10)") > 3


def test_a_stall_costs_one_refusal_not_every_later_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # A supports() that stalled once was refused for the life of the process: a server
    # whose attention was pinned answered 500 for every new shape, /healthz ready.
    monkeypatch.setattr(asking, "ASK_TIMEOUT_S", 0.2)
    slow = threading.Event()
    slow.set()

    def supports(self: object, spec: object) -> str:
        if slow.is_set():
            time.sleep(0.4)  # once, longer than the limit
        return "served"

    monkeypatch.setattr(NeverAttention, "supports", supports)
    never = NeverAttention(NeverAttention.Config())
    with pytest.raises(asking.AskTimeout, match=r"did not answer in 0\.2 s$"):
        asking.asked(never, None)  # type: ignore[arg-type]
    slow.clear()
    with pytest.raises(asking.AskTimeout, match=r"still not answered"):
        asking.asked(never, None)  # type: ignore[arg-type]
    time.sleep(0.4)  # the stalled answer comes
    assert asking.asked(never, None) == "served"  # type: ignore[arg-type]


class Stuck(NativeAttention):
    """Serves every shape, but its ``priority()`` waits (for a driver, say)."""

    name: ClassVar[str] = "stuck"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False
    waited: ClassVar[float] = 8.0

    def priority(self, spec: object) -> int:
        RELEASE.wait(self.waited)
        return 100


@pytest.fixture
def stuck(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(asking, "ASK_TIMEOUT_S", 0.2)
    RELEASE.clear()
    yield
    RELEASE.set()


@pytest.mark.usefixtures("stuck")
def test_a_blocked_priority_is_refused_once_with_a_warning_and_auto_goes_on() -> None:
    registry = with_attention(toy_registry(), Stuck, "acme-stuck", "0.1")
    started = time.monotonic()
    with capture_logs() as logs:
        plan = explain(parse_pipeline(AUTO, "p.yaml", registry), registry)
    assert time.monotonic() - started < Stuck.waited  # it was not waited for
    rows = [row for b in plan.buckets for row in b.verdicts() if row.candidate == "stuck"]
    assert len(rows) == len(plan.buckets) >= 2  # last in each, as explain shows it
    assert {row.verdict for row in rows} == {"cannot serve"}
    assert rows[0].why == "priority() did not answer in 0.2 s"
    assert all(
        row.why == "priority() did not answer in 0.2 s (asked earlier, and still not answered)"
        for row in rows[1:]
    )
    assert all(bucket.chosen not in (None, "stuck") for bucket in plan.buckets)
    warned = [e for e in logs if e["event"].startswith("attention priority() did not answer")]
    assert warned
    assert warned[0]["attention"] == "stuck"


@pytest.mark.usefixtures("stuck")
def test_the_auto_order_table_strikes_a_blocked_priority_through_with_why() -> None:
    started = time.monotonic()
    table = auto_order_table([Stuck(Stuck.Config())])
    assert time.monotonic() - started < Stuck.waited
    assert "~~stuck (priority() did not answer in 0.2 s)~~" in table
    assert table.count("~~stuck (priority() did not answer in 0.2 s") == table.count("stuck") > 3
