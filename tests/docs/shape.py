"""Does a command's output have the shape its page shows?

The docs show real output, made on some corpus on some day; the tests run the same
command on a small corpus today. So the comparison is of *shape*, not of every character:

- numbers are masked (counts, times, rates, scores, dates, versions), and so are hex
  digests, before anything is compared; but not a place in a file
  (``pipeline.yaml:4:9``): it does not change with the corpus or the day, and a message
  placed on the wrong line is what a user would be misled by;
- runs of spaces count as one, and a line's leading and trailing spaces do not count
  (centred titles and column padding follow the terminal's width);
- a table drawn with box characters keeps its borders (with their column counts) and its
  header cells; its body rows, whose texts and wrapping depend on the data, count only
  by the number of cells, and a run of them is one run;
- ``...`` or ``…`` inside a line stands for any text; a line that is only ``...`` stands
  for any number of lines (the page says so where it leaves lines out);
- JSON log lines (what seamline writes on stderr when it is not a terminal) are dropped
  from the output unless the page itself shows JSON lines.

Everything else must match: the same lines, in the same order, the same words.
"""

from __future__ import annotations

import json
import re

NUMBER = re.compile(r"\d+(?:[.,:_]\d+)*")
DIGEST = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{4,}\b")
ELLIPSIS = re.compile(r"\.\.\.|…")
BORDER_JOINS = {"┏": "┳", "┡": "╇", "└": "┴", "┌": "┬", "├": "┼"}


PLACE = re.compile(r"(\.(?:ya?ml|json)):(\d+):(\d+)\b")
"""``file.yaml:LINE:COLUMN``: kept as it is (see the module's docstring)."""
KEPT = "\x00"


def mask(line: str) -> str:
    """A line with its numbers, digests and spacing made uniform (places in files kept)."""
    places = PLACE.findall(line)
    line = PLACE.sub(KEPT, line)
    line = DIGEST.sub("#", line)
    line = NUMBER.sub("0", line)
    for suffix, row, column in places:
        line = line.replace(KEPT, f"{suffix}:{row}:{column}", 1)
    return " ".join(line.split())


def shape_of(line: str) -> str:
    """What of a line must match: a table line's structure, any other line's masked text."""
    stripped = line.strip()
    if stripped[:1] in BORDER_JOINS:
        return f"{stripped[0]} border of {stripped.count(BORDER_JOINS[stripped[0]]) + 1} columns"
    if stripped.startswith("│"):
        return f"│ row of {stripped.count('│') - 1} cells"
    return mask(line)


def shapes(lines: list[str]) -> list[str]:
    """Every line's shape, a run of identical table rows counted once."""
    result: list[str] = []
    for line in lines:
        shape = shape_of(line)
        if shape.startswith("│ row") and result and result[-1] == shape:
            continue
        result.append(shape)
    while result and not result[-1]:
        result.pop()
    return result


def is_log_line(line: str) -> bool:
    if not line.startswith("{"):
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and "level" in record and "event" in record


def mismatch(shown: list[str], printed: str) -> str | None:
    """None when ``printed`` has the shape of ``shown``; otherwise both shapes, to compare."""
    lines = printed.rstrip("\n").split("\n") if printed.strip() else []
    if not any(is_log_line(line) for line in shown):
        lines = [line for line in lines if not is_log_line(line)]
    want, got = shapes(shown), shapes(lines)
    if _pattern(want).fullmatch("\n".join(got) + "\n"):
        return None
    return (
        "shown, as shapes:\n"
        + "\n".join(want)
        + "\n\nprinted, as shapes:\n"
        + "\n".join(got)
        + "\n\nprinted, as it is:\n"
        + "\n".join(lines)
    )


def _pattern(want: list[str]) -> re.Pattern[str]:
    parts: list[str] = []
    for shape in want:
        if ELLIPSIS.fullmatch(shape):
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        pieces = ELLIPSIS.split(shape)
        parts.append("[^\n]*?".join(re.escape(piece) for piece in pieces) + r"\n")
    return re.compile("".join(parts))
