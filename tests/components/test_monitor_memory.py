"""The ``memory`` monitor: sustained growth is reported, warm-up and a clean run are not.

The detector is tested on synthetic series; the monitor on synthetic samples (its
samplers replaced) and on real runs of the toy pipeline: one with a planted leak
(a sink that keeps a device copy of every batch it is given) and a clean
2,000-batch run.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points
from types import SimpleNamespace
from typing import Any, ClassVar

import jax
import numpy as np
import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from seamline.components.monitors import memory
from seamline.components.monitors.memory import MemoryMonitor, MemoryMonitorConfig, detect
from seamline.contracts import (
    Alert,
    BatchDone,
    ComponentConfig,
    DocumentError,
    Monitor,
    OutputRecord,
    RunStarted,
    SeamCall,
    SeamStarted,
    Sink,
)
from seamline.contracts.monitor import EMITTING_THREAD
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import CountingSink, CountLoader, RecordingMonitor, ToyModel

KiB = 1 << 10
MiB = 1 << 20

# -- the detector ----------------------------------------------------------------------------


def series(values: Sequence[int]) -> list[tuple[int, int]]:
    return list(enumerate(values, start=1))


def test_needs_a_full_window() -> None:
    growing = series([i * MiB for i in range(5)])
    assert detect(growing, window=5, monotone=1, bytes_threshold=0, fraction_threshold=None) is None
    verdict = detect(
        [*growing, (6, 5 * MiB)], window=5, monotone=1, bytes_threshold=0, fraction_threshold=None
    )
    assert verdict is not None
    assert (verdict.growth, verdict.first_batch, verdict.last_batch) == (5 * MiB, 1, 6)


def test_byte_threshold_is_strict() -> None:
    values = series([0, 50, 100])
    kwargs: dict[str, Any] = {"window": 2, "monotone": 1.0, "fraction_threshold": None}
    assert detect(values, bytes_threshold=100, **kwargs) is None
    assert detect(values, bytes_threshold=99, **kwargs) is not None


def test_fraction_threshold_is_of_the_window_start() -> None:
    values = series([1000, 1040, 1080])  # +8 %
    kwargs: dict[str, Any] = {"window": 2, "monotone": 1.0, "bytes_threshold": None}
    assert detect(values, fraction_threshold=0.08, **kwargs) is None
    assert detect(values, fraction_threshold=0.079, **kwargs) is not None


def test_both_thresholds_must_be_exceeded() -> None:
    values = series([1000, 1040, 1080])
    kwargs: dict[str, Any] = {"window": 2, "monotone": 1.0}
    assert detect(values, bytes_threshold=100, fraction_threshold=0.01, **kwargs) is None
    assert detect(values, bytes_threshold=10, fraction_threshold=0.5, **kwargs) is None
    assert detect(values, bytes_threshold=10, fraction_threshold=0.01, **kwargs) is not None


def test_only_the_last_window_counts() -> None:
    # Grew early (warm-up-like), flat since: the last window shows no growth.
    values = series([0, 10 * MiB, 20 * MiB] + [20 * MiB] * 5)
    assert detect(values, window=5, monotone=0, bytes_threshold=0, fraction_threshold=None) is None


def test_growth_must_be_monotone_enough() -> None:
    # Net +4 over 8 steps, but every other step goes down: a sawtooth, not a leak.
    sawtooth = series([0, 3, 1, 4, 2, 5, 3, 6, 4])
    kwargs: dict[str, Any] = {"window": 8, "bytes_threshold": 0, "fraction_threshold": None}
    assert detect(sawtooth, monotone=0.7, **kwargs) is None
    assert detect(sawtooth, monotone=0.5, **kwargs) is not None
    # Flat steps count as not going down.
    stairs = series([0, 0, 0, 5, 5, 5, 9, 9, 9])
    assert detect(stairs, monotone=1.0, **kwargs) is not None


def test_shrinking_is_never_reported() -> None:
    values = series([10, 8, 6, 4])
    assert detect(values, window=3, monotone=0, bytes_threshold=None, fraction_threshold=0) is None


# -- config ----------------------------------------------------------------------------------


def test_config_needs_a_threshold_per_metric() -> None:
    with pytest.raises(ValidationError, match="live_bytes_threshold and live_fraction"):
        MemoryMonitorConfig(live_bytes_threshold=None, live_fraction_threshold=None)
    with pytest.raises(ValidationError, match="rss_bytes_threshold and rss_fraction"):
        MemoryMonitorConfig(rss_bytes_threshold=None, rss_fraction_threshold=None)
    with pytest.raises(ValidationError):
        MemoryMonitorConfig(window=1)
    with pytest.raises(ValidationError):
        MemoryMonitorConfig(unknown=1)  # type: ignore[call-arg]


def test_registered_as_an_entry_point() -> None:
    (entry,) = [e for e in entry_points(group="seamline.monitor") if e.name == "memory"]
    assert entry.load() is MemoryMonitor


# -- the monitor on synthetic samples ----------------------------------------------------------


class FakeProcess:
    """Stands in for the samplers: the test sets what the next sample sees."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rss = 500 * MiB
        self.live = 10 * MiB
        self.live_calls = 0
        monkeypatch.setattr(memory, "_rss", lambda: self.rss)
        monkeypatch.setattr(memory, "_live_arrays", self._live_arrays)
        monkeypatch.setattr(memory, "_device_bytes_in_use", lambda: None)

    def _live_arrays(self) -> tuple[int, int]:
        self.live_calls += 1
        return 3, self.live


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProcess:
    return FakeProcess(monkeypatch)


