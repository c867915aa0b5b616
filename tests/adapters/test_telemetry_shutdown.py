"""Who ends the telemetry providers: seamline, once, where a stop is told like any other."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
import structlog.testing
from opentelemetry.sdk.trace import SpanProcessor

# A process as `seamline run` is at its end: metrics exported to a receiver that answers
# slowly, the command's block catching a stop (here a bare one: interrupted, exit 130).
SLOW_EXPORT = """
import sys, time
from opentelemetry import metrics
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult
from seamline.adapters import telemetry_setup

class Slow(MetricExporter):
    def export(self, metrics_data, timeout_millis=10_000, **kwargs):
        print("exported", file=sys.stderr, flush=True)
        time.sleep(float(sys.argv[1]))
        return MetricExportResult.SUCCESS
    def force_flush(self, timeout_millis=10_000):
        return True
    def shutdown(self, timeout_millis=30_000, **kwargs):
        pass

telemetry_setup.metric_exporters = lambda config: [Slow()]
telemetry_setup.configure_telemetry(environ={"OTEL_METRICS_EXPORTER": "console"})
metrics.get_meter("t").create_counter("documents").add(1)
print("ready", file=sys.stderr, flush=True)
try:
    telemetry_setup.shutdown_telemetry()
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr, flush=True)
    sys.exit(130)
"""


def _run(sleep: float, interrupt: bool) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_EXPORT, str(sleep)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines = []
    try:
        if interrupt:
            for line in process.stderr:
                lines.append(line)
                if line.startswith("exported"):
                    break
            time.sleep(0.3)
            process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=60)[1]
    finally:
        process.kill()
        process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, "", "".join(lines) + rest)


def test_the_metrics_are_exported_once_at_the_end() -> None:
    """shutdown_telemetry flushed the metrics, and the SDK's atexit handler exported them
    again: a receiver that never answers cost its timeout twice."""
    done = _run(0, interrupt=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("exported") == 1, done.stderr


def test_a_stop_in_the_final_export_is_told_by_the_command_and_ends_it() -> None:
    """Ctrl-C while the metrics were exported at exit printed "Exception ignored in atexit
    callback: <bound method MeterProvider.shutdown ...> Traceback ... KeyboardInterrupt",
    exit code 0; with SIGTERM, "shutdown can only be called once"."""
    done = _run(30, interrupt=True)
    assert done.returncode == 130, done.stderr
    assert "interrupted" in done.stderr
    assert done.stderr.count("exported") == 1, done.stderr
    for said in ("Traceback", "Exception ignored", "can only be called once"):
        assert said not in done.stderr, done.stderr


def test_a_slow_last_export_says_where_it_is_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collector that did not answer held the command 22 to 55 s after its work, with
    nothing said until the SDK's own error lines."""
    from seamline.adapters import telemetry_setup

    class Slow(SpanProcessor):
        def shutdown(self) -> None:
            time.sleep(0.5)

    monkeypatch.setattr(telemetry_setup, "SLOW_EXIT_S", 0.05)
    environ = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:secret@127.0.0.1:9/base?key=k",
    }
    telemetry_setup.configure_telemetry(environ=environ)
    telemetry_setup._exporting.processors = (Slow(),)
    with structlog.testing.capture_logs() as logs:
        telemetry_setup.shutdown_telemetry()
    (line,) = [line for line in logs if "sending telemetry" in line["event"]]
    assert line["event"].startswith("sending telemetry to http://127.0.0.1:9: waiting")
    assert "OTEL_EXPORTER_OTLP_TIMEOUT" in line["event"]
    telemetry_setup.configure_telemetry(environ={})
    with structlog.testing.capture_logs() as logs:
        telemetry_setup.shutdown_telemetry()  # quick: nothing said
    assert not [line for line in logs if "sending telemetry" in line["event"]]
