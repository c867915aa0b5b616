"""MonitorHub: every event to every monitor, and no monitor able to break or stall the run.

A monitor is observability, never a dependency of the result. So:

* its exceptions are caught; the first one is logged with the monitor's name, the
  rest are counted and the count is logged once when the run ends (a monitor that
  fails on every event used to log a warning per event: 133 lines for 100 documents);
* it is called on the hub's courier thread, and the hub waits for it at most
  ``timeout_s`` per event: one that does not return in time (a hung exporter, a
  deadlock) is reported once and called no more, and a fresh courier serves the
  others, so a hang costs the run one timeout, not the rest of the run;
* events come from two threads (the producer's ``SeamCall`` events and the main
  loop's), so the hub delivers one event at a time: a monitor's ``observe`` is never
  called concurrently with itself;
* a :class:`~seamline.contracts.SeamStarted` goes only to the monitors that ask for
  it (``wants_seam_starts``); with none asking, seams do not even make one;
* any other event goes only to the monitors that observe its type (``observes``,
  monitor contract 1.6; every type for a monitor that does not say), and an event no
  monitor observes is not handed off at all: a hand-off is most of what an event costs;
* the run waits for the monitors to take each event, so a slow one slows the run: the
  time each spends is added up, and once a monitor has held the run ``SLOW_S`` seconds
  in all, a warning names it (one that slept 2 s an event turned a 0.4 s run into 205 s,
  without a word);
* a monitor may publish events of its own (``Monitor.bind``, monitor contract 1.2):
  they are queued and delivered to the other monitors once the current event is
  through (at most ``MAX_PUBLISHED`` per event, so two monitors answering each other
  cannot loop; what is dropped past it is said, once when it first happens and in
  total when the hub closes, naming the monitors), and become events of the current
  span.
"""

from __future__ import annotations

import contextvars
import functools
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from seamline.contracts import Event, MonitorLike, SeamStarted
from seamline.contracts.logs import get_logger
from seamline.contracts.monitor import EMITTING_THREAD
from seamline.core.telemetry import span_event

log = get_logger("seamline.core")

Call = Callable[[MonitorLike], None]
_Job = tuple[Call, str, list[MonitorLike], threading.Event, contextvars.Context] | None
"""A delivery for the courier to make; None ends its thread."""


class _Courier:
    """A thread that makes monitor calls; the hub waits for each delivery at most a deadline.

    A courier stuck in a monitor cannot be stopped (Python threads cannot be killed);
    the hub abandons it (it is a daemon thread, so it never holds up the process's
    exit) and starts another. An abandoned courier ends when the stuck call returns;
    the hub's courier ends when the hub closes (:meth:`stop`). A courier left waiting
    for work would keep its thread, and through the hub every monitor of its run and
    the last event it delivered, for the life of the process: one more of each for
    every run a notebook or a service makes.
    """

    def __init__(
        self,
        on_error: Callable[[MonitorLike, str, Exception], None],
        on_time: Callable[[MonitorLike, float], None],
    ) -> None:
        self._on_error = on_error
        self._on_time = on_time
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.progress = 0
        self.abandoned = False
        """Set when the hub gave up waiting: a call that returns late ends the courier's
        work there, so the monitors after the stuck one never get the event twice."""
        self.thread = threading.Thread(target=self._serve, name="seamline-monitors", daemon=True)
        self.thread.start()

    def deliver(self, call: Call, what: str, monitors: list[MonitorLike], timeout: float) -> int:
        """Make ``call`` on each monitor in turn; how many returned before the deadline.

        The calls run in a copy of the caller's context, so a monitor sees the current
        span and the run's bound log fields as if it were called directly, and
        ``emitting_thread()`` names the caller's thread.
        """
        done = threading.Event()
        self.progress = 0
        context = contextvars.copy_context()
        context.run(EMITTING_THREAD.set, threading.get_ident())
        self._jobs.put((call, what, monitors, done, context))
        return len(monitors) if done.wait(timeout) else self.progress

    def stop(self, timeout: float) -> None:
        """End the thread once the calls queued before are made; wait at most ``timeout``."""
        self._jobs.put(None)
        self.thread.join(timeout)

    def _serve(self) -> None:
        while not self.abandoned:
            job = self._jobs.get()
            if job is None:
                return
            self._make(*job)
            del job  # the event and its context, not kept while the courier waits

    def _make(
        self,
        call: Call,
        what: str,
        monitors: list[MonitorLike],
        done: threading.Event,
        context: contextvars.Context,
    ) -> None:
        for index, monitor in enumerate(monitors):
            if self.abandoned:
                return
            self.progress = index
            started = time.perf_counter()
            try:
                context.run(call, monitor)
            except Exception as err:
                self._on_error(monitor, what, err)
            self._on_time(monitor, time.perf_counter() - started)
        self.progress = len(monitors)
        done.set()


