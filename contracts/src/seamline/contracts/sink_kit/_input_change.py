"""Whether a run's input files changed since a checkpoint, and which, in words.

The host fingerprints the input at the start of every run (``inputs.input`` of its
manifest: the paths, one hash of their files' names, sizes and times, and ``listed``:
when, how many files, which paths are glob patterns and which folders a pattern picks
files from). A resume whose hash differs from its checkpoint's is refused. The checkpoint
holds no file name, so the files are named from the disk as it is now: those changed
since the checkpoint's run listed them, by their times, and how many files there were
then and are now (a removed file has no time to be found by).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from seamline.contracts.input_files import InputEntry, Under, changed_since
from seamline.contracts.untrusted import visible

COMPARED = ("paths", "files")
"""What of a fingerprint decides whether the input changed (``listed`` only explains it)."""

MAX_NAMED_FILES = 5
"""The most files a refusal names; the rest are counted."""

CLOCK_TICK_NS = 20_000_000
"""A margin over the coarse clock files are stamped by (its tick: 1 to 10 ms)."""

_MAX_NS = 1 << 63
_MAX_COUNT = 1 << 40


def input_changed(recorded: Any, current: Any) -> str | None:
    """What changed between the input fingerprint ``recorded`` (a checkpoint's: untrusted)
    and ``current`` (this run's), in words; None when nothing did."""
    if _compared(recorded) == _compared(current):
        return None
    paths = _paths(current) or _paths(recorded)
    where = f" under {', '.join(map(repr, paths))}" if paths else ""
    return f"the input files{where} ({_which(recorded, current) or 'added, removed or modified'})"


def _compared(fingerprint: Any) -> Any:
    if not isinstance(fingerprint, dict):
        return fingerprint
    return {key: fingerprint.get(key) for key in COMPARED}


def _paths(fingerprint: Any) -> list[str]:
    paths = fingerprint.get("paths") if isinstance(fingerprint, dict) else None
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        return []
    return paths


class _Listing(NamedTuple):
    """What a fingerprint's ``listed`` says, checked."""

    since: int
    """The time from which a file counts as changed since (:func:`_since`)."""
    files: int
    """How many files there were."""
    patterns: list[int]
    """Which of the fingerprint's paths are glob patterns (by index)."""
    under: dict[int, str]
    """Which of its paths are folders a pattern picks files from, and the pattern."""


def _listed(fingerprint: Any) -> _Listing | None:
    """``listed``, or None where it is missing or not what a fingerprint holds (a checkpoint
    from before it, or one edited)."""
    listed = fingerprint.get("listed") if isinstance(fingerprint, dict) else None
    if not isinstance(listed, dict):
        return None
    at, count, patterns = listed.get("at"), listed.get("count"), listed.get("patterns")
    newest = listed.get("newest", 0)
    if type(at) is not int or not 0 < at < _MAX_NS:
        return None
    if type(newest) is not int or not 0 <= newest < _MAX_NS:
        return None
    if type(count) is not int or not 0 <= count < _MAX_COUNT:
        return None
    if not isinstance(patterns, list) or not all(type(index) is int for index in patterns):
        return None
    under = _under(listed.get("under", []))
    if under is None:
        return None
    return _Listing(_since(at, newest), count, patterns, under)


def _under(pairs: Any) -> dict[int, str] | None:
    """``listed.under`` (``[index, pattern]`` pairs) as a mapping; None if it is not that."""
    if not isinstance(pairs, list):
        return None
    under: dict[int, str] = {}
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2):
            return None
        index, pattern = pair
        if type(index) is not int or not isinstance(pattern, str):
            return None
        under[index] = pattern
    return under


def _since(at: int, newest: int) -> int:
    """The time from which a file counts as changed since a listing made at ``at``, whose
    newest file then was stamped ``newest``.

    A file's time comes from the kernel's coarse clock, which lags ``time.time_ns`` by up
    to a tick (1 to 10 ms): a file edited just after the listing can be stamped before
    ``at``, so :data:`CLOCK_TICK_NS` earlier counts. But a file written just before the
    listing, and listed, is not one that changed: past the newest file listed counts,
    where that is later (and never later than a tick after ``at``, for a file stamped in
    the future by a clock set ahead)."""
    return min(max(at - CLOCK_TICK_NS, newest + 1), at + CLOCK_TICK_NS)


def _which(recorded: Any, current: Any) -> str:
    """``N files when ... listed them at <time>, M now; newer than that: 'a', 'b'``, or ""
    where either fingerprint lacks ``listed``. The files are listed from this run's own
    paths (never from the checkpoint's, which anyone could have edited)."""
    then, now = _listed(recorded), _listed(current)
    paths = _paths(current)
    if then is None or now is None or not paths:
        return ""
    entries = [_entry(index, path, now) for index, path in enumerate(paths)]
    changed = changed_since(entries, then.since)
    when = datetime.fromtimestamp(then.since / 1e9).strftime("%Y-%m-%d %H:%M:%S")
    said = (
        f"{_files(then.files)} when the checkpoint's run listed them at {when}, {now.files:,} now"
    )
    if not changed:
        return (
            f"{said}; none is newer than that: a file was removed (or renamed or edited on "
            "a file system that keeps no change time)"
        )
    named = ", ".join(repr(visible(name)) for name in changed[:MAX_NAMED_FILES])
    more = len(changed) - MAX_NAMED_FILES
    return f"{said}; newer than that: {named}" + (f" and {more:,} more" if more > 0 else "")


def _entry(index: int, path: str, listing: _Listing) -> InputEntry:
    """The fingerprint's ``index``-th path as the input it stands for in ``listing``."""
    if index in listing.patterns:
        return path
    if index in listing.under:
        return Under(Path(path), listing.under[index])
    return Path(path)


def _files(count: int) -> str:
    return f"{count:,} file" + ("" if count == 1 else "s")
