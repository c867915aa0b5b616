"""``/metrics`` counts the batches the server served, not its warm-up's.

Before any request, ``seamline_serve_batch_examples_count`` was 1 and
``seamline_serve_batch_seconds_sum`` the first compilation's time: the warm-up embedding
went into the histograms of a server that had served nothing.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.guard import Guard
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import BatchMetrics, ServeMetrics
from seamline.core.embedder import Embedder
from seamline.core.registry import Registry
from tests.adapters.in_process import ReadyEngine
from tests.adapters.serving import pipeline_text


def batch_counts(metrics: ServeMetrics) -> dict[str, float]:
    text = metrics.exposition().decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("seamline_serve_batch_") and not sample.labels
    }


def test_the_warm_up_is_not_a_served_batch(tmp_path: Path, tiny_registry: Registry) -> None:
    (tmp_path / "pipeline.yaml").write_text(pipeline_text(), encoding="utf-8")
    metrics = ServeMetrics()
    embedder = Embedder.from_pipeline(
        tmp_path / "pipeline.yaml", registry=tiny_registry, monitors=[BatchMetrics(metrics)]
    )
    engine = Engine(embedder, Limits(), metrics)
    failures: list[BaseException] = []
    engine.start(failures.append)
    try:
        deadline = time.monotonic() + 60
        while engine.state == "loading" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine.state == "ready", failures
        warm = batch_counts(metrics)
        assert warm["seamline_serve_batch_examples_count"] == 0, "the warm-up is not served"
        assert warm["seamline_serve_batch_seconds_sum"] == 0
        embedder.submit(["served text"]).result()
        served = batch_counts(metrics)
        assert served["seamline_serve_batch_examples_count"] == 1
        assert served["seamline_serve_batch_examples_sum"] == 1
    finally:
        engine.stop()


def scrape(accept: str = "", encoding: str = "") -> httpx.Response:
    metrics = ServeMetrics()
    metrics.requests.labels("embeddings", "200").inc()
    metrics.batch_tokens.observe(20_000)
    engine: Any = ReadyEngine()
    index: Any = None
    app = build_app(Served(engine, index, Limits(), metrics, "m"))

    async def scenario() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            headers = {"accept": accept, "accept-encoding": encoding}
            return await client.get("/metrics", headers=headers)

    return asyncio.run(scenario())


def test_metrics_answer_what_the_scraper_accepts() -> None:
    """The text format was sent whatever the scraper asked, uncompressed, with a
    ``*_created`` series beside every counter and histogram."""
    plain = scrape()
    assert plain.headers["content-type"].startswith("text/plain")
    assert "content-encoding" not in plain.headers
    assert 'seamline_serve_requests_total{endpoint="embeddings",status="200"} 1.0' in plain.text
    assert "_created" not in plain.text
    assert 'seamline_serve_batch_tokens_bucket{le="32768.0"} 1.0' in plain.text

    open_metrics = scrape("application/openmetrics-text;version=1.0.0,text/plain;q=0.5", "gzip")
    assert open_metrics.headers["content-type"].startswith("application/openmetrics-text")
    assert open_metrics.headers["content-encoding"] == "gzip"  # httpx decoded it
    assert open_metrics.text.endswith("# EOF\n")
    assert "_created" not in open_metrics.text
    families = list(text_string_to_metric_families(plain.text))
    assert {family.name for family in families} >= {"seamline_serve_requests"}


def test_the_process_s_own_metrics_are_served() -> None:
    # /metrics had no RSS, CPU or open file descriptors: a registry of the server's own
    # left out what prometheus_client's default one collects.
    names = {
        line.split("{")[0].split(" ")[0]
        for line in ServeMetrics().exposition().decode().splitlines()
        if line and not line.startswith("#")
    }
    assert "python_info" in names
    if Path("/proc/self/stat").exists():  # the process collector reads /proc (Linux)
        for name in (
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_max_fds",
        ):
            assert name in names
    assert ServeMetrics().exposition()  # two registries share the collectors


@pytest.mark.parametrize(
    ("encoding", "gzipped"),
    [
        ("gzip;q=0", False),
        ("gzip; q=0.0, identity", False),
        ("*;q=0", False),
        ("br, gzip;q=0.5", True),
        ("*", True),
        ("identity", False),
    ],
)
def test_gzip_refused_by_its_weight_is_not_sent(encoding: str, gzipped: bool) -> None:
    # `Accept-Encoding: gzip;q=0` says "not gzip" (RFC 9110): it was gzipped all the same.
    answer = scrape("", encoding)
    assert ("content-encoding" in answer.headers) == gzipped
    assert "seamline_serve_requests_total" in answer.text


def test_refusals_before_any_endpoint_are_counted() -> None:
    # A rebound page's requests (403 host_not_allowed), a browser's (origin_not_allowed),
    # and unknown paths or methods were answered but counted nowhere: /metrics showed a
    # server that had refused nothing.
    metrics = ServeMetrics()
    engine: Any = ReadyEngine()
    index: Any = None
    app = build_app(Served(engine, index, Limits(), metrics, "m"), guard=Guard.for_address("::1"))

    async def scenario() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            answers = [
                await client.post("/v1/embeddings", headers={"host": "rebound.example"}),
                await client.post("/v1/search", headers={"host": "rebound.example"}),
                await client.post("/v1/search", headers={"origin": "https://page.example"}),
                await client.get("/no/such/path"),
                await client.get("/v1/embeddings"),
            ]
            return [answer.status_code for answer in answers]

    assert asyncio.run(scenario()) == [403, 403, 403, 404, 405]
    counted = {
        sample.labels["code"]: sample.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for sample in family.samples
        if sample.name == "seamline_serve_refused_total"
    }
    assert counted == {
        "host_not_allowed": 2,
        "origin_not_allowed": 1,
        "not_found": 1,
        "method_not_allowed": 1,
    }
