"""OpenTelemetry's own warnings quote the exporters' credentials; seamline's logs do not.

A header written ``authorization:Bearer <token>`` (``:`` for ``=``) was logged whole by
OpenTelemetry, and every retry to a receiver that does not answer logged the endpoint's
query (``?token=...``): into the JSON logs users ship to aggregators.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from seamline.adapters.exporter_secrets import exporter_secrets
from seamline.adapters.logging_setup import configure_logging


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    yield stream
    logging.getLogger().handlers.clear()


def test_a_malformed_header_quoted_by_opentelemetry_is_logged_without_its_value(
    monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization:Bearer HDRSECRET42")
    configure_logging(json=True, stream=log_lines)
    OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces")  # parses the headers, warns
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    invalid = [line for line in lines if "Header format invalid" in line["event"]]
    assert invalid, lines  # the warning is still there, for the user to mend the header
    assert "HDRSECRET42" not in log_lines.getvalue()
    assert "<$OTEL_EXPORTER_OTLP_HEADERS>" in invalid[0]["event"]


def test_an_endpoint_s_query_and_password_and_a_traceback_are_hidden(
    monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    monkeypatch.setenv(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "http://me:PASSWORD9@127.0.0.1:9/v1/traces?token=QSECRET",
    )
    configure_logging(json=True, stream=log_lines)
    exporter_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    exporter_log.warning("Transient error with url: /v1/traces?token=QSECRET, retrying")
    try:
        raise ConnectionError("http://me:PASSWORD9@127.0.0.1:9 refused")
    except ConnectionError:
        exporter_log.exception("Failed to export spans batch")
    text = log_lines.getvalue()
    assert "QSECRET" not in text
    assert "PASSWORD9" not in text
    assert "<$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT>" in text
    assert "ConnectionError" in text, "the traceback is kept, without the secret"


def test_what_is_looked_for() -> None:
    found = exporter_secrets(
        {
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "api-key=abc%20def,x=1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "HOME": "/root",
        }
    )
    assert found["abc%20def"] == found["abc def"] == "<$OTEL_EXPORTER_OTLP_METRICS_HEADERS>"
    assert "1" not in found, "too short to look for"
    assert not any(name.endswith("_ENDPOINT>") for name in found.values()), "nothing secret"
    assert "/root" not in found


def test_the_pipeline_file_s_endpoint_is_hidden_once_the_pipeline_is_known(
    monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    """A trusted ``${TOKEN}`` in ``telemetry.otlp_endpoint`` was logged in clear by every
    retry (and urllib3's debug line), while the same URL from the environment was hidden:
    logging is set up before the pipeline, and only the environment was looked at."""
    from seamline.adapters import exporter_secrets as module
    from seamline.adapters.telemetry_setup import configure_telemetry, shutdown_telemetry
    from seamline.core import TelemetrySettings

    monkeypatch.setattr(module, "_learned", {}, raising=False)
    configure_logging(json=True, stream=log_lines)  # first, as the CLI does
    endpoint = "http://me:PASSWORD8@127.0.0.1:9/collector?token=FILESECRET7"
    configure_telemetry(TelemetrySettings(traces=["otlp"], otlp_endpoint=endpoint), {})
    try:
        exporter_log = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")
        exporter_log.warning("Transient error with url: /collector/v1/traces?token=FILESECRET7")
        logging.getLogger("urllib3.connectionpool").warning(
            '"POST /collector/v1/traces?token=FILESECRET7 HTTP/1.1" 200 0 (me:PASSWORD8)'
        )
    finally:
        shutdown_telemetry()
    text = log_lines.getvalue()
    assert "FILESECRET7" not in text
    assert "PASSWORD8" not in text
    assert text.count("<telemetry.otlp_endpoint>") >= 2


def test_a_token_in_the_file_s_endpoint_path_or_percent_encoded_is_hidden_too(
    monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO
) -> None:
    """``http://host/${TOKEN}/collector`` (pipelines.md's own shape) was logged by urllib3
    as ``POST /<token>/collector/v1/traces``; a query token with ``ö`` or ``"`` as the HTTP
    library encodes it (``t%C3%B6ken``), past the plain text that was looked for."""
    from seamline.adapters import exporter_secrets as module

    monkeypatch.setattr(module, "_learned", {}, raising=False)
    configure_logging(json=True, stream=log_lines)
    module.hide_endpoint(
        'http://127.0.0.1:9/PATHSECRET9/collector?token=tökenSECRET"5', "telemetry.otlp_endpoint"
    )
    pool = logging.getLogger("urllib3.connectionpool")
    pool.warning('"POST /PATHSECRET9/collector/v1/traces HTTP/1.1" 503 0')
    pool.warning('"POST /c/v1/traces?token=t%C3%B6kenSECRET%225 HTTP/1.1" 503 0')
    text = log_lines.getvalue()
    assert "PATHSECRET9" not in text
    assert "kenSECRET" not in text, text
