"""The server's Prometheus instruments, served at ``/metrics``.

A registry of the server's own (not the process-wide default one), so two servers in
one process, or a test, never share counts. Batch sizes come from the embedder's
``BatchDone`` events through a monitor (:class:`BatchMetrics`), as a run's monitors
see its batches.

======================================  ====================================================
metric                                  what
======================================  ====================================================
``seamline_serve_requests_total``       requests answered, by ``endpoint`` and ``status``
``seamline_serve_refused_total``        requests refused before any endpoint, by ``code``
                                        (a ``Host`` or ``Origin`` refused, an unknown path
                                        or method)
``seamline_serve_request_seconds``      latency per request (histogram), by ``endpoint``
``seamline_serve_queue_texts``          texts accepted and not yet answered
``seamline_serve_queue_requests``       requests accepted and not yet answered
``seamline_serve_texts_total``          texts embedded
``seamline_serve_tokens_total``         tokens embedded (the ``usage`` of the answers)
``seamline_serve_batch_examples``       windows per batch (histogram)
``seamline_serve_batch_tokens``         real tokens per batch (histogram)
``seamline_serve_batch_seconds``        a batch through the model (histogram)
``seamline_serve_cancelled_total``      requests left before all their texts were taken
``seamline_serve_ready``                1 once the model is warm, else 0
``process_*``                           the process: resident and virtual memory, CPU
                                        seconds, open and most file descriptors, start
                                        time (Linux; prometheus_client's collector)
``python_info``                         the Python running the server
======================================  ====================================================
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from typing import ClassVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric

from seamline.contracts import BatchDone, ComponentConfig, Event, Monitor

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
TOKEN_BUCKETS = (16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


class ServeMetrics:
    """Every instrument, in one registry of its own."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        # The process's own (RSS, CPU, open fds against the limit): a registry of our own
        # left out what the default one has, and a leak or an fd exhaustion went unseen.
        registry.register(PROCESS_COLLECTOR)
        registry.register(PLATFORM_COLLECTOR)
        self.requests = Counter(
            "seamline_serve_requests",
            "Requests answered, by endpoint and HTTP status.",
            ["endpoint", "status"],
            registry=registry,
        )
        # Refused before an endpoint saw them (the Host/Origin guard, the router): by the
        # error's code, a fixed few, never by path (any client could add series).
        self.refused = Counter(
            "seamline_serve_refused",
            "Requests refused before reaching an endpoint, by error code.",
            ["code"],
            registry=registry,
        )
        self.latency = Histogram(
            "seamline_serve_request_seconds",
            "Seconds from a request's arrival to its answer, by endpoint.",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.queue_texts = Gauge(
            "seamline_serve_queue_texts", "Texts accepted and not yet answered.", registry=registry
        )
        self.queue_requests = Gauge(
            "seamline_serve_queue_requests",
            "Embedding requests accepted and not yet answered.",
            registry=registry,
        )
        self.texts = Counter("seamline_serve_texts", "Texts embedded.", registry=registry)
        self.tokens = Counter(
            "seamline_serve_tokens", "Tokens embedded (the answers' usage).", registry=registry
        )
        self.batch_examples = Histogram(
            "seamline_serve_batch_examples",
            "Windows per batch.",
            buckets=SIZE_BUCKETS,
            registry=registry,
        )
        self.batch_tokens = Histogram(
            "seamline_serve_batch_tokens",
            "Real tokens per batch (padding not counted).",
            buckets=TOKEN_BUCKETS,
            registry=registry,
        )
        self.batch_seconds = Histogram(
            "seamline_serve_batch_seconds",
            "Seconds a batch took through the model.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.cancelled = Counter(
            "seamline_serve_cancelled",
            "Requests whose client went away before all their texts were taken (dropped).",
            registry=registry,
        )
        self.ready = Gauge(
            "seamline_serve_ready", "1 once the model is warm, else 0.", registry=registry
        )
        self.warm = False
        """Set by the engine once its warm-up embedding is done: the batches before are the
        warm-up's, not served ones (:class:`BatchMetrics` leaves them out)."""

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        return generate_latest(_WithoutCreated(self.registry))

    def answer(self, accept: str = "", accept_encoding: str = "") -> tuple[bytes, dict[str, str]]:
        """The body and headers of ``GET /metrics`` for a scraper's ``Accept`` and
        ``Accept-Encoding``: OpenMetrics when it asks for ``application/openmetrics-text``
        (as Prometheus does first), gzipped when it accepts gzip. The text format was
        sent whatever was asked, uncompressed."""
        if "application/openmetrics-text" in accept:
            encoder, content_type = choose_encoder(accept)
            body = encoder(_WithoutCreated(self.registry))
        else:
            body, content_type = self.exposition(), CONTENT_TYPE_LATEST
        headers = {"content-type": content_type, "vary": "Accept, Accept-Encoding"}
        if accepts_gzip(accept_encoding):
            body = gzip.compress(body, compresslevel=6)
            headers["content-encoding"] = "gzip"
        return body, headers


class _WithoutCreated:
    """The registry's families without their ``*_created`` samples.

    prometheus_client adds a ``_created`` series (a Unix time) to every counter and
    histogram: twice the series for nothing a dashboard uses. Its own switch
    (``disable_created_metrics``) is process-wide; this leaves other registries alone.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Metric]:
        for family in self.registry.collect():
            family.samples = [s for s in family.samples if not s.name.endswith("_created")]
            yield family


class BatchMetrics(Monitor[ComponentConfig]):
    """A monitor of the server's embedder: each served ``BatchDone`` into the batch histograms.

    The warm-up's batch is left out: before any request, ``/metrics`` counted one batch
    whose seconds were the first compilation's, which skewed the histograms of a server
    that had served nothing. The engine leads the warm-up itself, and the hub hands each
    event over before ``encode`` returns, so every batch before ``ServeMetrics.warm`` is
    the warm-up's.
    """

    name: ClassVar[str] = "serve-metrics"
    contract_version: ClassVar[str] = "1.0"
    Config = ComponentConfig

    def __init__(self, metrics: ServeMetrics) -> None:
        super().__init__(ComponentConfig())
        self.metrics = metrics

    def observe(self, event: Event) -> None:
        if isinstance(event, BatchDone) and self.metrics.warm:
            self.metrics.batch_examples.observe(event.examples)
            self.metrics.batch_tokens.observe(event.tokens)
            self.metrics.batch_seconds.observe(event.seconds)


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether ``Accept-Encoding`` accepts gzip: named (or ``*``) with a weight above 0.

    ``gzip;q=0`` says "not gzip" (RFC 9110), and was answered gzipped all the same."""
    weights: dict[str, float] = {}
    for item in accept_encoding.lower().split(","):
        coding, *params = (part.strip() for part in item.split(";"))
        weight = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if coding:
            weights[coding] = weight
    return weights.get("gzip", weights.get("x-gzip", weights.get("*", 0.0))) > 0