class MonitorHub:
    """Delivers each event to every monitor; a failing or hanging monitor never fails the run."""

    #: Events monitors may publish while one event is delivered (a runaway loop stops here).
    MAX_PUBLISHED = 100
    #: Seconds the hub waits for the monitors to take one event before it gives up on one.
    TIMEOUT_S = 5.0
    #: Seconds a monitor may hold the run in all before a warning names it.
    SLOW_S = 10.0

    def __init__(self, monitors: Sequence[MonitorLike], *, timeout_s: float | None = None) -> None:
        self.monitors = list(monitors)
        self.timeout_s = self.TIMEOUT_S if timeout_s is None else timeout_s
        self.failures: dict[str, int] = {}
        self.hung: dict[str, str] = {}
        self.spent: dict[str, float] = {}
        """Seconds each monitor has spent in its calls so far (the run waited for them)."""
        self.dropped: dict[str, int] = {}
        """Events each monitor published that were dropped past :attr:`MAX_PUBLISHED`."""
        self._lock = threading.Lock()
        self._published: deque[tuple[MonitorLike, Event]] = deque()
        self._courier: _Courier | None = None
        self._start_watchers = [m for m in self.monitors if _wants_seam_starts(m)]
        self._observed = [(m, _observes(m)) for m in self.monitors]
        self._recipients: dict[type[Any], list[MonitorLike]] = {}
        with self._lock:
            self._call_all(lambda m: m.bind(functools.partial(self._publish, m)), "bind()")

    @property
    def wants_seam_starts(self) -> bool:
        """Whether any monitor asks for :class:`SeamStarted` events (seams skip them if not)."""
        return bool(self._start_watchers)

    def emit(self, event: Event) -> None:
        if not self.monitors:
            return
        with self._lock:
            self._deliver(event, sender=None)
            delivered = 0
            while self._published and delivered < self.MAX_PUBLISHED:
                sender, published = self._published.popleft()
                span_event(published)
                self._deliver(published, sender)
                delivered += 1
            if self._published:
                self._drop_published()

    def close(self) -> None:
        """Close every monitor that still answers, end the courier's thread; then say how
        often each monitor failed."""
        with self._lock:
            self._call_all(lambda m: m.close(), "close()")
            courier, self._courier = self._courier, None
        if courier is not None:
            courier.stop(self.timeout_s)
        for name, count in self.failures.items():
            if count > 1:
                log.warning("monitor failed repeatedly in this run", monitor=name, failures=count)
        if self.dropped:
            log.warning(
                "monitors' published events were dropped in this run (past the cap per event)",
                monitors=sorted(self.dropped),
                dropped=sum(self.dropped.values()),
            )

    def _drop_published(self) -> None:
        """Drop what is still queued past :attr:`MAX_PUBLISHED`, counted by its publisher;
        the first time, one warning names them (two monitors publishing an Alert for every
        event published 13,850 and lost most without a word)."""
        first = not self.dropped
        for sender, _ in self._published:
            self.dropped[sender.name] = self.dropped.get(sender.name, 0) + 1
        self._published.clear()
        if first:
            log.warning(
                f"monitors published more than {self.MAX_PUBLISHED} events while one event "
                "was delivered (do they answer each other's events?); the rest are dropped, "
                "and the run's total is said when it ends",
                monitors=sorted(self.dropped),
            )

    def _publish(self, sender: MonitorLike, event: Event) -> None:
        """Queue an event a monitor published; :meth:`emit` delivers it (never re-entrantly)."""
        self._published.append((sender, event))

    def _deliver(self, event: Event, sender: MonitorLike | None) -> None:
        to = self._recipients_of(type(event))
        what = f"observe({type(event).__name__})"
        self._call_all(lambda m: m.observe(event), what, skip=sender, monitors=to)

    def _recipients_of(self, event_type: type[Any]) -> list[MonitorLike]:
        """The monitors an event of ``event_type`` goes to, worked out once per type."""
        found = self._recipients.get(event_type)
        if found is None:
            if issubclass(event_type, SeamStarted):
                found = self._start_watchers
            else:
                found = [
                    monitor
                    for monitor, observed in self._observed
                    if observed is None or issubclass(event_type, observed)
                ]
            self._recipients[event_type] = found
        return found

    def _call_all(
        self,
        call: Call,
        what: str,
        *,
        skip: MonitorLike | None = None,
        monitors: Sequence[MonitorLike] | None = None,
    ) -> None:
        """``call`` on every live monitor (of ``monitors``) but ``skip``, each in the deadline."""
        chosen = self.monitors if monitors is None else monitors
        pending = [m for m in chosen if m is not skip and m.name not in self.hung]
        started = time.monotonic()
        while pending:
            if self._courier is None:
                self._courier = _Courier(self._report, self._timed)
            remaining = max(0.0, self.timeout_s - (time.monotonic() - started))
            finished = self._courier.deliver(call, what, pending, remaining)
            if finished >= len(pending):
                return
            self._give_up_on(pending[finished], what)
            self._courier.abandoned = True  # stuck in that monitor: the next call gets a fresh one
            self._courier = None
            pending = pending[finished + 1 :]
            started = time.monotonic()

    def _give_up_on(self, monitor: MonitorLike, what: str) -> None:
        self.hung[monitor.name] = what
        log.warning(
            "monitor did not return in time and is called no more; the run goes on",
            monitor=monitor.name,
            call=what,
            timeout_s=self.timeout_s,
        )

    def _timed(self, monitor: MonitorLike, seconds: float) -> None:
        """Add a call's time to the monitor's; warn once when it passes ``SLOW_S``."""
        before = self.spent.get(monitor.name, 0.0)
        self.spent[monitor.name] = spent = before + seconds
        if before < self.SLOW_S <= spent:
            log.warning(
                "monitor is slowing the run: the run waits for each event it observes; make "
                "its work cheap (queue it for a thread of its own) or leave it out",
                monitor=monitor.name,
                seconds=round(spent, 1),
            )

    def _report(self, monitor: MonitorLike, call: str, err: Exception) -> None:
        count = self.failures[monitor.name] = self.failures.get(monitor.name, 0) + 1
        if count == 1:
            log.warning(
                "monitor failed; the run goes on (its further failures are counted and "
                "reported when the run ends)",
                monitor=monitor.name,
                call=call,
                error=f"{type(err).__name__}: {err}",
            )