def batch(index: int) -> BatchDone:
    return BatchDone(index, 16, 4, 40, 0.001, 4 * index)


def drive(
    monitor: MemoryMonitor,
    fake: FakeProcess,
    batches: int,
    *,
    leak: tuple[str, int] | None = None,
    rss_leak: int = 0,
    seam_calls: bool = True,
) -> None:
    """Batches with the seam calls a run makes; ``leak`` grows live bytes during one seam."""
    for index in range(1, batches + 1):
        if seam_calls:
            for kind, name, operation in (
                ("loader", "list", "read"),
                ("model", "toy", "prepare"),
                ("model", "toy", "apply"),
                ("sink", "leaky", "write"),
            ):
                if leak is not None and leak[0] == f"{kind}:{name}":
                    fake.live += leak[1]
                monitor.observe(SeamCall(kind, name, operation, 0.0))
        elif leak is not None:
            fake.live += leak[1]
        fake.rss += rss_leak
        monitor.observe(batch(index))


def test_a_leak_is_reported_naming_the_seam(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=3, window=10))
    with capture_logs() as logs:
        drive(monitor, fake, 20, leak=("sink:leaky", 256 * KiB))
    first = monitor.alerts[0]
    attributes = first.attributes
    assert attributes["metric"] == "live_array_bytes"
    assert attributes["seam"] == "sink:leaky"
    assert attributes["seam_share"] == 1.0
    # Judged from batch 4 on; the window of 10 steps is full at batch 14.
    assert (attributes["first_batch"], attributes["last_batch"]) == (4, 14)
    assert attributes["growth_bytes"] == 10 * 256 * KiB
    assert "live JAX array bytes grew by 2.5 MiB over 10 batches" in first.message
    assert "calls to sink:leaky (100% of it)" in first.message
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warnings[0]["event"] == "memory growth"
    assert warnings[0]["seam"] == "sink:leaky"
    assert not any(a.attributes["metric"] == "rss_bytes" for a in monitor.alerts)


def test_a_call_of_another_thread_ending_after_the_growth_is_not_blamed(
    fake: FakeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host thread's ``prepare`` ends between the sink's growth and the sink's report."""
    clock = [0.0]
    monkeypatch.setattr(memory, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4))
    for index in range(1, 6):
        start = 10.0 * index
        clock[0] = start + 1.0
        monitor.observe(SeamCall("model", "toy", "apply", 0.5))
        fake.live += 1 * MiB  # the sink, writing from start + 1.05 to start + 1.2
        clock[0] = start + 1.15
        monitor.observe(SeamCall("model", "toy", "prepare", 0.01))  # began after the growth
        clock[0] = start + 1.2
        monitor.observe(SeamCall("sink", "leaky", "write", 0.15))
        clock[0] = start + 1.3
        monitor.observe(batch(index))
    (alert,) = monitor.alerts
    assert alert.attributes["seam"] == "sink:leaky"
    assert alert.attributes["seams"].get("model:toy", 0) == 0


HOST, DEVICE = 1, 2  # thread idents, as emitting_thread() reports them


