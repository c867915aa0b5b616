"""MonitorHub: events a monitor publishes (monitor contract 1.2) reach the others, once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from seamline.contracts import Alert, BatchDone, ComponentConfig, Event, Monitor, RunFinished
from seamline.core.seams import MonitorHub


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


def test_published_events_reach_the_others_after_the_event_and_not_the_sender() -> None:
    publisher, listener = Publisher(ComponentConfig()), Listener(ComponentConfig())
    hub = MonitorHub([publisher, listener])
    batch = BatchDone(1, 16, 4, 40, 0.1)
    hub.emit(batch)
    assert listener.seen == [batch, Alert("publisher", "batch 1", {})]
    assert publisher.seen == [batch]  # never its own alert back


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


def alerts(events: list[Any]) -> list[str]:
    return [event.message for event in events if isinstance(event, Alert)]


def test_a_monitor_that_publishes_forever_is_cut_off() -> None:
    first, second = Echo(ComponentConfig()), Echo(ComponentConfig())
    listener = Listener(ComponentConfig())  # sees every published event: it never sends one
    hub = MonitorHub([first, second, listener])

    hub.emit(BatchDone(1, 16, 4, 40, 0.1))
    # Exactly the cap (100) published events are delivered for one emit, then it returns.
    assert listener.seen[0] == BatchDone(1, 16, 4, 40, 0.1)
    assert alerts(listener.seen) == ["batch 1"] * 100
    assert len(listener.seen) == 101
    # Each published event went to every monitor but its sender: the two echoes share them.
    assert len(alerts(first.seen)) + len(alerts(second.seen)) == 100

    hub.emit(BatchDone(2, 16, 4, 40, 0.1))
    # What the runaway left queued is dropped, not delivered with the next event.
    assert listener.seen[101] == BatchDone(2, 16, 4, 40, 0.1)
    assert alerts(listener.seen[101:]) == ["batch 2"] * 100
    assert len(listener.seen) == 202

    # The run goes on: the next event reaches everyone, and cutting off is not a failure.
    finished = RunFinished("r", 2, 0, 2, 80, 2, 1, 0.2, True)
    hub.emit(finished)
    assert [finished in monitor.seen for monitor in (first, second, listener)] == [True] * 3
    assert hub.failures == {}
