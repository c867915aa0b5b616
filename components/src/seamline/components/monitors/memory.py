"""``memory``: watches a run's memory and says, loudly, when it keeps growing.

At every batch (``BatchDone``) it samples the process's resident set size
(psutil), the device's ``bytes_in_use`` where the backend reports memory
statistics (``memory_stats()`` is None on the CPU) and the count and bytes of
live JAX arrays (``jax.live_arrays()``). At the start and end of every seam call
(``SeamStarted``, monitor contract 1.4, and ``SeamCall``) it takes the same cheap
samples again (RSS and, when on, live arrays; not the device statistics) and
charges the growth between them to that call's seam, so that growth can be
attributed to the loader, the model's ``prepare`` or ``apply``, or the sink.

*Sustained* growth is what it reports, not growth: the first ``warmup`` batches
(imports, compilation, allocator pools filling) are not judged, and after them a
metric must have grown, over the last ``window`` batches, by more than every
threshold set for it, with at least ``monotone`` of the steps in the window not
going down. Live-array bytes and RSS are judged separately, each with its own
thresholds.

An alert is a :class:`~seamline.contracts.Alert`, kept in :attr:`MemoryMonitor.alerts`
logged through structlog at warning level (logger ``seamline.monitor.memory``), and
published through the host (:meth:`MemoryMonitor.bind`, monitor contract 1.2) to
the other monitors and onto the current span. After an alert the
metric's window starts afresh, so a leak is reported once per window, not once per
batch.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field, model_validator

from seamline.contracts import (
    Alert,
    BatchDone,
    ComponentConfig,
    Event,
    Monitor,
    RunStarted,
    SeamCall,
    SeamStarted,
)
from seamline.contracts.logs import get_logger
from seamline.contracts.monitor import emitting_thread

LOGGER_NAME = "seamline.monitor.memory"
SOURCE = "seamline.monitor.memory"
TIMELINE = 256
"""Samples kept unsettled: a seam call can claim the growth of those it overlaps (a
batch of 32 documents takes about 70: a start and an end per ``prepare``, per chunk
read, ``apply`` and ``write``)."""
MAX_OPEN = 64
"""Calls started and not yet ended, per thread, that are remembered (seams nest a few deep)."""
MAX_ALERTS = 100
"""Alerts kept in :attr:`MemoryMonitor.alerts` (the oldest are dropped past this)."""

MiB = 1 << 20
METRICS = ("live_array_bytes", "rss_bytes")


class MemoryMonitorConfig(ComponentConfig):
    """The ``with:`` block of the ``memory`` monitor."""

    window: int = Field(
        default=50,
        ge=2,
        description="Batches over which growth must be sustained before it is reported.",
    )
    warmup: int = Field(
        default=20,
        ge=0,
        description="Batches at the start of a run that are not judged (compilation, "
        "allocator pools and caches filling up).",
    )
    monotone: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="Share of the window's batch-to-batch steps that must not go down "
        "(1.0: strictly never shrinking; 0: any shape, only the net growth counts).",
    )
    live_bytes_threshold: int | None = Field(
        default=MiB,
        ge=0,
        description="Growth of live JAX array bytes over the window that is reported, "
        "in bytes (None: no byte threshold).",
    )
    live_fraction_threshold: float | None = Field(
        default=0.01,
        ge=0.0,
        description="Growth of live JAX array bytes over the window that is reported, as "
        "a fraction of the bytes at the window's start (None: no fraction threshold). "
        "When both thresholds are set the growth must exceed both.",
    )
    rss_bytes_threshold: int | None = Field(
        default=64 * MiB,
        ge=0,
        description="Growth of the process's resident set size over the window that is "
        "reported, in bytes (None: no byte threshold).",
    )
    rss_fraction_threshold: float | None = Field(
        default=0.05,
        ge=0.0,
        description="Growth of the resident set size over the window that is reported, "
        "as a fraction of the RSS at the window's start (None: no fraction threshold).",
    )
    sample_live_arrays: bool = Field(
        default=True,
        description="Sample jax.live_arrays() (count and bytes). Its cost grows with the "
        "number of live arrays; turn it off to watch RSS and device memory only.",
    )
    attribute_seams: bool = Field(
        default=True,
        description="Sample again at the start and end of every seam call (SeamStarted and "
        "SeamCall events) to charge growth to the seam whose calls coincide with it.",
    )

    @model_validator(mode="after")
    def _some_threshold(self) -> MemoryMonitorConfig:
        if self.live_bytes_threshold is None and self.live_fraction_threshold is None:
            raise ValueError(
                "live_bytes_threshold and live_fraction_threshold are both None: set one"
            )
        if self.rss_bytes_threshold is None and self.rss_fraction_threshold is None:
            raise ValueError(
                "rss_bytes_threshold and rss_fraction_threshold are both None: set one"
            )
        return self


@dataclass(frozen=True, slots=True)
class Sample:
    """What one batch's sample saw; None where it could not be measured."""

    batch: int
    rss_bytes: int | None
    live_array_bytes: int | None
    live_arrays: int | None
    device_bytes_in_use: int | None
    seams: dict[str, dict[str, int]] = field(default_factory=dict)
    """Metric → seam (``kind:name``) → bytes of growth during this batch charged to it
    (filled in as claims settle, which may be some batches later)."""

    def value(self, metric: str) -> int | None:
        value: int | None = getattr(self, metric)
        return value


