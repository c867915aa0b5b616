"""The monitor seam: observers of a run that can never break it."""

from __future__ import annotations

import abc
import contextvars
import threading
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.events import Event
from seamline.contracts.versions import Kind

MonitorConfigT = TypeVar("MonitorConfigT", bound=ComponentConfig)

EMITTING_THREAD: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "seamline_emitting_thread", default=None
)
"""Set by a host that calls ``observe`` on a thread of its own: the emitter's thread."""


def emitting_thread() -> int:
    """The ident of the thread that emitted the event being observed (monitor contract 1.3).

    A host may deliver events on a thread of its own (seamline's does, so that a hung
    monitor cannot hang the run), so ``threading.get_ident()`` inside ``observe``
    names that thread, not the one that made the seam call. A monitor that tells the
    run's threads apart asks here; outside a host's delivery it is the current thread.
    """
    ident = EMITTING_THREAD.get()
    return threading.get_ident() if ident is None else ident


class Monitor(Component[MonitorConfigT], abc.ABC):
    """Observes events. The orchestrator catches and reports anything it raises."""

    kind: ClassVar[Kind] = "monitor"

    @abc.abstractmethod
    def observe(self, event: Event) -> None:
        """Handle one event; ignore event types you do not know."""

    @property
    def observes(self) -> tuple[type[Any], ...] | None:
        """The event types the host delivers to this monitor (since monitor contract 1.6);
        None, the default, is every type.

        The host hands each event to its monitor thread and waits for it, so an event
        costs the thread that emits it a hand-off (about 50 µs on a 2-CPU machine) unless
        no monitor observes its type. A monitor that reads few types names them here: the
        ``log`` monitor reads no :class:`~seamline.contracts.SeamCall`, of which a run
        emits one per seam call. It must still ignore types it does not know (another
        host may deliver everything). :class:`~seamline.contracts.SeamStarted` goes by
        :attr:`wants_seam_starts` alone.
        """
        return None

    @property
    def wants_seam_starts(self) -> bool:
        """Whether to receive :class:`~seamline.contracts.SeamStarted` events (since 1.4).

        False by default: a start event is a synchronous hand-off for the thread about
        to make the call, paid only when some monitor asks for it.
        """
        return False

    def bind(self, publish: Callable[[Event], None]) -> None:
        """Receive the host's way to publish events of your own (since monitor contract 1.2).

        A monitor that finds something (a leak, say) calls ``publish(Alert(...))``;
        the host delivers it to every *other* monitor, after the event being observed,
        and records it on the current span. The default ignores it.
        """


@runtime_checkable
class MonitorLike(Protocol):
    """What a host asks of a monitor: the four members every run calls, as a type.

    An application may hand ``Pipeline.run`` or an ``Embedder`` an object of its own
    class with these members (the documented duck-typed monitor); the host calls no
    other (``observes`` and ``wants_seam_starts`` are read with defaults). Every
    :class:`Monitor` is one. Without this type, ``Sequence[Monitor[Any]]`` turned such
    an object, which runs, into a ``mypy --strict`` error in the application. Public
    signatures take ``Monitor[Any] | MonitorLike``: pyright does not let a ``Monitor``'s
    ``ClassVar`` name stand for this read-only ``name`` (mypy does).
    """

    @property
    def name(self) -> str:
        """The monitor's name, in warnings about it (a class attribute will do)."""
        ...

    def bind(self, publish: Callable[[Event], None]) -> None:
        """Receive the host's way to publish events of the monitor's own."""
        ...

    def observe(self, event: Event) -> None:
        """Handle one event; ignore event types you do not know."""
        ...

    def close(self) -> None:
        """The run (or the embedder) is over: release what the monitor holds."""
        ...
