"""The monitor seam: observers of a run that can never break it."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import ClassVar, TypeVar

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.events import Event
from seamline.contracts.versions import Kind

MonitorConfigT = TypeVar("MonitorConfigT", bound=ComponentConfig)


class Monitor(Component[MonitorConfigT], abc.ABC):
    """Observes events. The orchestrator catches and reports anything it raises."""

    kind: ClassVar[Kind] = "monitor"

    @abc.abstractmethod
    def observe(self, event: Event) -> None:
        """Handle one event; ignore event types you do not know."""

    def bind(self, publish: Callable[[Event], None]) -> None:
        """Receive the host's way to publish events of your own (since monitor contract 1.2).

        A monitor that finds something (a leak, say) calls ``publish(Alert(...))``;
        the host delivers it to every *other* monitor, after the event being observed,
        and records it on the current span. The default ignores it.
        """