@dataclass(slots=True)
class _Segment:
    """The growth between the previous sample and this one, and the seam call it is charged to."""

    since: float
    """When the previous sample was taken: the growth happened in ``(since, at]``."""
    at: float
    batch: int
    """The batch under way (the one whose ``BatchDone`` is next): charges go to it."""
    values: dict[str, int | None]
    deltas: dict[str, int]
    seam: str | None = None
    score: tuple[float, bool, float] | None = None
    """Of the claiming call: (share of the segment it covers, whether it ran on the
    device thread, minus its duration)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The detector's finding on one window of one metric."""

    metric: str
    growth: int
    start: int
    end: int
    rising_share: float
    first_batch: int
    last_batch: int


def detect(
    values: list[tuple[int, int]],
    *,
    window: int,
    monotone: float,
    bytes_threshold: int | None,
    fraction_threshold: float | None,
    metric: str = "",
) -> Verdict | None:
    """Sustained growth in the last ``window`` steps of ``(batch, value)``, or None.

    The window spans ``window + 1`` samples. The growth (last minus first) must be
    positive and exceed every threshold that is set (strictly), and at least
    ``monotone`` of the steps must not go down.
    """
    if len(values) < window + 1:
        return None
    span = values[-(window + 1) :]
    start, end = span[0][1], span[-1][1]
    growth = end - start
    if growth <= 0:
        return None
    if bytes_threshold is not None and growth <= bytes_threshold:
        return None
    if fraction_threshold is not None and growth <= fraction_threshold * max(start, 1):
        return None
    steps = [b[1] - a[1] for a, b in itertools.pairwise(span)]
    rising = sum(1 for step in steps if step >= 0) / len(steps)
    if rising < monotone:
        return None
    return Verdict(metric, growth, start, end, rising, span[0][0], span[-1][0])


_process: Any = None


def _rss() -> int | None:
    global _process
    try:
        if _process is None or _process.pid != os.getpid():  # a fork gets its own
            import psutil  # type: ignore[import-untyped]

            _process = psutil.Process()
        return int(_process.memory_info().rss)
    except Exception:
        return None


def _live_arrays() -> tuple[int, int] | None:
    """(count, bytes) of live JAX arrays, or None if JAX cannot say."""
    try:
        import jax

        arrays = jax.live_arrays()
        # What Array.nbytes computes, without its np.size() dispatch: 4x faster, and
        # this runs twice per seam call (benchmarks/overhead/monitor_cost.py).
        return len(arrays), sum(a.size * a.dtype.itemsize for a in arrays)
    except Exception:
        return None


