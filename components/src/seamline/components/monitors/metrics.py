"""``metrics``: a run's events as OpenTelemetry metrics.

It records through ``opentelemetry-api`` only (``metrics.get_meter("seamline")``)
and never installs a ``MeterProvider``: where the numbers go (Prometheus, OTLP, a
periodic console reader) is the application's choice, exactly as with traces.
Until the application installs a provider, every instrument is a no-op.

Instruments (units in brackets):

* counters ``seamline.documents`` {document}, ``seamline.documents.failed``
  {document}, ``seamline.tokens`` {token}, ``seamline.batches`` {batch},
  ``seamline.compilations`` {compilation}, ``seamline.fallbacks`` {fallback};
* histograms ``seamline.seam.duration`` [s] (from ``SeamCall``, attributes
  ``seamline.seam.kind``, ``seamline.seam.name``, ``seamline.seam.operation``),
  ``seamline.batch.duration`` [s], ``seamline.compile.duration`` [s] and
  ``seamline.shadow.max_error`` [1] (``ShadowCompared.max_error``);
* observable gauges ``seamline.process.rss`` [By] (psutil) and
  ``seamline.device.memory.in_use`` [By] (the first device's ``bytes_in_use``,
  observed only where the backend reports memory statistics).

Each histogram advises bucket bounds suited to its unit (``explicit_bucket_boundaries_advisory``,
honoured by the SDK from 1.30, and by its OTLP exporter's aggregation from 1.32): without
them the SDK's defaults (0, 5, 10, 25 ... 10000, meant for milliseconds) put every duration
in seconds, and every shadow error, in one bucket, so no percentile could be read. A view
the application installs still wins over the advice.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from opentelemetry import metrics
from opentelemetry.metrics import MeterProvider
from pydantic import Field

from seamline.components.monitors._memory_gauges import memory_gauges
from seamline.contracts import (
    BatchDone,
    Compiled,
    ComponentConfig,
    DocumentFailed,
    Event,
    Fallback,
    Monitor,
    RunFinished,
    RunStarted,
    SeamCall,
    ShadowCompared,
)
from seamline.contracts.logs import get_logger

METER_NAME = "seamline"
LOGGER_NAME = "seamline.monitor.metrics"

SECONDS_BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
"""Bounds of ``seamline.seam.duration`` and ``seamline.batch.duration``: from a
millisecond seam call to a half-minute batch. The same as ``seamline serve``'s
``/metrics`` latency buckets, so that its ``seamline_serve_batch_seconds`` (the same
``BatchDone.seconds``) and ``seamline.batch.duration`` can be compared bucket by bucket."""
COMPILE_BOUNDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200)
"""Bounds of ``seamline.compile.duration``: a shape read from the compile cache takes
milliseconds, a large model's first compilation minutes."""
ERROR_BOUNDS = (
    1e-8,
    3e-8,
    1e-7,
    3e-7,
    1e-6,
    3e-6,
    1e-5,
    3e-5,
    1e-4,
    3e-4,
    1e-3,
    3e-3,
    0.01,
    0.03,
    0.1,
    0.3,
    1,
)
"""Bounds of ``seamline.shadow.max_error``, log-spaced (two to a decade),
from float32 rounding (about 1e-7) through bfloat16's (1e-3 to 1e-2) to a broken
implementation."""


class MetricsMonitorConfig(ComponentConfig):
    """The ``with:`` block of the ``metrics`` monitor."""

    seam_latency: bool = Field(
        default=True,
        description="Record the seamline.seam.duration histogram from SeamCall events.",
    )
    memory_gauges: bool = Field(
        default=True,
        description="Register the observable gauges seamline.process.rss and "
        "seamline.device.memory.in_use (read when the application's reader collects).",
    )


def _finite(value: float) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


