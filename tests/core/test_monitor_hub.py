"""MonitorHub: events a monitor publishes (monitor contract 1.2) reach the others, once;
seam starts (1.4) reach only the monitors that ask for them."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, ClassVar

import pytest
import structlog

from seamline.contracts import Alert, BatchDone, ComponentConfig, Event, SeamCall, SeamStarted
from seamline.contracts.monitor import emitting_thread
from seamline.core.monitor_hub import MonitorHub
from seamline.core.seams import Seam
from tests.core.monitor_faults import (
    FAILING_EVENTS,
    HUNG_BOUND_S,
    HUNG_EVENTS,
    PUBLISH_CAP,
    Echo,
    Listener,
    Publisher,
    alerts,
)
from tests.core.toy import CountingSink

if TYPE_CHECKING:
    from tests.faults.outcomes import FaultOutcomes


def test_published_events_reach_the_others_after_the_event_and_not_the_sender() -> None:
    publisher, listener = Publisher(ComponentConfig()), Listener(ComponentConfig())
    hub = MonitorHub([publisher, listener])
    batch = BatchDone(1, 16, 4, 40, 0.1)
    hub.emit(batch)
    assert listener.seen == [batch, Alert("publisher", "batch 1", {})]
    assert publisher.seen == [batch]  # never its own alert back


def test_a_monitor_that_publishes_forever_is_cut_off(fault_outcomes: FaultOutcomes) -> None:
    # Two echoing monitors answer each other's events; a listener sees every published event.
    run = fault_outcomes["monitor-floods"]
    # Exactly the cap (100) published events are delivered for one emit, then it returns.
    assert run.first_emit[0] == BatchDone(1, 16, 4, 40, 0.1)
    assert alerts(run.first_emit) == ["batch 1"] * PUBLISH_CAP
    assert len(run.first_emit) == PUBLISH_CAP + 1
    # Each published event went to every monitor but its sender: the two echoes share them.
    assert run.echoes_got == PUBLISH_CAP

    # What the runaway left queued is dropped, not delivered with the next event.
    assert run.second_emit[0] == BatchDone(2, 16, 4, 40, 0.1)
    assert alerts(run.second_emit) == ["batch 2"] * PUBLISH_CAP
    assert len(run.first_emit) + len(run.second_emit) == 2 * (PUBLISH_CAP + 1)

    # The run goes on: the next event reaches everyone, and cutting off is not a failure.
    assert run.finished_reached == [True] * 3
    assert run.failures == {}


def test_a_failing_monitor_is_reported_once_then_counted(fault_outcomes: FaultOutcomes) -> None:
    run = fault_outcomes["monitor-raises"]  # raises "exporter down" on each of 50 events
    assert run.listener_saw == FAILING_EVENTS
    assert [w["event"].split(";")[0] for w in run.warnings] == [
        "monitor failed",
        "monitor failed repeatedly in this run",
    ]
    assert run.warnings[1]["failures"] == FAILING_EVENTS


def test_a_hung_monitor_is_given_up_on_and_the_others_go_on(fault_outcomes: FaultOutcomes) -> None:
    run = fault_outcomes["monitor-hangs"]  # blocks on its 2nd event; the hub waits 0.2 s
    assert run.seconds < HUNG_BOUND_S  # one timeout, not one per event
    assert run.hung == {"stuck": "observe(BatchDone)"}
    assert run.stuck_saw == 2
    assert not run.stuck_closed
    assert run.before_saw == run.after_saw == HUNG_EVENTS  # the one after it got event 2 too
    assert [e["monitor"] for e in run.reported] == ["stuck"]
    # The abandoned courier woke up once released: it must not deliver again.
    assert run.after_saw_once_released == HUNG_EVENTS


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


class StartWatcher(Listener):
    name = "start-watcher"
    contract_version = "1.4"

    @property
    def wants_seam_starts(self) -> bool:
        return True


def test_seam_starts_reach_only_the_monitors_that_ask() -> None:
    watcher, listener = StartWatcher(ComponentConfig()), Listener(ComponentConfig())
    hub = MonitorHub([watcher, listener])
    assert hub.wants_seam_starts
    seam = Seam(CountingSink(ComponentConfig()), None, hub)
    with seam.call("write"):
        assert watcher.seen == [SeamStarted("sink", "counting", "write")]  # before the call
    assert watcher.seen[1:] == listener.seen
    assert [type(e) for e in listener.seen] == [SeamCall]


def test_no_seam_start_is_made_when_no_monitor_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[object, ...]] = []
    monkeypatch.setattr("seamline.core.seams.SeamStarted", lambda *a: made.append(a))
    hub = MonitorHub([Listener(ComponentConfig())])
    assert not hub.wants_seam_starts
    with Seam(CountingSink(ComponentConfig()), None, hub).call("write"):
        pass
    assert made == []


def test_a_monitor_that_cannot_say_whether_it_wants_starts_gets_none() -> None:
    class Broken(Listener):
        name = "broken"

        @property
        def wants_seam_starts(self) -> bool:
            raise RuntimeError("no config")

    broken = Broken(ComponentConfig())
    hub = MonitorHub([broken])
    assert not hub.wants_seam_starts
    hub.emit(SeamStarted("sink", "counting", "write"))
    assert broken.seen == []


class BatchReader(Listener):
    """Observes batches only (monitor contract 1.6)."""

    name = "batch-reader"
    contract_version = "1.6"

    @property
    def observes(self) -> tuple[type[object], ...]:
        return (BatchDone, Alert)


def courier_hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every event's hand-off to the hub's monitor thread (what ``observes`` spares)."""
    import seamline.core.monitor_hub as hub_module

    made: list[str] = []
    deliver = hub_module._Courier.deliver

    def counted(self: object, call: object, what: str, *args: object) -> int:
        if what.startswith("observe"):
            made.append(what)
        return deliver(self, call, what, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(hub_module._Courier, "deliver", counted)
    return made


def test_an_event_goes_only_to_the_monitors_that_observe_its_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hand_offs = courier_hand_offs(monkeypatch)
    reader, listener = BatchReader(ComponentConfig()), Listener(ComponentConfig())
    hub = MonitorHub([reader, listener])
    batch, call = BatchDone(1, 16, 4, 40, 0.1), SeamCall("sink", "counting", "write", 0.1)
    hub.emit(batch)
    hub.emit(call)
    assert reader.seen == [batch]
    assert listener.seen == [batch, call]  # one that does not say gets every type
    assert hand_offs == ["observe(BatchDone)", "observe(SeamCall)"]


def test_an_event_no_monitor_observes_is_not_handed_off(monkeypatch: pytest.MonkeyPatch) -> None:
    hand_offs = courier_hand_offs(monkeypatch)
    reader = BatchReader(ComponentConfig())
    hub = MonitorHub([reader])
    with Seam(CountingSink(ComponentConfig()), None, hub).call("write"):
        pass
    hub.emit(BatchDone(1, 16, 4, 40, 0.1))
    assert reader.seen == [BatchDone(1, 16, 4, 40, 0.1)]
    assert hand_offs == ["observe(BatchDone)"]  # the seam's SeamCall cost no hand-off


def test_published_events_are_routed_by_type_too() -> None:
    publisher, reader = Publisher(ComponentConfig()), BatchReader(ComponentConfig())

    class CallReader(Listener):
        name = "call-reader"

        @property
        def observes(self) -> tuple[type[object], ...]:
            return (SeamCall,)

    calls = CallReader(ComponentConfig())
    hub = MonitorHub([publisher, reader, calls])
    hub.emit(BatchDone(1, 16, 4, 40, 0.1))
    assert reader.seen == [BatchDone(1, 16, 4, 40, 0.1), Alert("publisher", "batch 1", {})]
    assert calls.seen == []


@pytest.mark.parametrize("answer", ["BatchDone", ("BatchDone",), RuntimeError("no config")])
def test_a_monitor_whose_observes_cannot_be_used_gets_every_event(
    answer: object, capsys: pytest.CaptureFixture[str]
) -> None:
    class Unclear(Listener):
        name = "unclear"

        @property
        def observes(self) -> object:  # type: ignore[override]  # deliberately unusable
            if isinstance(answer, Exception):
                raise answer
            return answer

    unclear = Unclear(ComponentConfig())
    with structlog.testing.capture_logs() as logs:
        hub = MonitorHub([unclear])
    call = SeamCall("sink", "counting", "write", 0.1)
    hub.emit(call)
    assert unclear.seen == [call]
    assert [entry["monitor"] for entry in logs if entry["log_level"] == "warning"] == ["unclear"]


def couriers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "seamline-monitors"]


