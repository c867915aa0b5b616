"""The choke points the orchestrator puts around components: one per kind of crossing.

* :class:`Seam` is the one way a host-side call crosses a seam (loader read,
  ``prepare``, ``load``, ``apply``, sink start/write/commit/close, the sink's staging
  and publication, the executor's ``execute`` and ``close``): span, timing,
  ``SeamCall`` event and error recording in one place.
* Inside compiled code the attention's choke point is
  :class:`seamline.core.attention.checked.CheckedAttention` (contract checks at
  trace time and a ``jax.named_scope`` named by :func:`scope_name`).
* :class:`~seamline.core.monitor_hub.MonitorHub` (its own module) fans events out
  to monitors and makes sure none of them can break or stall the run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace

from seamline.contracts import Component, SeamCall, SeamStarted
from seamline.contracts.logs import get_logger
from seamline.core.exhaustion import ran_out_in_panic, without_rust_sources
from seamline.core.monitor_hub import MonitorHub
from seamline.core.registry import ComponentInfo
from seamline.core.telemetry import component_attributes, owned_span, record_failure, tracer

log = get_logger("seamline.core")

FAILED_AT = "seamline_failed_at"
BUILD = "build"
"""The operation a component's constructor is named by in a failure (``loader 'x' (build,
from ...)``): it has no seam, the component not being there yet."""
"""Attribute a :class:`Seam` sets on an exception leaving a component's call: which
component, operation and distribution (``model 'toy' (prepare, from seamline-components
0.1.0)``), so a shard that fails can say where, and whose code it was. The innermost
seam wins."""


def failed_at(error: BaseException) -> str | None:
    """The component call ``error`` left, as :class:`Seam` recorded it, or None."""
    where = getattr(error, FAILED_AT, None)
    return where if isinstance(where, str) else None


def operation_of(where: str) -> str:
    """The operation named in ``where``, a call as :func:`mark_failure` wrote it (``model
    'x' (load, from ...)``: ``load``); "" for anything else (``the pipeline``). A failure
    that crossed from a worker process carries only that text."""
    if not where.endswith(")"):
        return ""
    _, opened, inside = where.rpartition(" (")
    operation = inside[:-1].partition(", from ")[0]
    return operation if opened and operation.isidentifier() else ""


def mark_failure(
    error: BaseException,
    kind: str,
    name: str,
    operation: str,
    info: ComponentInfo | None = None,
) -> None:
    """Record on ``error`` that it left ``operation`` of this component (unless already marked)."""
    if failed_at(error) is None:
        origin = f", from {info.distribution} {info.version}" if info is not None else ""
        with contextlib.suppress(AttributeError, TypeError):  # e.g. exceptions with __slots__
            setattr(error, FAILED_AT, f"{kind} {name!r} ({operation}{origin})")


def scope_name(kind: str, name: str) -> str:
    """The ``jax.named_scope`` of a component inside compiled code."""
    return f"seamline/{kind}/{name}"


@dataclass(frozen=True, slots=True)
class CallStart:
    """When a call began, kept for a call whose span is entered later.

    A batch is launched on the device and its outputs are waited for one batch later
    (``run.in_flight``): its ``apply`` span and ``SeamCall`` time run from the launch,
    not from the wait, so they say how long the call really took.
    """

    perf: float
    """``time.perf_counter()`` at the start: the ``SeamCall`` seconds."""
    wall_ns: int
    """``time.time_ns()`` at the start: the span's start time."""

    @staticmethod
    def now() -> CallStart:
        return CallStart(time.perf_counter(), time.time_ns())


