"""The ``metrics`` monitor's memory gauges: registered once per meter provider, read for
whichever runs are live.

A meter keeps an observable instrument, and its callbacks, for its whole life: an
instrument cannot be unregistered. When each ``metrics`` monitor (one per run)
registered the gauges itself, every run's monitor stayed alive through its callbacks,
and the OpenTelemetry SDK, which keeps the first instrument of a name, ignored the
later runs' registrations: in a process that ran pipelines one after another (a
notebook, a service), the gauges reported during the first run only.

So the two gauges are registered once for each meter provider (once for the global
one, whichever provider the application installs behind it), and call back into a
:class:`MemoryGauges` that holds no monitor: monitors :meth:`~MemoryGauges.attach`
when their run starts and :meth:`~MemoryGauges.detach` at ``close``. A collection gets
a fresh reading while any run is attached; once the last one has closed, the reading
taken at that close, once (a reader collects every ``OTEL_METRIC_EXPORT_INTERVAL``, 60 s
by default, and once more as the process exits, after the monitors are closed: a run
shorter than the interval still exports its gauges), then nothing.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation


def read_rss() -> list[Observation]:
    """The process's resident set size (psutil), or nothing where it cannot be read."""
    try:
        import psutil  # type: ignore[import-untyped]

        return [Observation(int(psutil.Process().memory_info().rss))]
    except Exception:
        return []


def read_device() -> list[Observation]:
    """The first device's bytes in use, where the backend reports memory statistics."""
    try:
        import jax

        device = jax.devices()[0]
        stats = device.memory_stats()
    except Exception:
        return []
    if not stats or "bytes_in_use" not in stats:
        return []
    return [Observation(int(stats["bytes_in_use"]), {"seamline.device": str(device.device_kind)})]


READERS: dict[str, Callable[[], list[Observation]]] = {"rss": read_rss, "device": read_device}


class MemoryGauges:
    """``seamline.process.rss`` and ``seamline.device.memory.in_use`` on one meter."""

    def __init__(self, meter: Meter) -> None:
        self._lock = threading.Lock()
        self._live = 0
        self._final: dict[str, list[Observation]] = {}
        meter.create_observable_gauge(
            "seamline.process.rss",
            callbacks=[self._observe_rss],
            unit="By",
            description="Resident set size of the process.",
        )
        meter.create_observable_gauge(
            "seamline.device.memory.in_use",
            callbacks=[self._observe_device],
            unit="By",
            description="Bytes in use on the first device, where the backend reports it.",
        )

    def attach(self) -> None:
        """A run starts: collections get fresh readings until it detaches."""
        with self._lock:
            self._live += 1
            self._final.clear()

    def detach(self) -> None:
        """A run closes; the last one to close leaves its readings for the next collection."""
        with self._lock:
            self._live = max(0, self._live - 1)
            if self._live:
                return
        final = {name: read() for name, read in READERS.items()}
        with self._lock:
            if not self._live:
                self._final = final

    def _observe_rss(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._reading("rss")

    def _observe_device(self, options: CallbackOptions) -> Iterable[Observation]:
        return self._reading("device")

    def _reading(self, name: str) -> list[Observation]:
        with self._lock:
            live = self._live > 0
            final = None if live else self._final.pop(name, [])
        return READERS[name]() if final is None else final


_global: MemoryGauges | None = None
_by_provider: weakref.WeakKeyDictionary[MeterProvider, MemoryGauges] = weakref.WeakKeyDictionary()
_registering = threading.Lock()


def memory_gauges(provider: MeterProvider | None, meter_name: str) -> MemoryGauges:
    """The gauges of ``provider`` (None: the global one), registered on first use."""
    global _global
    with _registering:
        if provider is None:
            if _global is None:
                _global = MemoryGauges(metrics.get_meter(meter_name))
            return _global
        found = _by_provider.get(provider)
        if found is None:
            found = MemoryGauges(provider.get_meter(meter_name))
            _by_provider[provider] = found
        return found
