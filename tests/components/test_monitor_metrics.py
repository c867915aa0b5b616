"""The ``metrics`` monitor: events become OpenTelemetry metrics, read with an in-memory reader.

Each test hands the monitor a private ``MeterProvider`` (the global one can be set
only once per process).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import pytest
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation
from structlog.testing import capture_logs

from seamline.adapters.serve.metrics import LATENCY_BUCKETS
from seamline.components.monitors.metrics import (
    COMPILE_BOUNDS,
    ERROR_BOUNDS,
    SECONDS_BOUNDS,
    MetricsMonitor,
    MetricsMonitorConfig,
)
from seamline.contracts import (
    BatchDone,
    Compiled,
    DocumentFailed,
    Fallback,
    RunFinished,
    RunStarted,
    SeamCall,
    ShadowCompared,
)
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, toy_registry


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def provider(reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[reader])
    yield provider
    provider.shutdown()


def collect(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Metric name → its data points."""
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            assert scope.scope.name == "seamline"
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def total(points: list[Any]) -> float:
    return sum(p.value for p in points)


def test_counters_histograms_and_gauges(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    monitor = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    for event in [
        RunStarted("r1", "p", {}),
        Compiled(16, 4, 0.5),
        Compiled(32, 4, 1.5),
        SeamCall("model", "toy", "apply", 0.002),
        SeamCall("model", "toy", "apply", 0.004),
        SeamCall("sink", "npy", "write", 0.001),
        BatchDone(1, 16, 4, 40, 0.01, 3),
        BatchDone(2, 32, 4, 100, 0.02, 7),
        DocumentFailed("d9", "unreadable", "load"),
        Fallback("attention", "a", "b", "failed to compile"),
        ShadowCompared("sig", "a", "b", 2, 3e-7, 2e-3, True),
        RunFinished("r1", 8, 1, 8, 140, 2, 2, 1.0, True),
    ]:
        monitor.observe(event)
    metrics = collect(reader)
    assert total(metrics["seamline.batches"]) == 2
    assert total(metrics["seamline.tokens"]) == 140
    assert total(metrics["seamline.documents"]) == 8  # 7 by the last batch, 8 at the end
    assert total(metrics["seamline.documents.failed"]) == 1
    assert total(metrics["seamline.compilations"]) == 2
    assert total(metrics["seamline.fallbacks"]) == 1

    seams = {
        (p.attributes["seamline.seam.kind"], p.attributes["seamline.seam.operation"]): p
        for p in metrics["seamline.seam.duration"]
    }
    apply = seams[("model", "apply")]
    assert apply.count == 2
    assert apply.sum == pytest.approx(0.006)
    assert apply.attributes["seamline.seam.name"] == "toy"
    assert seams[("sink", "write")].count == 1
    (compile_time,) = metrics["seamline.compile.duration"]
    assert (compile_time.count, compile_time.sum) == (2, pytest.approx(2.0))
    (shadow,) = metrics["seamline.shadow.max_error"]
    assert shadow.max == pytest.approx(3e-7)
    (batch_time,) = metrics["seamline.batch.duration"]
    assert batch_time.count == 2

    (rss,) = metrics["seamline.process.rss"]
    assert rss.value > 10 * 2**20
    # The CPU backend reports no memory statistics; a GPU's does.
    import jax

    stats = jax.devices()[0].memory_stats()
    if stats and "bytes_in_use" in stats:
        assert metrics["seamline.device.memory.in_use"][0].value >= 0
    else:
        assert "seamline.device.memory.in_use" not in metrics


def test_odd_values_are_skipped_not_recorded(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    monitor = MetricsMonitor(MetricsMonitorConfig(memory_gauges=False), meter_provider=provider)
    monitor.observe(SeamCall("sink", "s", "write", math.nan))
    monitor.observe(Compiled(0, 0, math.inf))
    monitor.observe(BatchDone(0, 0, 0, 0, -1.0, 0))
    monitor.observe(ShadowCompared("", "a", "b", 0, math.nan, 0.0, False))
    metrics = collect(reader)
    assert "seamline.seam.duration" not in metrics
    assert "seamline.shadow.max_error" not in metrics
    assert total(metrics["seamline.batches"]) == 1
    assert "seamline.process.rss" not in metrics


def test_gauges_stop_after_close(provider: MeterProvider, reader: InMemoryMetricReader) -> None:
    monitor = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    assert "seamline.process.rss" in collect(reader)
    monitor.close()
    monitor.close()
    collect(reader)  # the reading taken at the close (the next test)
    assert "seamline.process.rss" not in collect(reader)


def test_runs_one_after_another_each_report_their_gauges(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    # As a notebook or a service runs pipelines: each run's monitor registered the gauges
    # again, the SDK kept the first run's (closed) callbacks, and later runs reported none.
    for _ in range(3):
        monitor = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
        assert "seamline.process.rss" in collect(reader), "a fresh reading while it runs"
        monitor.close()
        assert "seamline.process.rss" in collect(reader), "the reading at the close, once"
        assert "seamline.process.rss" not in collect(reader)


def test_two_runs_at_once_keep_the_gauges_until_the_last_closes(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    first = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    second = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    first.close()
    assert "seamline.process.rss" in collect(reader)  # the second still runs
    assert "seamline.process.rss" in collect(reader)
    second.close()
    assert "seamline.process.rss" in collect(reader)
    assert "seamline.process.rss" not in collect(reader)


def test_a_closed_monitor_is_not_kept_alive_by_its_gauges(provider: MeterProvider) -> None:
    import gc
    import weakref

    monitor = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    monitor.close()
    gone = weakref.ref(monitor)
    del monitor
    gc.collect()
    assert gone() is None


def test_a_run_shorter_than_the_export_interval_still_exports_its_gauges(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    """The CLI's reader collects every OTEL_METRIC_EXPORT_INTERVAL (60 s) and once more as
    the process exits, after the monitors are closed: a shorter run exported no gauge."""
    monitor = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    for event in EVERY_KIND_OF_EVENT:
        monitor.observe(event)
    monitor.close()  # before any collection, as a run of a second is
    (rss,) = collect(reader)["seamline.process.rss"]
    assert rss.value > 1 << 20  # the process's resident size at the close, in bytes


@pytest.fixture
def no_global_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The metrics API as a fresh process has it: no MeterProvider installed yet.

    The real global can be set only once per process (and the CLI's telemetry tests may
    have set it), so its three module globals are swapped for fresh ones for this test
    and restored afterwards, as opentelemetry-test-utils' ``reset_metrics_globals`` does.
    """
    from opentelemetry.metrics import _internal as api
    from opentelemetry.util._once import Once

    from seamline.components.monitors import _memory_gauges

    monkeypatch.setattr(_memory_gauges, "_global", None)  # registered once per process too
    monkeypatch.setattr(api, "_METER_PROVIDER", None)
    monkeypatch.setattr(api, "_METER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(api, "_PROXY_METER_PROVIDER", api._ProxyMeterProvider())
    monkeypatch.delenv("OTEL_PYTHON_METER_PROVIDER", raising=False)


EVERY_KIND_OF_EVENT = [
    RunStarted("r1", "p", {}),
    Compiled(16, 4, 0.5),
    SeamCall("model", "toy", "apply", 0.002),
    BatchDone(1, 16, 4, 40, 0.01, 3),
    DocumentFailed("d9", "unreadable", "load"),
    Fallback("attention", "a", "b", "failed to compile"),
    ShadowCompared("sig", "a", "b", 2, 3e-7, 2e-3, True),
    RunFinished("r1", 4, 1, 4, 40, 1, 1, 1.0, True),
]


@pytest.mark.usefixtures("no_global_provider")
def test_without_a_provider_it_installs_none_and_fails_on_nothing() -> None:
    from opentelemetry.metrics import _internal as api

    with capture_logs() as logs:
        monitor = MetricsMonitor(MetricsMonitorConfig())
        for event in EVERY_KIND_OF_EVENT:
            monitor.observe(event)
        monitor.close()
    assert logs == []  # observe() swallows its own failures with a warning: there were none
    assert api._METER_PROVIDER is None  # where metrics go stays the application's choice


@pytest.mark.usefixtures("no_global_provider")
def test_without_a_provider_it_counts_once_the_application_installs_one(
    reader: InMemoryMetricReader,
) -> None:
    from opentelemetry import metrics

    monitor = MetricsMonitor(MetricsMonitorConfig())  # the global API, nothing installed yet
    monitor.observe(BatchDone(1, 16, 4, 40, 0.01, 3))  # a no-op: nowhere to go
    provider = MeterProvider(metric_readers=[reader])
    metrics.set_meter_provider(provider)
    try:
        monitor.observe(BatchDone(2, 32, 4, 100, 0.02, 7))
        found = collect(reader)
    finally:
        provider.shutdown()
    assert total(found["seamline.batches"]) == 1  # only the batch after the installation
    assert total(found["seamline.tokens"]) == 100
    assert "seamline.process.rss" in found  # gauges registered before it report too


def test_registered_as_an_entry_point() -> None:
    (entry,) = [e for e in entry_points(group="seamline.monitor") if e.name == "metrics"]
    assert entry.load() is MetricsMonitor
    assert set(MetricsMonitorConfig.model_json_schema()["properties"]) == {
        "seam_latency",
        "memory_gauges",
    }


def test_a_toy_run_is_counted(provider: MeterProvider, reader: InMemoryMetricReader) -> None:
    MemorySink.reset()
    registry = toy_registry()
    texts = [" ".join(["w"] * n) for n in range(1, 9)]
    text = (
        "pipeline: metrics\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    monitor = MetricsMonitor(MetricsMonitorConfig(), meter_provider=provider)
    summary = Orchestrator(parse_pipeline(text, "m.yaml", registry), registry, [monitor]).run()
    metrics = collect(reader)
    assert total(metrics["seamline.batches"]) == summary.counts.batches
    assert total(metrics["seamline.tokens"]) == summary.counts.tokens
    assert total(metrics["seamline.documents"]) == summary.counts.documents == 8
    assert total(metrics["seamline.compilations"]) == summary.compilations
    operations = {
        (p.attributes["seamline.seam.kind"], p.attributes["seamline.seam.operation"])
        for p in metrics.get("seamline.seam.duration", [])
    }
    if operations:  # once the orchestrator reports seam calls
        assert {("model", "apply"), ("sink", "write"), ("model", "prepare")} <= operations
    MemorySink.reset()


HISTOGRAM_BOUNDS = {
    "seamline.seam.duration": SECONDS_BOUNDS,
    "seamline.batch.duration": SECONDS_BOUNDS,
    "seamline.compile.duration": COMPILE_BOUNDS,
    "seamline.shadow.max_error": ERROR_BOUNDS,
}


@pytest.mark.parametrize(
    "preferred",
    [{}, {Histogram: ExplicitBucketHistogramAggregation()}],
    ids=["sdk-default", "otlp-exporter-default"],
)
def test_histograms_export_bounds_suited_to_their_units(preferred: dict[type, Any]) -> None:
    # The SDK's default bounds (0, 5, 10 ... 10000) are meant for milliseconds: every
    # duration in seconds, and every shadow error, landed in the bucket (0, 5].
    reader = InMemoryMetricReader(preferred_aggregation=preferred)
    provider = MeterProvider(metric_readers=[reader])
    monitor = MetricsMonitor(MetricsMonitorConfig(memory_gauges=False), meter_provider=provider)
    for event in [
        SeamCall("model", "toy", "apply", 0.002),
        SeamCall("model", "toy", "apply", 0.3),
        BatchDone(1, 16, 4, 40, 0.04, 3),
        BatchDone(2, 16, 4, 40, 2.0, 5),
        Compiled(16, 4, 0.5),
        Compiled(32, 4, 95.0),
        ShadowCompared("sig", "a", "b", 2, 3e-7, 2e-3, True),
        ShadowCompared("sig", "a", "b", 2, 4e-3, 2e-3, False),
    ]:
        monitor.observe(event)
    points = collect(reader)
    provider.shutdown()
    for name, bounds in HISTOGRAM_BOUNDS.items():
        (point,) = points[name]
        assert tuple(point.explicit_bounds) == bounds, name
        assert sum(1 for count in point.bucket_counts if count) == 2, name  # two buckets


def test_duration_bounds_are_those_of_the_servers_metrics() -> None:
    # seamline_serve_batch_seconds and seamline.batch.duration time the same BatchDone.
    assert SECONDS_BOUNDS == LATENCY_BUCKETS
    for bounds in HISTOGRAM_BOUNDS.values():
        assert list(bounds) == sorted(set(bounds))