def test_a_host_call_spanning_the_whole_write_is_not_blamed(
    fake: FakeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load: the host thread's ``prepare`` runs (descheduled) across the device
    thread's ``apply`` and the sink's write, which starts a while after ``apply`` ended.
    Its start sample bounds the write: the growth lies inside both calls, and the
    device thread's write takes it (the failure CI saw charged it to ``model:toy``)."""
    clock = [0.0]
    monkeypatch.setattr(memory, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4))
    assert monitor.wants_seam_starts

    def on(thread: int, at: float, event: Any) -> None:
        clock[0] = at
        token = EMITTING_THREAD.set(thread)
        try:
            monitor.observe(event)
        finally:
            EMITTING_THREAD.reset(token)

    for index in range(1, 6):
        start = 10.0 * index
        on(HOST, start, SeamStarted("model", "toy", "prepare"))
        on(DEVICE, start + 0.1, SeamStarted("model", "toy", "apply"))
        on(DEVICE, start + 0.5, SeamCall("model", "toy", "apply", 0.4))
        on(DEVICE, start + 0.8, SeamStarted("sink", "leaky", "write"))  # records built
        fake.live += 1 * MiB
        on(DEVICE, start + 1.0, SeamCall("sink", "leaky", "write", 0.2))
        on(HOST, start + 1.2, SeamCall("model", "toy", "prepare", 1.2))
        on(DEVICE, start + 1.3, batch(index))
    (alert,) = monitor.alerts
    assert alert.attributes["seam"] == "sink:leaky", alert.attributes
    assert alert.attributes["seams"] == {"sink:leaky": 4 * MiB}
    assert alert.attributes["seam_share"] == 1.0


def test_growth_is_charged_to_the_batch_it_happened_in(fake: FakeProcess) -> None:
    # Claims settle TIMELINE samples late; the window still counts only its own batches.
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=2, window=10))
    drive(monitor, fake, 13, leak=("sink:leaky", 1 * MiB))
    for _ in range(memory.TIMELINE):  # settle every claim so far
        monitor.observe(SeamCall("loader", "list", "read", 0.0))
    (alert,) = monitor.alerts
    assert alert.attributes["seams"] == {"sink:leaky": 10 * MiB}
    assert monitor.attribution("live_array_bytes", 3, 13) == {"sink:leaky": 10 * MiB}


def test_alerts_reach_a_bound_emitter(fake: FakeProcess) -> None:
    published: list[Any] = []
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4))
    monitor.bind(published.append)
    drive(monitor, fake, 5, leak=("sink:leaky", 1 * MiB))
    assert published == monitor.alerts
    assert len(published) == 1


def test_one_alert_per_window_while_it_keeps_leaking(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=5))
    drive(monitor, fake, 16, leak=("model:toy", 1 * MiB))
    assert [a.attributes["last_batch"] for a in monitor.alerts] == [6, 11, 16]
    assert {a.attributes["seam"] for a in monitor.alerts} == {"model:toy"}


def test_growth_during_warmup_is_not_reported(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=10, window=5))
    drive(monitor, fake, 10, leak=("model:toy", 50 * MiB), rss_leak=500 * MiB)
    drive(monitor, fake, 30)  # flat afterwards
    assert monitor.alerts == []


def test_rss_is_judged_on_its_own(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4))
    drive(monitor, fake, 5, rss_leak=40 * MiB)
    (alert,) = monitor.alerts
    assert alert.attributes["metric"] == "rss_bytes"
    assert "process RSS grew by 160.0 MiB over 4 batches" in alert.message
    # RSS grew between seam calls here (the fake grows it at the batch), so no seam is named.
    assert alert.attributes["seam"] is None
    assert "no seam's calls account for it" in alert.message


def test_without_seam_calls_the_alert_says_it_cannot_attribute(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4))
    drive(monitor, fake, 5, leak=("sink:leaky", 1 * MiB), seam_calls=False)
    (alert,) = monitor.alerts
    assert alert.attributes["seam"] is None
    assert "no SeamCall events were seen" in alert.message


def test_the_live_array_sampler_counts_what_nbytes_says() -> None:
    import jax.numpy as jnp

    kept = [
        jnp.zeros((3, 5), jnp.float32),
        jnp.zeros((7,), jnp.bfloat16),
        jnp.zeros((2, 2, 2), jnp.int8),
        jnp.zeros((), jnp.float32),
    ]
    arrays = jax.live_arrays()
    sampled = memory._live_arrays()
    assert sampled is not None
    assert sampled == (len(arrays), sum(int(a.nbytes) for a in arrays))
    assert sampled[1] >= 60 + 14 + 8 + 4
    del kept


def test_live_arrays_can_be_left_unsampled(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4, sample_live_arrays=False))
    drive(monitor, fake, 10, leak=("sink:leaky", 10 * MiB))
    assert fake.live_calls == 0
    assert monitor.alerts == []


def test_a_new_run_starts_afresh(fake: FakeProcess) -> None:
    monitor = MemoryMonitor(MemoryMonitorConfig(warmup=0, window=4))
    drive(monitor, fake, 4, leak=("sink:leaky", 1 * MiB))
    monitor.observe(RunStarted("r2", "p", {}))
    drive(monitor, fake, 4, leak=("sink:leaky", 1 * MiB))
    assert monitor.alerts == []
    assert monitor.batches == 4


