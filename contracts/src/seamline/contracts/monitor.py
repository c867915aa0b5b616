"""The monitor seam: observers of a run that can never break it."""

from __future__ import annotations

import abc
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