class Seam:
    """One component behind the choke point: every call across its seam goes through :meth:`call`.

    Like pluggy's hook calls, one place does what every seam call needs, so no call
    site can forget a piece: it opens the span ``seamline.<kind>.<operation>`` with
    the attribute scheme (the component's ``describe()`` and the distribution the
    registry found), times the call, emits the :class:`SeamCall` event to the
    monitors when it ends (also when it fails), and records an escaping exception
    on the span with an ERROR status. When a monitor asks for them
    (``wants_seam_starts``), a :class:`SeamStarted` goes out before the call begins.
    """

    def __init__(
        self,
        component: Component[Any],
        info: ComponentInfo | None,
        monitors: MonitorHub,
        hidden: Mapping[str, str] | None = None,
    ) -> None:
        """``hidden``: values the component's span attributes may not carry, and what they
        show instead (:func:`~seamline.core.telemetry.component_attributes`): the pipeline's
        settings filled from variables that may not leave the machine."""
        self.component = component
        self.kind = component.kind
        self.name = component.name
        self.info = info
        self._monitors = monitors
        self.attributes: dict[str, Any] = component_attributes(
            component.describe(),
            distribution=info.distribution if info is not None else None,
            version=info.version if info is not None else None,
            hidden=hidden,
        )
        """The component's span attributes, built once (not once per call)."""

    def begin(self, operation: str) -> CallStart:
        """A call of ``operation`` starts now: ``SeamStarted`` goes out, if a monitor asks.

        For a call whose span is entered later (:meth:`call` with ``begun``).
        """
        if self._monitors.wants_seam_starts:  # before the clock starts: not the call's time
            self._monitors.emit(SeamStarted(self.kind, self.name, operation))
        return CallStart.now()

    @contextlib.contextmanager
    def call(
        self,
        operation: str,
        attributes: Mapping[str, Any] | None = None,
        begun: CallStart | None = None,
    ) -> Iterator[trace.Span]:
        """Around one call of ``operation``; yields the span, for attributes known only after.

        ``begun``: the call started earlier (:meth:`begin`), and its span and time count
        from then; by default it starts now.
        """
        if begun is None:
            begun = self.begin(operation)
        started = begun.perf
        merged = self.attributes if not attributes else {**self.attributes, **attributes}
        try:
            with owned_span(
                f"seamline.{self.kind}.{operation}", attributes=merged, start_time=begun.wall_ns
            ) as span:
                try:
                    yield span
                except GeneratorExit:  # a caller's generator closed: not the call's failure
                    raise
                except BaseException as err:  # KeyboardInterrupt too: the span says ERROR
                    mark_failure(err, self.kind, self.name, operation, self.info)
                    record_failure(span, err)
                    where = failed_at(err)  # the innermost seam's call, and so its step
                    step = operation_of(where or "")
                    stop = ran_out_in_panic(err, f"in {where}", one_line(err), step)
                    if stop is None:
                        raise
                    # A Rust library's panic for want of open files (LanceDB's, at connect):
                    # a BaseException no `except Exception` takes, so it left a traceback.
                    mark_failure(stop, self.kind, self.name, operation, self.info)
                    raise stop from err
        finally:
            self._monitors.emit(
                SeamCall(self.kind, self.name, operation, time.perf_counter() - started)
            )

    @contextlib.contextmanager
    def blamed(self, operation: str) -> Iterator[None]:
        """Around the host's checks of what ``operation`` gave (its outputs, its examples).

        They run after the call has ended, outside its :meth:`call`; a failure there is
        the component's all the same, and is marked as the call's own would be (``model
        'x' (apply, from acme-x 0.1.0)``), so the run's one line names the component and
        its distribution rather than "the pipeline". No span or ``SeamCall`` of its own:
        the call's were made. A traceback (an ``Embedder``'s caller) shows it as a note.
        """
        try:
            yield
        except BaseException as err:
            mark_failure(err, self.kind, self.name, operation, self.info)
            where = failed_at(err)
            if where is not None and self.info is not None:  # for a traceback's reader
                err.add_note(f"(in {where})")
            raise

    def record(
        self,
        operation: str,
        start_ns: int,
        spent_ns: int,
        attributes: Mapping[str, Any],
        error: BaseException | None = None,
    ) -> None:
        """A call (or calls) already made and timed: a span of ``spent_ns`` from ``start_ns``.

        For seams called too often for a span each (a loader's per-document reads are
        reported per chunk): the caller sums the time, and the span, the event and
        the error are made here as :meth:`call` would make them.
        """
        span = tracer().start_span(
            f"seamline.{self.kind}.{operation}",
            attributes={**self.attributes, **attributes},
            start_time=start_ns,
        )
        if error is not None:
            mark_failure(error, self.kind, self.name, operation, self.info)
            record_failure(span, error)
        span.end(end_time=start_ns + spent_ns)
        self._monitors.emit(SeamCall(self.kind, self.name, operation, spent_ns / 1e9))


def clipped(text: str, limit: int = 80) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis ends a cut one): for a
    repr, whose object may hold a long path or name and must print short in a notebook."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def one_line(err: BaseException) -> str:
    """``err`` as the reason of a failed run's one line: its type and the first line of its
    message, at most 500 characters, less the places in a Rust library's source it names. A
    library's message may be a page (LanceDB's embeds a Python traceback, 30 lines with the
    paths of its build), and LanceDB's one line ended with two of its build's ``.rs`` files;
    the whole error stays on the seam's span, as its exception event."""
    lines = without_rust_sources(str(err)).strip().splitlines()
    text = lines[0] if lines else ""
    if len(lines) > 1 or len(text) > 500:
        text = text[:499].rstrip() + "…"
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
