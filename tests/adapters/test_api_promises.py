"""What python.md promises of ``seamline.api`` holds at run time, without a model."""

from __future__ import annotations

from collections.abc import Callable

from seamline.contracts import Event, MonitorLike
from seamline.core.progress_recorder import ProgressRecorder


class CountingMonitor:
    """python.md: "any objects with a name (a str), bind(publish), observe(event) and close()"."""

    name = "counting"

    def bind(self, publish: Callable[[Event], None]) -> None:
        pass

    def observe(self, event: Event) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_monitor_of_the_applications_own_class_is_a_monitor_like() -> None:
    # The type Pipeline.run and Embedder take: a duck-typed monitor and a Monitor are both.
    assert isinstance(CountingMonitor(), MonitorLike)
    assert isinstance(ProgressRecorder(), MonitorLike)
    assert not isinstance(object(), MonitorLike)