def _device_bytes_in_use() -> int | None:
    try:
        import jax

        stats = jax.devices()[0].memory_stats()
    except Exception:
        return None
    if not stats or "bytes_in_use" not in stats:
        return None
    return int(stats["bytes_in_use"])


def _call_key(event: SeamStarted | SeamCall) -> str:
    """``kind:name.operation``: what pairs a call's start with its end on one thread."""
    return f"{event.kind}:{event.name}.{event.operation}"


def _mib(value: float) -> float:
    return round(value / MiB, 2)


class MemoryMonitor(Monitor[MemoryMonitorConfig]):
    """Samples memory every batch and seam call; alerts on sustained growth, naming the seam."""

    name: ClassVar[str] = "memory"
    contract_version: ClassVar[str] = "1.4"
    Config = MemoryMonitorConfig

    def __init__(self, config: MemoryMonitorConfig) -> None:
        super().__init__(config)
        self._log: Any = get_logger(LOGGER_NAME)
        # SeamCall events of the loader and model.prepare come from the host thread.
        self._lock = threading.Lock()
        self.alerts: list[Alert] = []
        """Every alert raised in this monitor's life (at most ``MAX_ALERTS``, newest last)."""
        self._emit: Callable[[Event], None] | None = None
        self._device_thread = emitting_thread()  # until a BatchDone says otherwise
        self._reset()

    @property
    def wants_seam_starts(self) -> bool:
        """A sample at each call's start bounds the growth charged to it (contract 1.4)."""
        return self.config.attribute_seams

    def bind(self, emit: Callable[[Event], None]) -> None:
        """Publish alerts as events to the other monitors (monitor contract 1.2).

        The host calls this when the run starts; every alert is then also passed to
        ``emit``, which queues it until the current event is through.
        """
        self._emit = emit

    def _reset(self) -> None:
        self.samples: deque[Sample] = deque(maxlen=self.config.window + 1)
        """The last ``window + 1`` batch samples (after warm-up)."""
        self.batches = 0
        self.seam_calls = 0
        self._since: dict[str, int] = {}  # metric -> batch from which its window may start
        self._timeline: deque[_Segment] = deque()
        self._open: dict[int, list[tuple[str, float]]] = {}
        """Thread → the calls it started and has not ended: (``kind:name.operation``, when)."""
        self._charges: dict[int, dict[str, dict[str, int]]] = {}
        """Batch → its :attr:`Sample.seams` (the same dict), for the batches still judged."""

    # -- events ------------------------------------------------------------------------------

    def observe(self, event: Event) -> None:
        try:
            with self._lock:
                if isinstance(event, SeamCall):
                    self._seam_call(event)
                elif isinstance(event, SeamStarted):
                    self._seam_started(event)
                elif isinstance(event, BatchDone):
                    self._batch_done()
                elif isinstance(event, RunStarted):
                    self._reset()
        except Exception as err:  # never into the run
            self._log.warning(
                "memory monitor failed on an event",
                event_type=type(event).__name__,
                error=f"{type(err).__name__}: {err}",
            )

    def _measure(self, *, device: bool) -> dict[str, int | None]:
        values: dict[str, int | None] = {"rss_bytes": _rss()}
        live = _live_arrays() if self.config.sample_live_arrays else None
        values["live_arrays"] = live[0] if live else None
        values["live_array_bytes"] = live[1] if live else None
        if device:
            values["device_bytes_in_use"] = _device_bytes_in_use()
        return values

    def _remember(self, at: float, values: dict[str, int | None], batch: int) -> _Segment:
        """Add a sample to the timeline: the segment from the previous sample to this one."""
        previous = self._timeline[-1].values if self._timeline else {}
        deltas = {}
        for metric in METRICS:
            value, before = values.get(metric), previous.get(metric)
            if value is not None and before is not None and value != before:
                deltas[metric] = value - before
        since = self._timeline[-1].at if self._timeline else at
        segment = _Segment(since, at, batch, {m: values.get(m) for m in METRICS}, deltas)
        if len(self._timeline) == TIMELINE:
            self._settle(self._timeline.popleft())
        self._timeline.append(segment)
        return segment

    def _settle(self, segment: _Segment) -> None:
        """Charge a segment's growth to the seam call that claimed it, for good, in its batch."""
        if segment.seam is None or segment.batch <= self._forgotten():
            return  # warm-up, or a batch no window can reach any more
        charges = self._charges_of(segment.batch)
        for metric, delta in segment.deltas.items():
            charged = charges[metric]
            charged[segment.seam] = charged.get(segment.seam, 0) + delta

    def _charges_of(self, batch: int) -> dict[str, dict[str, int]]:
        """Metric → seam → bytes charged to ``batch``: its :attr:`Sample.seams`, made once."""
        return self._charges.setdefault(batch, {m: {} for m in METRICS})

    def _forgotten(self) -> int:
        """The last batch whose charges are no longer kept: warm-up, or out of every window."""
        return max(self.config.warmup, self.batches - self.config.window - 1)

    def _seam_started(self, event: SeamStarted) -> None:
        """Sample before the call begins, so that its growth starts at a sample of its own."""
        if not self.config.attribute_seams:
            return
        now = time.perf_counter()
        self._remember(now, self._measure(device=False), self.batches + 1)
        key = _call_key(event)
        started = self._open.setdefault(emitting_thread(), [])
        if len(started) < MAX_OPEN:
            started.append((key, now))

    def _began(self, event: SeamCall, now: float) -> float:
        """When the call ended by ``event`` began, on this monitor's clock.

        The time of its own start sample when one was taken on the same thread (exact:
        the calling thread waits while the monitor samples); otherwise (a host without
        start events, a loader chunk timed after the fact) the event's duration back
        from now, which lands a little late by the time the event took to arrive.
        """
        key = _call_key(event)
        started = self._open.get(emitting_thread(), [])
        for index in range(len(started) - 1, -1, -1):
            if started[index][0] == key:
                began = started[index][1]
                del started[index:]  # calls opened inside it and never closed end with it
                return began
        seconds = event.seconds if math.isfinite(event.seconds) and event.seconds > 0 else 0.0
        return now - seconds

    def _seam_call(self, event: SeamCall) -> None:
        """Claim the timeline's segments that overlap the call for its seam.

        Seam calls come from two threads (the loader's and ``prepare``'s from the host
        thread), so growth cannot simply be charged to whichever call ended next.
        Every call's start and end are samples (``SeamStarted``), so a segment between
        two samples lies wholly inside or wholly outside each call, and the growth in
        it happened while every call covering it was running. It goes to one on the
        device thread (the thread that reports batches, where device arrays are
        made: a ``prepare`` the host thread was descheduled in, spanning the sink's
        whole write, loses to the write), then to the shortest (the innermost). A
        call whose start was not sampled covers segments partly; the one covering
        most wins. A claim is final when the segment leaves the timeline
        (``TIMELINE`` samples later); an alert counts the pending claims too.
        """
        self.seam_calls += 1
        if not self.config.attribute_seams:
            return
        now = time.perf_counter()
        began = self._began(event, now)
        seconds = now - began
        self._remember(now, self._measure(device=False), self.batches + 1)
        seam = f"{event.kind}:{event.name}"
        for segment in reversed(self._timeline):
            if segment.at < began:
                break  # this segment, and every earlier one, ended before the call began
            length = segment.at - segment.since
            overlap = min(segment.at, now) - max(segment.since, began)
            covered = min(1.0, overlap / length) if length > 0 else 1.0
            score = (covered, emitting_thread() == self._device_thread, -seconds)
            if segment.score is None or score > segment.score:
                segment.seam, segment.score = seam, score

    def _batch_done(self) -> None:
        self._device_thread = emitting_thread()
        self.batches += 1
        values = self._measure(device=True)
        if self.config.attribute_seams:
            self._remember(time.perf_counter(), values, self.batches)
        forgotten = self._forgotten()
        for batch in [b for b in self._charges if b <= forgotten]:
            del self._charges[batch]
        if self.batches <= self.config.warmup:
            return
        sample = Sample(
            self.batches,
            values["rss_bytes"],
            values["live_array_bytes"],
            values["live_arrays"],
            values.get("device_bytes_in_use"),
            self._charges_of(self.batches),
        )
        self.samples.append(sample)
        for metric in METRICS:
            verdict = self._judge(metric)
            if verdict is not None:
                self._alert(verdict)
                self._since[metric] = self.batches  # a new window before the next alert

    # -- detection ---------------------------------------------------------------------------

    def _judge(self, metric: str) -> Verdict | None:
        since = self._since.get(metric, 0)
        values = [
            (s.batch, v)
            for s in self.samples
            if s.batch >= since and (v := s.value(metric)) is not None
        ]
        config = self.config
        if metric == "live_array_bytes":
            thresholds = (config.live_bytes_threshold, config.live_fraction_threshold)
        else:
            thresholds = (config.rss_bytes_threshold, config.rss_fraction_threshold)
        return detect(
            values,
            window=config.window,
            monotone=config.monotone,
            bytes_threshold=thresholds[0],
            fraction_threshold=thresholds[1],
            metric=metric,
        )

    def attribution(self, metric: str, first_batch: int, last_batch: int) -> dict[str, int]:
        """Seam → bytes of ``metric`` growth charged to it in batches ``(first, last]``."""
        totals: dict[str, int] = {}
        for sample in self.samples:
            if first_batch < sample.batch <= last_batch:
                for seam, growth in sample.seams.get(metric, {}).items():
                    totals[seam] = totals.get(seam, 0) + growth
        for segment in self._timeline:  # claimed, not yet settled
            in_range = first_batch < segment.batch <= last_batch
            if in_range and segment.seam is not None and metric in segment.deltas:
                totals[segment.seam] = totals.get(segment.seam, 0) + segment.deltas[metric]
        return totals

    def _alert(self, verdict: Verdict) -> None:
        seams = self.attribution(verdict.metric, verdict.first_batch, verdict.last_batch)
        named = {k: v for k, v in seams.items() if v > 0}
        seam: str | None = max(named, key=lambda k: named[k]) if named else None
        # Calls of two threads can overlap, so the shares may add up to more than 1.
        share = min(1.0, seams[seam] / verdict.growth) if seam is not None else 0.0
        batches = verdict.last_batch - verdict.first_batch
        what = "live JAX array bytes" if verdict.metric == "live_array_bytes" else "process RSS"
        if seam is not None:
            blame = f"; the growth coincides with calls to {seam} ({share:.0%} of it)"
        elif self.seam_calls:
            blame = "; no seam's calls account for it (it grew between seam calls)"
        else:
            blame = "; no SeamCall events were seen, so it cannot be attributed to a seam"
        message = (
            f"{what} grew by {_mib(verdict.growth)} MiB over {batches} batches "
            f"({_mib(verdict.start)} -> {_mib(verdict.end)} MiB, batches "
            f"{verdict.first_batch}-{verdict.last_batch}): a leak?{blame}"
        )
        last = self.samples[-1]
        attributes: dict[str, Any] = {
            "metric": verdict.metric,
            "growth_bytes": verdict.growth,
            "from_bytes": verdict.start,
            "to_bytes": verdict.end,
            "first_batch": verdict.first_batch,
            "last_batch": verdict.last_batch,
            "batches": batches,
            "rising_share": round(verdict.rising_share, 3),
            "seam": seam,
            "seam_share": round(share, 3),
            "seams": dict(sorted(seams.items(), key=lambda kv: -kv[1])),
            "live_arrays": last.live_arrays,
            "device_bytes_in_use": last.device_bytes_in_use,
        }
        alert = Alert(SOURCE, message, attributes)
        self.alerts.append(alert)
        del self.alerts[:-MAX_ALERTS]
        # "detail", not "message": stdlib logging reserves "message" on its records.
        self._log.warning("memory growth", detail=message, **attributes)
        if self._emit is not None:
            self._emit(alert)

    def close(self) -> None:
        pass


__all__ = ["MemoryMonitor", "MemoryMonitorConfig", "Sample", "Verdict", "detect"]