def _answer(monitor: MonitorLike, attribute: str, fallback: Any, question: str, then: str) -> Any:
    """The monitor's ``attribute`` (``fallback`` for a monitor older than it); a property
    that raises gets ``fallback`` too, and is said once (``question``, ``then``): a
    monitor's property must not break the run."""
    try:
        return getattr(monitor, attribute, fallback)
    except Exception as err:
        log.warning(
            f"monitor failed to say {question}; {then}",
            monitor=getattr(monitor, "name", type(monitor).__name__),
            error=f"{type(err).__name__}: {err}",
        )
        return fallback


def _wants_seam_starts(monitor: MonitorLike) -> bool:
    """The monitor's ``wants_seam_starts``; False for one that cannot say (or is older than 1.4)."""
    wants = _answer(
        monitor, "wants_seam_starts", False, "whether it wants seam starts", "it gets none"
    )
    return wants is True


def _observes(monitor: MonitorLike) -> tuple[type[Any], ...] | None:
    """The monitor's ``observes`` as a tuple of classes; None (every event) for a monitor
    older than 1.6, or one whose answer cannot be used (said once, when the run starts).

    Failing open keeps such a monitor working as it did before 1.6: it is handed
    everything and ignores what it does not read.
    """
    observed = _answer(monitor, "observes", None, "which events it observes", "it gets every event")
    if observed is None:
        return None
    if isinstance(observed, tuple | list | set | frozenset) and all(
        isinstance(kind, type) for kind in observed
    ):
        return tuple(observed)
    log.warning(
        "monitor's observes is not a tuple of event types; it gets every event",
        monitor=getattr(monitor, "name", type(monitor).__name__),
        observes=repr(observed)[:200],
    )
    return None
