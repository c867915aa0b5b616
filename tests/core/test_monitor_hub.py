"""MonitorHub: events a monitor publishes (monitor contract 1.2) reach the others, once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from seamline.contracts import Alert, BatchDone, ComponentConfig, Event, Monitor
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


def test_a_monitor_that_publishes_forever_is_cut_off() -> None:
    class Echo(Publisher):
        def observe(self, event: Event) -> None:
            if self.publish is not None:
                self.publish(Alert("echo", "again", {}))

    first, second = Echo(ComponentConfig()), Echo(ComponentConfig())
    hub = MonitorHub([first, second])
    hub.emit(BatchDone(1, 16, 4, 40, 0.1))  # returns: at most MAX_PUBLISHED are delivered
    hub.emit(BatchDone(2, 16, 4, 40, 0.1))
