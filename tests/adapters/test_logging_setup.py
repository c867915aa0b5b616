"""Log rendering: JSON lines off a terminal, console lines on one, trace ids inside a span,
and standard-library logging from dependencies through the same processors."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest
import structlog
from opentelemetry import trace

from seamline.adapters.logging_setup import configure_logging
from seamline.adapters.telemetry_setup import tracer_provider


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    tracer_provider()  # an SDK provider, so spans have valid ids
    yield
    structlog.reset_defaults()
    logging.getLogger().handlers.clear()


def test_json_lines_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    configure_logging(stream=stream)
    structlog.get_logger("seamline.test").info("hello", n=1)
    line = json.loads(stream.getvalue())
    assert line["event"] == "hello"
    assert line["n"] == 1
    assert line["level"] == "info"
    assert line["logger"] == "seamline.test"
    assert "timestamp" in line
    assert "trace_id" not in line  # outside any span


def test_console_lines_on_a_terminal() -> None:
    stream = _Terminal()
    configure_logging(stream=stream)
    structlog.get_logger("seamline.test").warning("hello", n=1)
    text = re.sub(r"\x1b\[[0-9;]*m", "", stream.getvalue())  # colours on a terminal
    assert "[warning" in text
    assert "hello" in text
    assert "n=1" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_every_line_inside_a_span_carries_trace_and_span_ids() -> None:
    stream = io.StringIO()
    configure_logging(stream=stream)
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("outer"), tracer.start_as_current_span("inner") as inner:
        structlog.get_logger("seamline.test").info("inside")
    line = json.loads(stream.getvalue())
    context = inner.get_span_context()
    assert line["trace_id"] == format(context.trace_id, "032x")
    assert line["span_id"] == format(context.span_id, "016x")


def test_standard_library_logging_goes_through_the_same_processors() -> None:
    stream = io.StringIO()
    configure_logging(stream=stream)
    with trace.get_tracer("test").start_as_current_span("outer") as span:
        logging.getLogger("some.dependency").warning("disk %s is %d%% full", "/tmp", 93)
    line = json.loads(stream.getvalue())
    assert line["event"] == "disk /tmp is 93% full"
    assert line["level"] == "warning"
    assert line["logger"] == "some.dependency"
    assert "timestamp" in line
    assert line["trace_id"] == format(span.get_span_context().trace_id, "032x")
    assert line["span_id"] == format(span.get_span_context().span_id, "016x")


def test_the_level_filters_both_structlog_and_standard_library_lines() -> None:
    stream = io.StringIO()
    configure_logging(stream=stream, level="warning")
    structlog.get_logger("seamline.test").info("dropped")
    logging.getLogger("some.dependency").info("dropped too")
    structlog.get_logger("seamline.test").warning("kept")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["kept"]


@pytest.mark.parametrize("stream", [io.StringIO(), _Terminal()], ids=["piped", "terminal"])
def test_console_lines_show_control_characters_of_values_as_replacements(
    stream: io.StringIO,
) -> None:
    # `--log-format console 2>&1 | cat -v` printed `doc_id=bad^[[31mred` from a hostile id:
    # a saved log replayed the escape on whoever read it.
    configure_logging(json=False, stream=stream)
    structlog.get_logger("seamline.test").warning(
        "document failed", doc_id="bad\x1b[31mred\u202e", reason="line 1\nline 2\tend"
    )
    text = stream.getvalue()
    assert "bad\ufffd[31mred\ufffd" in text
    assert "'line 1\\nline 2\\tend'" in text  # as the renderer quotes it, line breaks kept
    shown = re.sub(r"\x1b\[[0-9;]*m", "", text)  # the renderer's own colours, on a terminal
    assert "\x1b" not in shown
    assert "\u202e" not in shown
    logging.getLogger().handlers.clear()
    piped = io.StringIO()
    configure_logging(json=True, stream=piped)
    structlog.get_logger("seamline.test").warning("document failed", doc_id="bad\x1b[31m")
    assert json.loads(piped.getvalue())["doc_id"] == "bad\x1b[31m", "JSON escapes it already"
