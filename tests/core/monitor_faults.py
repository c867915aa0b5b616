"""Monitors that fail, hang or publish without end, and what the hub was seen to do with them.

A monitor can neither break nor stall a run (``seamline/core/monitor_hub.py``). Each
scenario feeds a :class:`MonitorHub` the events a run would, with one faulty monitor
among well-behaved ones, and records what every monitor saw, what was logged and how
long it took: ``tests/core/test_monitor_hub.py`` asserts on it, the faults table of
docs/reliability.md (:mod:`tests.faults.outcomes`) renders it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from seamline.contracts import Alert, BatchDone, ComponentConfig, Event, Monitor, RunFinished
from seamline.core.monitor_hub import MonitorHub

FAILING_EVENTS = 50
HUNG_EVENTS = 5
HUNG_TIMEOUT_S = 0.2
HUNG_BOUND_S = 2.0
"""The hub waits for a hung monitor once (``HUNG_TIMEOUT_S``), not once per event."""
PUBLISH_CAP = 100
"""Published events the hub delivers for one emit before it cuts a runaway off."""


class Publisher(Monitor[ComponentConfig]):
    name: ClassVar[str] = "publisher"
    contract_version: ClassVar[str] = "1.2"

    def __init__(self, config: ComponentConfig) -> None:
        super().__init__(config)
        self.seen: list[Event] = []
        self.publish: Callable[[Event], None] | None = None

    def bind(self, publish: Callable[[Event], None]) -> None:
        self.publish = publish

    def observe(self, event: Event) -> None:
        self.seen.append(event)
        if isinstance(event, BatchDone) and self.publish is not None:
            self.publish(Alert("publisher", f"batch {event.index}", {}))


class Listener(Monitor[ComponentConfig]):
    name: ClassVar[str] = "listener"
    contract_version: ClassVar[str] = "1.0"  # an older monitor: bind() is the default no-op

    def __init__(self, config: ComponentConfig) -> None:
        super().__init__(config)
        self.seen: list[Any] = []

    def observe(self, event: Event) -> None:
        self.seen.append(event)


class Echo(Publisher):
    """Answers every event with an alert of the same origin, so two of them never stop."""

    def observe(self, event: Event) -> None:
        self.seen.append(event)
        if isinstance(event, Alert):
            origin = event.message
        elif isinstance(event, BatchDone):
            origin = f"batch {event.index}"
        else:
            return
        if self.publish is not None:
            self.publish(Alert("echo", origin, {}))


class Failing(Listener):
    name: ClassVar[str] = "failing"

    def observe(self, event: Event) -> None:
        raise RuntimeError("exporter down")


class Stuck(Listener):
    """Blocks in ``observe`` of its second event until released."""

    name: ClassVar[str] = "stuck"

    def __init__(self, config: ComponentConfig) -> None:
        super().__init__(config)
        self.release = threading.Event()
        self.closed = False

    def observe(self, event: Event) -> None:
        self.seen.append(event)
        if len(self.seen) == 2:
            self.release.wait()

    def close(self) -> None:
        self.closed = True


def batch(index: int) -> BatchDone:
    return BatchDone(index, 16, 4, 40, 0.1)


@dataclass(frozen=True)
class FailingOutcome:
    """A monitor raising on every one of ``FAILING_EVENTS`` events, beside a listener."""

    listener_saw: int
    warnings: list[dict[str, Any]]
    """What was logged about the failing monitor."""


def failing() -> FailingOutcome:
    bad, listener = Failing(ComponentConfig()), Listener(ComponentConfig())
    with structlog.testing.capture_logs() as logs:
        hub = MonitorHub([bad, listener])
        for index in range(FAILING_EVENTS):
            hub.emit(batch(index))
        hub.close()
    return FailingOutcome(len(listener.seen), [e for e in logs if e.get("monitor") == "failing"])


@dataclass(frozen=True)
class HungOutcome:
    """A monitor blocking on its second event, between two listeners, ``HUNG_EVENTS`` events."""

    seconds: float
    """From the first emit to the hub's close."""
    hung: dict[str, str]
    stuck_saw: int
    stuck_closed: bool
    before_saw: int
    after_saw: int
    after_saw_once_released: int
    """What the listener after it had seen once the stuck monitor woke up (0.2 s later)."""
    reported: list[dict[str, Any]]
    """What was logged about monitors not returning in time."""


def hung() -> HungOutcome:
    before, stuck, after = (
        Listener(ComponentConfig()),
        Stuck(ComponentConfig()),
        Listener(ComponentConfig()),
    )
    hub = MonitorHub([before, stuck, after], timeout_s=HUNG_TIMEOUT_S)
    try:
        started = time.monotonic()
        with structlog.testing.capture_logs() as logs:
            for index in range(HUNG_EVENTS):
                hub.emit(batch(index))
            hub.close()
        seconds = time.monotonic() - started
        seen = (len(stuck.seen), stuck.closed, len(before.seen), len(after.seen))
        stuck.release.set()  # the abandoned courier wakes up: it must not deliver again
        time.sleep(0.2)
    finally:
        stuck.release.set()
    reported = [e for e in logs if "did not return in time" in e["event"]]
    return HungOutcome(seconds, dict(hub.hung), *seen, len(after.seen), reported)


@dataclass(frozen=True)
class FloodOutcome:
    """Two monitors answering every event with one of their own, beside a listener."""

    first_emit: list[Any]
    """What the listener saw from the first emit."""
    echoes_got: int
    """Published alerts the two echoing monitors received from each other in that emit."""
    second_emit: list[Any]
    finished_reached: list[bool]
    """Whether the run's last event reached each monitor after the runaway."""
    failures: dict[str, int]


def flood() -> FloodOutcome:
    first, second = Echo(ComponentConfig()), Echo(ComponentConfig())
    listener = Listener(ComponentConfig())  # sees every published event: it never sends one
    hub = MonitorHub([first, second, listener])
    hub.emit(batch(1))
    seen_first = list(listener.seen)
    echoes = len(alerts(first.seen)) + len(alerts(second.seen))
    hub.emit(batch(2))
    second_emit = listener.seen[len(seen_first) :]
    finished = RunFinished("r", 2, 0, 2, 80, 2, 1, 0.2, True)
    hub.emit(finished)
    reached = [finished in monitor.seen for monitor in (first, second, listener)]
    return FloodOutcome(seen_first, echoes, second_emit, reached, dict(hub.failures))


def alerts(events: list[Any]) -> list[str]:
    return [event.message for event in events if isinstance(event, Alert)]
