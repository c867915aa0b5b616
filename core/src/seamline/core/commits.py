"""What the host hands a sink at each commit: the loader's cursor and the counts so far.

A sink keeps the string it is given at :meth:`~seamline.contracts.Sink.commit` and
returns it, unchanged, from :meth:`~seamline.contracts.Sink.recover`. The host
makes that string carry two things: the loader cursor to read on after, and the
:class:`~seamline.contracts.RunCounts` of everything the output held at that
commit. A run that continues an interrupted one — a ``--resume``, or a shard that an
executor tries again after its worker died — thereby knows what the output already
holds, and its summary counts what is published, not only what this attempt
computed.

The string comes back from a file on disk, so it is read as untrusted data: it is
parsed with a schema, and anything that is not a commit this module wrote (a
checkpoint from a seamline before this format, or one edited by hand) is taken
whole as a bare loader cursor with unknown counts, which the summary says.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Final

from pydantic import BaseModel, ConfigDict, ValidationError

from seamline.contracts import RunCounts

FORMAT: Final = 1
MAX_LENGTH: Final = 1 << 20
"""A commit longer than this is not one the host wrote (cursors are short)."""


class _Commit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    seamline_commit: int
    cursor: str
    counts: RunCounts


def encode(cursor: str, counts: RunCounts) -> str:
    """The string to commit: ``cursor`` and what the output holds up to it."""
    return json.dumps(
        {"seamline_commit": FORMAT, "cursor": cursor, "counts": asdict(counts)},
        separators=(",", ":"),
    )


def decode(committed: str) -> tuple[str, RunCounts | None]:
    """``(loader cursor, counts)`` from a recovered commit; counts None when not recorded.

    A string that is not a commit of this format is a bare loader cursor, as sinks
    recorded before the host wrapped it; it is returned as it is.
    """
    if len(committed) > MAX_LENGTH or not committed.startswith('{"seamline_commit"'):
        return committed, None
    try:
        commit = _Commit.model_validate_json(committed)
    except ValidationError:
        return committed, None
    counts = commit.counts
    if commit.seamline_commit != FORMAT or min(asdict(counts).values()) < 0:
        return committed, None
    return commit.cursor, counts