class MetricsMonitor(Monitor[MetricsMonitorConfig]):
    """Counts documents, tokens, batches, compilations and fallbacks; times seams; gauges memory."""

    name: ClassVar[str] = "metrics"
    contract_version: ClassVar[str] = "1.1"
    Config = MetricsMonitorConfig

    def __init__(
        self, config: MetricsMonitorConfig, *, meter_provider: MeterProvider | None = None
    ) -> None:
        """``meter_provider`` is for tests and embedders; by default the global one is used."""
        super().__init__(config)
        self._log: Any = get_logger(LOGGER_NAME)
        self._closed = False
        self._documents_seen = 0
        self._run_id = ""
        meter = (
            meter_provider.get_meter(METER_NAME)
            if meter_provider is not None
            else metrics.get_meter(METER_NAME)
        )
        self.documents = meter.create_counter(
            "seamline.documents", unit="{document}", description="Documents read and prepared."
        )
        self.failed = meter.create_counter(
            "seamline.documents.failed",
            unit="{document}",
            description="Documents set aside (unreadable, or failed to prepare).",
        )
        self.tokens = meter.create_counter(
            "seamline.tokens", unit="{token}", description="Real (unpadded) tokens embedded."
        )
        self.batches = meter.create_counter(
            "seamline.batches", unit="{batch}", description="Batches run through the model."
        )
        self.compilations = meter.create_counter(
            "seamline.compilations",
            unit="{compilation}",
            description="Shapes compiled (one per bucket and attention).",
        )
        self.fallbacks = meter.create_counter(
            "seamline.fallbacks",
            unit="{fallback}",
            description="Implementations that could not serve and were replaced.",
        )
        self.seam_duration = meter.create_histogram(
            "seamline.seam.duration",
            unit="s",
            description="Time of one call across a seam, outside compiled code.",
            explicit_bucket_boundaries_advisory=SECONDS_BOUNDS,
        )
        self.batch_duration = meter.create_histogram(
            "seamline.batch.duration",
            unit="s",
            description="Wall time of a batch, assembled to handed to the sink.",
            explicit_bucket_boundaries_advisory=SECONDS_BOUNDS,
        )
        self.compile_duration = meter.create_histogram(
            "seamline.compile.duration",
            unit="s",
            description="Time to compile one shape.",
            explicit_bucket_boundaries_advisory=COMPILE_BOUNDS,
        )
        self.shadow_error = meter.create_histogram(
            "seamline.shadow.max_error",
            unit="1",
            description="Largest difference between an implementation and the reference "
            "on a shadowed batch.",
            explicit_bucket_boundaries_advisory=ERROR_BOUNDS,
        )
        self._gauges = memory_gauges(meter_provider, METER_NAME) if config.memory_gauges else None
        if self._gauges is not None:
            self._gauges.attach()

    # -- events ------------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        try:
            self._observe(event)
        except Exception as err:  # never into the run
            self._log.warning(
                "metrics monitor failed on an event",
                event_type=type(event).__name__,
                error=f"{type(err).__name__}: {err}",
            )

    def _observe(self, event: Event) -> None:
        if isinstance(event, SeamCall):
            if self.config.seam_latency and _finite(event.seconds) and event.seconds >= 0:
                self.seam_duration.record(
                    event.seconds,
                    {
                        "seamline.seam.kind": event.kind,
                        "seamline.seam.name": event.name,
                        "seamline.seam.operation": event.operation,
                    },
                )
        elif isinstance(event, BatchDone):
            self.batches.add(1)
            if event.tokens > 0:
                self.tokens.add(event.tokens)
            self._documents_to(event.documents)
            if _finite(event.seconds) and event.seconds >= 0:
                self.batch_duration.record(event.seconds)
        elif isinstance(event, Compiled):
            self.compilations.add(1)
            if _finite(event.seconds) and event.seconds >= 0:
                self.compile_duration.record(event.seconds)
        elif isinstance(event, Fallback):
            self.fallbacks.add(1, {"seamline.seam": event.seam})
        elif isinstance(event, DocumentFailed):
            self.failed.add(1, {"seamline.stage": event.stage})
        elif isinstance(event, ShadowCompared):
            if _finite(event.max_error) and event.max_error >= 0:
                self.shadow_error.record(
                    event.max_error, {"seamline.attention.name": event.implementation}
                )
        elif isinstance(event, RunStarted):
            self._documents_seen = 0
            self._run_id = event.run_id
        elif isinstance(event, RunFinished):
            self._documents_to(event.documents)

    def _documents_to(self, total: int) -> None:
        """Documents are reported as a running total; the counter gets the increase."""
        if total > self._documents_seen:
            self.documents.add(total - self._documents_seen)
            self._documents_seen = total

    def close(self) -> None:
        """Detaches from the memory gauges: once no run is attached, the next collection
        gets their readings at this close, then nothing (see :mod:`._memory_gauges`)."""
        if self._closed:
            return
        self._closed = True
        if self._gauges is not None:
            self._gauges.detach()
