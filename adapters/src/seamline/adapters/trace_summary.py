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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seamline.contracts import UserError
from seamline.contracts.untrusted import (
    LineTooLong,
    NotRegularFile,
    bounded_lines,
    cut,
    open_regular,
)
from seamline.contracts.workdir import gone_under


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
    backwards: int = 0
    """Spans that end before they start (a wall clock set back), shown as 0 s."""
    roots: int = 1
    """Spans whose parent is not in the file (none, or a caller's span, as under
    ``TRACEPARENT``): with none (parents in a cycle) there is no run to take shares of."""

    def warnings(self) -> list[str]:
        """What the table shows as 0 and why: without a word, a trace whose spans all ended
        before they started read as a run of 0.000 s, one whose parents formed a cycle as
        a run where every seam took 0 %."""
        said = []
        if self.backwards:
            one = self.backwards == 1
            said.append(
                f"{self.backwards} span{'' if one else 's'} end{'s' if one else ''} before "
                f"{'it starts; its time is' if one else 'they start; their times are'} shown as 0"
            )
        if not self.roots:
            said.append(
                "no root span (every span's parent is in the file: the parents form a "
                "cycle): the run is shown as 0 s and every share as 0 %"
            )
        return said


MAX_LINE_BYTES = 16 << 20
"""The longest line read (16 MiB): a span is a line of a few hundred bytes; a longer line
is no span, and is refused without being read whole."""

MAX_NS = 1 << 64
"""Span times are unsigned 64-bit nanoseconds (OpenTelemetry's); a larger integer is no
time, and overflowed the conversion to seconds."""


@dataclass(frozen=True, slots=True)
class TimedSpan:
    """What the summary needs of one span; the rest of its line (attributes, events) is
    not kept: a 222 MB trace of 264,000 spans took 1.17 GB held whole as dictionaries."""

    name: str
    seconds: float
    error: bool
    span_id: str
    """``trace_id/span_id``: a parent is looked for within its own trace."""
    parent: str | None
    """The parent's ``trace_id/span_id``; None for a span without one."""
    backwards: bool = False
    """It ends before it starts: its ``seconds`` are 0."""


def read_spans(path: Path) -> Iterator[TimedSpan]:
    """Each span of a jsonl trace, read as it is needed; a problem is a ``UserError``
    naming ``file:line``.

    The file is anyone's: it is read as a regular file, a line at a time within
    :data:`MAX_LINE_BYTES`, and each line is checked before it is used.
    """
    if not path.exists():
        gone_under(path)  # from a deleted folder: cd again, though the name may exist
        raise UserError(
            f"{path} does not exist: write a trace with OTEL_TRACES_EXPORTER=jsonl "
            "SEAMLINE_TRACES_FILE=PATH seamline run ..."
        )
    if not path.is_file():
        raise UserError(f"{path} is not a file")
    try:
        with open_regular(path) as handle:
            for n, line in bounded_lines(handle, MAX_LINE_BYTES):
                yield _span(line, f"{path}:{n}")
    except NotRegularFile as err:
        raise UserError(f"{path} is not a file ({err})") from None
    except OSError as err:
        raise UserError(f"{path} cannot be read: {err.strerror or err}") from None
    except LineTooLong as err:
        raise UserError(
            f"{path}:{err.number}: a line longer than {MAX_LINE_BYTES:,} bytes; a span is one "
            "short JSON line: is this a trace written by the jsonl span exporter?"
        ) from None


def _span(line: bytes, where: str) -> TimedSpan:
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
    for key, kind, what in (
        ("name", str, "a string"),
        ("start_ns", int, "an integer"),
        ("end_ns", int, "an integer"),
    ):
        value = span.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):  # true is an int too
            raise UserError(
                f"{where}: span field {key!r} is missing or not {what}; "
                "is this a trace written by the jsonl span exporter?"
            )
    for key in ("start_ns", "end_ns"):
        if not 0 <= span[key] < MAX_NS:
            raise UserError(
                f"{where}: span field {key!r} is {cut(str(span[key]), 40)}, not a time in "
                "nanoseconds (0 to 2**64 - 1)"
            )
    status = span.get("status")
    trace = span.get("trace_id") or ""
    parent = span.get("parent_span_id")
    nanoseconds = span["end_ns"] - span["start_ns"]
    return TimedSpan(
        name=span["name"],
        seconds=max(0, nanoseconds) / 1e9,  # a wall clock set back: said once, as a warning
        error=isinstance(status, dict) and status.get("code") == "ERROR",
        span_id=f"{trace}/{span.get('span_id') or ''}",
        parent=f"{trace}/{parent}" if parent else None,
        backwards=nanoseconds < 0,
    )


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of sorted ``values``."""
    return values[max(0, math.ceil(fraction * len(values)) - 1)]


def summarize(path: Path) -> TraceSummary:
    """The table of :class:`SpanStats` for the trace at ``path``.

    A root is a span whose parent is not in the file: a run under ``TRACEPARENT`` (or a
    request whose client sent ``traceparent``) has a parent that lives in the caller's
    trace, and counting only spans without a parent read as a run of 0 s. Children
    usually end, and are written, before their parent, so the spans with a parent are
    gathered per parent (few) and settled once the whole file is read.
    """
    durations: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    by_parent: dict[str, tuple[int, float]] = {}
    run_seconds = 0.0
    count = backwards = roots = 0
    for span in read_spans(path):
        count += 1
        durations[span.name].append(span.seconds)
        errors[span.name] += span.error
        backwards += span.backwards
        seen.add(span.span_id)
        if span.parent is None:
            roots += 1
            run_seconds += span.seconds
        else:
            children, seconds = by_parent.get(span.parent, (0, 0.0))
            by_parent[span.parent] = (children + 1, seconds + span.seconds)
    for parent, (children, seconds) in by_parent.items():
        if parent not in seen:
            roots += children
            run_seconds += seconds
    if not count:
        raise UserError(
            f"{path} holds no spans: a run under OTEL_SDK_DISABLED=true records none, and "
            "one stopped before its first span ended writes none"
        )
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
    return TraceSummary(path, count, run_seconds, rows, backwards, roots)
