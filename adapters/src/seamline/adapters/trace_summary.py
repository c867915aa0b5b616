"""``seamline trace summarize``: where a run's time went, from a jsonl trace.

Reads the file the ``jsonl`` span exporter writes (one span per line) and
aggregates by span name: how many, total, median and 95th percentile duration,
and the share of the run (the total duration of the root spans, ``seamline.run``
for a seamline run). Seam spans can overlap (the loader and ``prepare`` run in the
producer thread while the device computes), so shares need not add up to 100 %.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamline.contracts import UserError
from seamline.contracts.untrusted import (
    LineTooLong,
    NotRegularFile,
    bounded_lines,
    cut,
    open_regular,
)


@dataclass(frozen=True, slots=True)
class SpanStats:
    """The spans of one name."""

    name: str
    count: int
    total: float
    """Seconds, all spans of this name together."""
    median: float
    p95: float
    share: float
    """``total`` over the run's duration (0 when there is no root span)."""
    errors: int = 0


@dataclass(frozen=True, slots=True)
class TraceSummary:
    path: Path
    spans: int
    run_seconds: float
    """The root spans' durations together."""
    rows: list[SpanStats]


MAX_LINE_BYTES = 16 << 20
"""The longest line read (16 MiB): a span is a line of a few hundred bytes; a longer line
is no span, and is refused without being read whole."""

MAX_NS = 1 << 64
"""Span times are unsigned 64-bit nanoseconds (OpenTelemetry's); a larger integer is no
time, and overflowed the conversion to seconds."""


def read_spans(path: Path) -> list[dict[str, Any]]:
    """Every span in a jsonl trace; a problem is a ``UserError`` naming ``file:line``.

    The file is anyone's: it is read as a regular file, a line at a time within
    :data:`MAX_LINE_BYTES`, and each line is checked before it is used.
    """
    if not path.exists():
        raise UserError(
            f"{path} does not exist: write a trace with OTEL_TRACES_EXPORTER=jsonl "
            "SEAMLINE_TRACES_FILE=PATH seamline run ..."
        )
    if not path.is_file():
        raise UserError(f"{path} is not a file")
    try:
        with open_regular(path) as handle:
            spans = [
                _span(line, f"{path}:{n}") for n, line in bounded_lines(handle, MAX_LINE_BYTES)
            ]
    except NotRegularFile as err:
        raise UserError(f"{path} is not a file ({err})") from None
    except OSError as err:
        raise UserError(f"{path} cannot be read: {err.strerror or err}") from None
    except LineTooLong as err:
        raise UserError(
            f"{path}:{err.number}: a line longer than {MAX_LINE_BYTES:,} bytes; a span is one "
            "short JSON line: is this a trace written by the jsonl span exporter?"
        ) from None
    if not spans:
        raise UserError(f"{path} holds no spans")
    return spans


def _span(line: bytes, where: str) -> dict[str, Any]:
    """One line as a span, or a ``UserError`` at ``where`` (``file:line``)."""
    text = line.decode("utf-8", errors="replace")
    try:
        span = json.loads(text)
    except (ValueError, RecursionError) as err:  # a 5,000-digit number; arrays nested deep
        if isinstance(err, RecursionError):
            reason = "nested too deeply"
        else:
            reason = err.msg if isinstance(err, json.JSONDecodeError) else cut(str(err))
        raise UserError(f"{where}: not a JSON line: {reason}") from None
    if not isinstance(span, dict):
        raise UserError(f"{where}: expected a JSON object (one span), got {text[:40]!r}")
    for key, kind in (("name", str), ("start_ns", int), ("end_ns", int)):
        if not isinstance(span.get(key), kind):
            raise UserError(
                f"{where}: span field {key!r} is missing or not a {kind.__name__}; "
                "is this a trace written by the jsonl span exporter?"
            )
    for key in ("start_ns", "end_ns"):
        if not 0 <= span[key] < MAX_NS:
            raise UserError(
                f"{where}: span field {key!r} is {cut(str(span[key]), 40)}, not a time in "
                "nanoseconds (0 to 2**64 - 1)"
            )
    return span


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted ``values``."""
    return values[max(0, math.ceil(fraction * len(values)) - 1)]


def summarize(path: Path) -> TraceSummary:
    spans = read_spans(path)
    durations: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    run_seconds = 0.0
    for span in spans:
        seconds = max(0, span["end_ns"] - span["start_ns"]) / 1e9
        durations[span["name"]].append(seconds)
        status = span.get("status")
        if isinstance(status, dict) and status.get("code") == "ERROR":
            errors[span["name"]] += 1
        if not span.get("parent_span_id"):
            run_seconds += seconds
    rows = []
    for name, values in durations.items():
        values.sort()
        total = sum(values)
        rows.append(
            SpanStats(
                name=name,
                count=len(values),
                total=total,
                median=statistics.median(values),
                p95=percentile(values, 0.95),
                share=total / run_seconds if run_seconds else 0.0,
                errors=errors[name],
            )
        )
    rows.sort(key=lambda row: (-row.total, row.name))
    return TraceSummary(path, len(spans), run_seconds, rows)