def test_closing_the_hub_ends_its_courier_and_lets_its_monitors_go() -> None:
    # A courier left waiting for work kept its thread, and through the hub every monitor
    # of the run and the last event, for the life of the process: one more per run.
    import gc
    import weakref

    before = set(couriers())
    listener = Listener(ComponentConfig())
    hub = MonitorHub([listener])
    hub.emit(BatchDone(1, 16, 4, 40, 0.1))
    assert len(set(couriers()) - before) == 1
    hub.close()
    assert set(couriers()) - before == set()
    gone = weakref.ref(listener)
    del hub, listener
    gc.collect()
    assert gone() is None


def test_an_abandoned_courier_ends_when_the_stuck_call_returns() -> None:
    # The stuck monitor is the last one the courier was to call: once released, it must
    # not go back to waiting for work that will never come.
    release = threading.Event()

    class Stuck(Listener):
        name = "stuck"

        def observe(self, event: Event) -> None:
            release.wait(10)

    before = set(couriers())
    hub = MonitorHub([Listener(ComponentConfig()), Stuck(ComponentConfig())], timeout_s=0.1)
    hub.emit(BatchDone(1, 16, 4, 40, 0.1))
    assert hub.hung == {"stuck": "observe(BatchDone)"}
    hub.emit(BatchDone(2, 16, 4, 40, 0.1))  # a fresh courier serves the rest
    hub.close()
    release.set()
    for thread in set(couriers()) - before:
        thread.join(5)
    assert set(couriers()) - before == set()


