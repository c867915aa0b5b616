"""MonitorHub: events a monitor publishes (monitor contract 1.2) reach the others, once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

import structlog

from seamline.contracts import Alert, BatchDone, ComponentConfig, Event, Monitor, RunFinished
from seamline.contracts.monitor import emitting_thread
from seamline.core.monitor_hub import MonitorHub


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


class Failing(Listener):
    name: ClassVar[str] = "failing"

    def observe(self, event: Event) -> None:
        raise RuntimeError("exporter down")


def test_a_failing_monitor_is_reported_once_then_counted() -> None:
    failing, listener = Failing(ComponentConfig()), Listener(ComponentConfig())
    with structlog.testing.capture_logs() as logs:
        hub = MonitorHub([failing, listener])
        for index in range(50):
            hub.emit(BatchDone(index, 16, 4, 40, 0.1))
        hub.close()
    assert len(listener.seen) == 50
    warnings = [entry for entry in logs if entry.get("monitor") == "failing"]
    assert [w["event"].split(";")[0] for w in warnings] == [
        "monitor failed",
        "monitor failed repeatedly in this run",
    ]
    assert warnings[1]["failures"] == 50


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


def test_a_hung_monitor_is_given_up_on_and_the_others_go_on() -> None:
    before, stuck, after = (
        Listener(ComponentConfig()),
        Stuck(ComponentConfig()),
        Listener(ComponentConfig()),
    )
    hub = MonitorHub([before, stuck, after], timeout_s=0.2)
    try:
        started = time.monotonic()
        with structlog.testing.capture_logs() as logs:
            for index in range(5):
                hub.emit(BatchDone(index, 16, 4, 40, 0.1))
            hub.close()
        assert time.monotonic() - started < 2.0  # one timeout, not one per event
        assert hub.hung == {"stuck": "observe(BatchDone)"}
        assert len(stuck.seen) == 2
        assert not stuck.closed
        assert len(before.seen) == len(after.seen) == 5  # the one after it got event 2 too
        assert [e["monitor"] for e in logs if "did not return in time" in e["event"]] == ["stuck"]
        stuck.release.set()  # the abandoned courier wakes up: it must not deliver again
        time.sleep(0.2)
        assert len(after.seen) == 5
    finally:
        stuck.release.set()


def test_monitors_see_the_callers_context() -> None:
    seen: list[object] = []

    class ContextReader(Listener):
        def observe(self, event: Event) -> None:
            seen.append(structlog.contextvars.get_contextvars().get("run_id"))

    hub = MonitorHub([ContextReader(ComponentConfig())])
    with structlog.contextvars.bound_contextvars(run_id="r-1"):
        hub.emit(BatchDone(1, 16, 4, 40, 0.1))
    assert seen == ["r-1"]


def test_a_monitor_can_tell_which_thread_emitted_the_event() -> None:
    # The hub calls observe on its courier thread; emitting_thread() still names the
    # thread that emitted (the memory monitor tells the device thread's seam calls
    # from the host thread's this way).
    recorded: list[tuple[int, int]] = []

    class ThreadReader(Listener):
        def observe(self, event: Event) -> None:
            recorded.append((emitting_thread(), threading.get_ident()))

    hub = MonitorHub([ThreadReader(ComponentConfig())])
    emitter = threading.Thread(target=hub.emit, args=(BatchDone(1, 16, 4, 40, 0.1),))
    emitter.start()
    emitter.join()
    hub.emit(BatchDone(2, 16, 4, 40, 0.1))
    assert recorded[0][0] == emitter.ident
    assert recorded[1][0] == threading.get_ident()
    assert recorded[0][1] != emitter.ident  # it did run on the courier