def test_a_failing_sampler_never_reaches_the_run(
    fake: FakeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> tuple[int, int]:
        raise RuntimeError("backend gone")

    monkeypatch.setattr(memory, "_live_arrays", broken)
    monitor = MemoryMonitor(MemoryMonitorConfig())
    with capture_logs() as logs:
        drive(monitor, fake, 3)
    assert any(entry["event"] == "memory monitor failed on an event" for entry in logs)


# -- real runs of the toy pipeline -------------------------------------------------------------


class LeakySink(Sink[ComponentConfig]):
    """A planted leak: keeps a 64 KiB device copy of every batch it is given, never freed."""

    name: ClassVar[str] = "leaky"
    contract_version: ClassVar[str] = "1.0"
    Config = ComponentConfig
    kept: ClassVar[list[jax.Array]] = []
    LEAK_BYTES: ClassVar[int] = 64 * KiB

    def write(self, records: Sequence[OutputRecord]) -> None:
        vectors = np.stack([record.vector for record in records]).astype(np.float32)
        LeakySink.kept.append(jax.device_put(np.resize(vectors, self.LEAK_BYTES // 4)))

    def write_error(self, error: DocumentError) -> None:
        pass

    def close(self, complete: bool = True) -> None:
        pass


@pytest.fixture
def leaky() -> Iterator[type[LeakySink]]:
    LeakySink.kept.clear()
    yield LeakySink
    LeakySink.kept.clear()


def registry() -> Registry:
    from seamline.components.attention.native import NativeAttention

    components: list[type[Any]] = [
        CountLoader,
        ToyModel,
        NativeAttention,
        CountingSink,
        LeakySink,
        MemoryMonitor,
    ]
    return Registry(
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.0"
        )
        for c in components
    )


def run(sink: str, batches: int, *monitors: Monitor[Any]) -> Any:
    """``batches`` batches of 4 toy documents, one shape (length 16)."""
    reg = registry()
    text = (
        "pipeline: memory\n"
        f"loader: {{use: count, with: {{documents: {4 * batches}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}}}\n"
        "run: {batch_size: 4, buckets: [16]}\n"
    )
    return Orchestrator(parse_pipeline(text, "m.yaml", reg), reg, monitors).run()


def test_a_planted_leak_is_flagged_within_bounded_batches(leaky: type[LeakySink]) -> None:
    config = MemoryMonitorConfig()  # the defaults: warm-up 20, window 50, 1 MiB and 1 %
    monitor = MemoryMonitor(config)
    others = RecordingMonitor(ComponentConfig())
    RecordingMonitor.events.clear()
    # Arrays an earlier test in this process left to the cycle collector are freed now, not
    # inside the window, where they would offset the growth measured.
    gc.collect()
    with capture_logs() as logs:
        summary = run("leaky", 120, monitor, others)
    assert summary.counts.batches == 120
    assert monitor.alerts, "the leak was not reported"
    first = monitor.alerts[0].attributes
    assert first["metric"] == "live_array_bytes"
    # The bound: the first full window after warm-up.
    assert first["last_batch"] <= config.warmup + config.window + 1
    assert first["growth_bytes"] >= config.window * LeakySink.LEAK_BYTES
    assert monitor.seam_calls  # the orchestrator reports seam calls: the sink is named
    assert first["seam"] == "sink:leaky", first
    # Nearly all of it, though prefetch runs prepare on the host thread meanwhile:
    # each write is bounded by its own start sample (a few KiB of the model's
    # passing outputs may be caught by a sample mid-call).
    assert first["seam_share"] > 0.9, first
    assert first["seams"]["sink:leaky"] == max(first["seams"].values())
    assert any(e["event"] == "memory growth" and e["log_level"] == "warning" for e in logs)
    # Published through the host (monitor contract 1.2): the other monitors see the alert.
    published = [e for e in RecordingMonitor.events if isinstance(e, Alert)]
    assert published == monitor.alerts


def test_a_clean_2000_batch_run_raises_no_alert() -> None:
    CountingSink.written = 0
    monitor = MemoryMonitor(MemoryMonitorConfig())
    started = time.perf_counter()
    with capture_logs() as logs:
        summary = run("counting", 2000, monitor)
    seconds = time.perf_counter() - started
    assert summary.counts.batches == 2000
    assert monitor.batches == 2000
    assert monitor.alerts == [], monitor.alerts[0].message
    assert not [e for e in logs if e["event"] == "memory growth"]
    assert seconds < 120, f"the clean run took {seconds:.1f} s"