def test_runs_one_after_another_leave_no_courier_and_no_monitor_behind() -> None:
    # As a notebook or a service runs pipelines: each run's courier thread, its monitors
    # and what they hold were kept until the process ended.
    import gc
    import weakref

    from seamline.core import Pipeline
    from tests.core.toy import MemorySink, toy_registry

    spec = {
        "pipeline": "again",
        "loader": {"use": "list", "with": {"texts": ["one", "two"]}},
        "model": {"use": "toy"},
        "attention": {"use": "native"},
        "sink": {"use": "memory"},
    }
    before = set(couriers())
    kept: list[weakref.ref[Listener]] = []
    for _ in range(3):
        MemorySink.reset()
        monitor = Listener(ComponentConfig())
        kept.append(weakref.ref(monitor))
        Pipeline.from_dict(spec, registry=toy_registry()).run(extra_monitors=[monitor])
        assert monitor.seen, "the monitor took part in the run"
        del monitor
    gc.collect()
    assert set(couriers()) - before == set()
    assert [ref() for ref in kept] == [None, None, None]


class Sluggish(Listener):
    name: ClassVar[str] = "sluggish"

    def observe(self, event: Event) -> None:
        time.sleep(0.03)
        super().observe(event)


def test_published_events_dropped_past_the_cap_are_said_naming_the_monitors() -> None:
    # Two monitors publishing an Alert for every event published 13,850 Alerts in a run,
    # and the hub dropped what passed its cap without a word.
    first, second = Echo(ComponentConfig()), Echo(ComponentConfig())
    second.name = "echo-2"  # type: ignore[misc]
    hub = MonitorHub([first, second])
    with structlog.testing.capture_logs() as logs:
        for index in range(3):
            hub.emit(BatchDone(index, 16, 4, 40, 0.1))
        hub.close()
    dropped = [entry for entry in logs if "dropped" in entry["event"]]
    assert len(dropped) == 2, "once when it first happens, once in total at the end"
    assert dropped[0]["event"].startswith(f"monitors published more than {PUBLISH_CAP} events")
    assert dropped[0]["monitors"] == dropped[1]["monitors"]
    assert set(dropped[1]["monitors"]) <= {"publisher", "echo-2"}  # Echo keeps its name
    assert dropped[1]["dropped"] == sum(hub.dropped.values()) >= 3


def test_a_slow_monitor_is_named_once_it_has_held_the_run_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A monitor that slept 2 s an event turned a 0.4 s run into 205 s, without a word.
    monkeypatch.setattr(MonitorHub, "SLOW_S", 0.1)
    slow, quick = Sluggish(ComponentConfig()), Listener(ComponentConfig())
    hub = MonitorHub([slow, quick])
    with structlog.testing.capture_logs() as logs:
        for index in range(8):
            hub.emit(BatchDone(index, 16, 4, 40, 0.1))
        hub.close()
    warned = [entry for entry in logs if entry["event"].startswith("monitor is slowing the run")]
    assert [entry["monitor"] for entry in warned] == ["sluggish"]  # once, and not the quick one
    assert warned[0]["seconds"] >= 0.1
    assert len(quick.seen) == len(slow.seen) == 8  # it is still called: slow is not hung
    assert hub.spent["sluggish"] > 8 * 0.03 > hub.spent["listener"]
