"""The ``log`` monitor: one structured line per notable event, through structlog."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import pytest
import structlog
from pydantic import ValidationError
from structlog.testing import capture_logs

from seamline.components.monitors.log import LogMonitor, LogMonitorConfig
from seamline.contracts import (
    Alert,
    AttentionChosen,
    BatchDone,
    Compiled,
    DocumentFailed,
    Fallback,
    RunFinished,
    RunStarted,
    SeamCall,
    ShadowCompared,
    Verified,
)


@pytest.fixture(autouse=True)
def _default_structlog() -> None:
    """structlog as installed: the CLI configures it process-wide (filtering below INFO),
    and a test that ran it earlier in the session would otherwise drop the debug lines
    these tests look for."""
    structlog.reset_defaults()


def observe(*events: Any, **options: Any) -> list[dict[str, Any]]:
    """The log entries a fresh monitor writes for ``events``."""
    with capture_logs() as logs:
        monitor = LogMonitor(LogMonitorConfig(**options))
        for event in events:
            monitor.observe(event)
    return [dict(entry) for entry in logs]


def one(event: Any, **options: Any) -> dict[str, Any]:
    (entry,) = observe(event, **options)
    return entry


def batch(index: int, *, tokens: int = 512, seconds: float = 0.25) -> BatchDone:
    return BatchDone(
        index=index, length=128, examples=4, tokens=tokens, seconds=seconds, documents=9 + index
    )


def finished(*, ok: bool = True, seconds: float = 2.0) -> RunFinished:
    return RunFinished(
        run_id="r1",
        documents=10,
        failed_documents=1,
        examples=12,
        tokens=1000,
        batches=3,
        compilations=2,
        seconds=seconds,
        ok=ok,
    )


def test_monitor_declares_itself_and_is_registered() -> None:
    assert LogMonitor.name == "log"
    assert LogMonitor.kind == "monitor"
    assert LogMonitor.contract_version == "1.6"
    registered = {ep.name: ep for ep in entry_points(group="seamline.monitor")}
    assert registered["log"].load() is LogMonitor
    for field in LogMonitorConfig.model_fields.values():
        assert field.description


def test_run_started() -> None:
    entry = one(RunStarted(run_id="r1", pipeline="embed", components={"loader": "text-files"}))
    assert entry == {
        "event": "run started",
        "log_level": "info",
        "run_id": "r1",
        "pipeline": "embed",
        "components": {"loader": "text-files"},
    }


def test_attention_chosen_lists_rejections_and_reasons() -> None:
    entry = one(
        AttentionChosen(
            signature="b8-t128-f32",
            chosen="native",
            reason="first candidate that supports the shape",
            rejected={"tpu-flash": ("platform is cpu, not tpu",)},
        )
    )
    assert entry["event"] == "attention chosen"
    assert entry["log_level"] == "info"
    assert entry["chosen"] == "native"
    assert entry["signature"] == "b8-t128-f32"
    assert entry["reason"] == "first candidate that supports the shape"
    assert entry["rejected"] == {"tpu-flash": ["platform is cpu, not tpu"]}


def test_compiled() -> None:
    entry = one(Compiled(length=256, batch_size=8, seconds=1.23456))
    assert entry == {
        "event": "compiled",
        "log_level": "info",
        "length": 256,
        "batch_size": 8,
        "seconds": 1.235,
    }


def test_batch_done_reports_throughput() -> None:
    entry = one(batch(0))
    assert entry == {
        "event": "batch done",
        "log_level": "info",
        "batch": 0,
        "length": 128,
        "examples": 4,
        "tokens": 512,
        "seconds": 0.25,
        "tokens_per_s": 2048.0,
        "documents": 9,
    }


def test_batch_done_with_no_measured_time_has_no_rate() -> None:
    assert one(batch(0, seconds=0.0))["tokens_per_s"] is None


def test_every_nth_batch_is_logged() -> None:
    logs = observe(*(batch(i) for i in range(8)), every=3)
    assert [entry["batch"] for entry in logs] == [0, 3, 6]


def test_batch_counting_restarts_with_each_run() -> None:
    start = RunStarted(run_id="r", pipeline="p", components={})
    logs = observe(start, batch(0), batch(1), start, batch(0), batch(1), every=2)
    assert [entry.get("batch") for entry in logs] == [None, 0, None, 0]


def test_problems_are_warnings() -> None:
    logs = observe(
        DocumentFailed(doc_id="bad.txt", reason="not valid utf-8", stage="load"),
        Fallback(seam="attention", failed="tpu-flash", replacement="native", reason="boom"),
        Alert(source="memory", message="rss above limit", attributes={"rss_mb": 900}),
    )
    assert [entry["log_level"] for entry in logs] == ["warning"] * 3
    failed, fallback, alert = logs
    assert failed == {
        "event": "document failed",
        "log_level": "warning",
        "doc_id": "bad.txt",
        "stage": "load",
        "reason": "not valid utf-8",
    }
    assert fallback == {
        "event": "fallback",
        "log_level": "warning",
        "seam": "attention",
        "failed": "tpu-flash",
        "replacement": "native",
        "reason": "boom",
    }
    assert alert == {
        "event": "alert",
        "log_level": "warning",
        "source": "memory",
        "detail": "rss above limit",
        "attributes": {"rss_mb": 900},
    }


def test_run_finished_summary() -> None:
    entry = one(finished())
    assert entry == {
        "event": "run finished",
        "log_level": "info",
        "run_id": "r1",
        "ok": True,
        "documents": 10,
        "failed": 1,
        "examples": 12,
        "tokens": 1000,
        "batches": 3,
        "compilations": 2,
        "seconds": 2.0,
        "docs_per_s": 5.0,
        "tokens_per_s": 500.0,
    }


def test_failed_run_finished_is_a_warning() -> None:
    entry = one(finished(ok=False, seconds=0.0))
    assert entry["log_level"] == "warning"
    assert entry["ok"] is False
    assert entry["docs_per_s"] is None


def test_debug_level_applies_to_routine_lines_only() -> None:
    logs = observe(
        batch(0),
        finished(),
        DocumentFailed(doc_id="d", reason="r", stage="prepare"),
        level="debug",
    )
    assert [entry["log_level"] for entry in logs] == ["debug", "debug", "warning"]


@dataclass(frozen=True)
class FutureEvent:
    """An event type from a newer contract minor version."""

    detail: str


def test_unknown_and_unlogged_events_are_ignored() -> None:
    seam_call = SeamCall(kind="loader", name="text-files", operation="read", seconds=0.1)
    assert observe(FutureEvent("new"), seam_call, object(), None) == []


def test_monitor_does_not_configure_structlog() -> None:
    before = structlog.get_config()
    LogMonitor(LogMonitorConfig()).observe(batch(0))
    assert structlog.get_config() == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"every": 0}, "at least 1"),
        ({"level": "warning"}, "'debug' or 'info'"),
        ({"verbose": True}, "Extra inputs are not permitted"),
    ],
)
def test_config_is_validated(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LogMonitorConfig(**options)


def test_verification_and_shadow_lines() -> None:
    monitor = LogMonitor(LogMonitorConfig())
    with capture_logs() as logs:
        monitor.observe(Verified("sig", "blockwise", "native", 1e-6, 2e-3, True))
        monitor.observe(Verified("sig", "bad", "native", 0.3, 2e-3, False))
        monitor.observe(ShadowCompared("sig", "blockwise", "native", 4, 1e-6, 2e-3, True))
        monitor.observe(ShadowCompared("sig", "bad", "native", 8, 0.3, 2e-3, False))
    levels = [(line["event"], line["log_level"]) for line in logs]
    assert levels == [
        ("verified against the reference", "info"),
        ("failed verification against the reference", "warning"),
        ("shadow comparison", "info"),
        ("shadow comparison breached the tolerance", "warning"),
    ]


def test_it_observes_the_types_it_logs_and_not_seam_calls() -> None:
    from seamline.contracts import BatchDone, RunFinished, SeamCall, SeamStarted

    observed = LogMonitor(LogMonitorConfig()).observes
    assert BatchDone in observed
    assert RunFinished in observed
    assert SeamCall not in observed  # one per seam call: the host never hands it one
    assert SeamStarted not in observed


def test_a_failed_documents_line_cuts_what_it_repeats_of_the_input() -> None:
    # A failed document with a 1 MiB id was a log line of 1,048,877 bytes.
    huge = "i" * 1_048_576
    (failed,) = observe(DocumentFailed(doc_id=huge, reason=f"duplicate id {huge!r}", stage="load"))
    assert failed["doc_id"] == "i" * 256 + "... (1,048,576 characters)"
    assert failed["reason"].startswith("duplicate id 'iii")
    assert failed["reason"].endswith("... (1,048,591 characters)")
    assert len(failed["reason"]) < 1100
