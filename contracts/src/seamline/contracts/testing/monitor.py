"""``MonitorContract``: a monitor sees every event a run emits and never breaks the run.

The host does catch what a monitor raises, but a monitor that raises loses the
rest of what it was meant to record, so the suite treats raising as a defect. If
the author provides ``monitor_output`` (what the monitor has written so far, as
text), the suite also checks that everything reached it by the time ``close()``
returned.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from seamline.contracts.component import Component
from seamline.contracts.events import (
    EVENT_TYPES,
    Alert,
    AttentionChosen,
    BatchDone,
    Compiled,
    DocumentFailed,
    Fallback,
    RunFinished,
    RunStarted,
    SeamCall,
    SeamStarted,
    ShadowCompared,
    Verified,
)
from seamline.contracts.monitor import Monitor
from seamline.contracts.testing._common import ComponentContract
from seamline.contracts.versions import Kind

RUN_ID = "conformance-run-7f3a"


def sample_events(run_id: str = RUN_ID) -> list[Any]:
    """One event of every type, in the order a run emits them."""
    signature = "B8xTq128xTk128xN12xK12xH32:float32:segments,cpu"
    return [
        RunStarted(run_id, "conformance", {"model": "m", "attention": "auto"}),
        AttentionChosen(signature, "impl", "highest priority", {"other": ("refused",)}),
        Compiled(128, 8, 1.25),
        Verified(signature, "impl", "reference", 1e-7, 2e-3, True),
        BatchDone(1, 128, 8, 900, 0.05, 8),
        SeamStarted("sink", "s", "write"),
        SeamCall("sink", "s", "write", 0.001),
        DocumentFailed("doc-9", "not UTF-8", "load"),
        Fallback("attention", "impl", "reference", "failed to compile"),
        ShadowCompared(signature, "impl", "reference", 2, 3e-7, 2e-3, True),
        Alert("conformance", "something to look at", {"value": 1.5}),
        RunFinished(run_id, 8, 1, 8, 900, 1, 1, 2.5, True),
    ]


def odd_events(run_id: str = RUN_ID) -> list[Any]:
    """Legal but awkward values: NaN and infinite times, empty texts, a failed run."""
    return [
        RunStarted(run_id, "", {}),
        AttentionChosen("", "ünïcödé", "", {}),
        Compiled(0, 0, math.nan),
        Verified("", "a", "b", math.inf, 0.0, False),
        BatchDone(0, 0, 0, 0, math.nan, 0),
        ShadowCompared("", "a", "b", 0, math.nan, 0.0, False),
        Alert("", "", {"nested": {"list": [1, None]}}),
        RunFinished(run_id, 0, 0, 0, 0, 0, 0, math.inf, False),
    ]


@dataclass(frozen=True)
class FutureEvent:
    """An event type from a later contract version: monitors must ignore what they do not know."""

    payload: str = "from the future"


class MonitorContract(ComponentContract):
    """Subclass it and provide the ``monitor`` fixture (and optionally ``monitor_output``)."""

    kind: ClassVar[Kind] = "monitor"

    @pytest.fixture
    def monitor(self) -> Monitor[Any]:
        raise NotImplementedError("provide a 'monitor' fixture returning your Monitor")

    @pytest.fixture
    def monitor_output(self) -> Callable[[], str] | None:
        """Override to return what the monitor has written so far; enables the flush check."""
        return None

    @pytest.fixture
    def component(self, monitor: Monitor[Any]) -> Component[Any]:
        return monitor

    @staticmethod
    def observe_all(monitor: Monitor[Any], events: list[Any]) -> None:
        for event in events:
            try:
                monitor.observe(event)
            except Exception as err:
                pytest.fail(
                    f"monitor {monitor.name!r} raised {type(err).__name__}: {err} on "
                    f"{type(event).__name__}; a monitor must never raise into the run"
                )

    def test_sample_covers_every_event_type(self) -> None:
        covered = {type(event) for event in sample_events()}
        missing = [t.__name__ for t in EVENT_TYPES if t not in covered]
        assert not missing, f"the suite's sample lacks {missing} (a bug in the suite)"

    def test_observes_names_event_types(self, monitor: Monitor[Any]) -> None:
        observed = monitor.observes
        if observed is None:
            return  # every type (the default)
        assert isinstance(observed, tuple), (
            f"monitor {monitor.name!r}: observes must be None or a tuple of event types "
            f"(monitor contract 1.6), not {type(observed).__name__}; a host hands such a "
            "monitor every event"
        )
        unknown = [kind for kind in observed if kind not in EVENT_TYPES]
        assert not unknown, (
            f"monitor {monitor.name!r}: observes names {unknown!r}, which are not event "
            f"types of this contract ({', '.join(t.__name__ for t in EVENT_TYPES)})"
        )

    def test_accepts_every_event_type(self, monitor: Monitor[Any]) -> None:
        self.observe_all(monitor, sample_events())
        monitor.close()

    def test_accepts_odd_values(self, monitor: Monitor[Any]) -> None:
        self.observe_all(monitor, odd_events())
        monitor.close()

    def test_ignores_unknown_event_types(self, monitor: Monitor[Any]) -> None:
        self.observe_all(monitor, [FutureEvent()])
        monitor.close()

    def test_flushes_on_close(
        self, monitor: Monitor[Any], monitor_output: Callable[[], str] | None
    ) -> None:
        self.observe_all(monitor, sample_events())
        try:
            monitor.close()
            monitor.close()
        except Exception as err:
            pytest.fail(
                f"monitor {monitor.name!r}: close() raised {type(err).__name__}: {err} "
                "(it is called once at the end of a run; a second call must be harmless)"
            )
        if monitor_output is None:
            pytest.skip("no 'monitor_output' fixture: what the monitor wrote cannot be read back")
        written = monitor_output()
        assert RUN_ID in written, (
            f"monitor {monitor.name!r}: after close() its output does not mention the run "
            f"{RUN_ID!r}; buffered records must be flushed by close()"
        )
