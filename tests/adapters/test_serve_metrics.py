"""``/metrics`` counts the batches the server served, not its warm-up's.

Before any request, ``seamline_serve_batch_examples_count`` was 1 and
``seamline_serve_batch_seconds_sum`` the first compilation's time: the warm-up embedding
went into the histograms of a server that had served nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import BatchMetrics, ServeMetrics
from seamline.core.embedder import Embedder
from seamline.core.registry import Registry
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
