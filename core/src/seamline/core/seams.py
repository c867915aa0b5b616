"""What the orchestrator puts around each component: checks, names and isolation.

* :class:`CheckedAttention` is what a model receives as its attention: it checks
  the contract's shapes at trace time (free under ``jit``) and wraps the call in
  ``jax.named_scope("seamline/attention/<name>")`` so XLA profiles name it.
* :class:`MonitorHub` fans events out to monitors and makes sure none of them
  can break the run: a monitor's exception is logged and counted, nothing more.
  Events come from two threads (``SeamCall`` of the loader and ``model.prepare``
  from the producer thread), so the hub delivers one event at a time: a monitor's
  ``observe`` is never called concurrently with itself. A monitor may publish
  events of its own (``Monitor.bind``, monitor contract 1.2): they are queued and
  delivered to the other monitors once the current event is through, and become
  events of the current span.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

import jax
import structlog

from seamline.contracts import Attention, Event, Monitor, SegmentIds
from seamline.contracts.seams import check_attention_inputs, check_attention_output
from seamline.core.telemetry import span_event

log = structlog.get_logger("seamline.core")


def scope_name(kind: str, name: str) -> str:
    """The ``jax.named_scope`` of a component inside compiled code."""
    return f"seamline/{kind}/{name}"


class CheckedAttention:
    """An attention behind the seam's checks and named scope; this is what ``apply`` gets."""

    def __init__(self, attention: Attention[Any]) -> None:
        self.attention = attention
        self.name = attention.name
        self._scope = scope_name("attention", attention.name)

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        check_attention_inputs(self.name, q, k, v)
        with jax.named_scope(self._scope):
            out = self.attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)
        check_attention_output(self.name, q, out)
        return out


class MonitorHub:
    """Delivers each event to every monitor; a failing monitor never fails the run."""

    #: Events monitors may publish while one event is delivered (a runaway loop stops here).
    MAX_PUBLISHED = 100

    def __init__(self, monitors: Sequence[Monitor[Any]]) -> None:
        self.monitors = list(monitors)
        self.failures: dict[str, int] = {}
        self._lock = threading.Lock()
        self._published: deque[tuple[Monitor[Any], Event]] = deque()
        for monitor in self.monitors:
            try:
                monitor.bind(functools.partial(self._publish, monitor))
            except Exception as err:
                self._report(monitor, "bind()", err)

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
            self._published.clear()

    def _publish(self, sender: Monitor[Any], event: Event) -> None:
        """Queue an event a monitor published; :meth:`emit` delivers it (never re-entrantly)."""
        self._published.append((sender, event))

    def _deliver(self, event: Event, sender: Monitor[Any] | None) -> None:
        for monitor in self.monitors:
            if monitor is sender:
                continue
            try:
                monitor.observe(event)
            except Exception as err:
                self._report(monitor, f"observe({type(event).__name__})", err)

    def close(self) -> None:
        for monitor in self.monitors:
            try:
                monitor.close()
            except Exception as err:
                self._report(monitor, "close()", err)

    def _report(self, monitor: Monitor[Any], call: str, err: Exception) -> None:
        self.failures[monitor.name] = self.failures.get(monitor.name, 0) + 1
        log.warning(
            "monitor failed; the run goes on",
            monitor=monitor.name,
            call=call,
            error=f"{type(err).__name__}: {err}",
            failures=self.failures[monitor.name],
        )
