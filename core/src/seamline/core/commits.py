"""What the host hands a sink at each commit: the loader's cursor and the counts so far.

A sink keeps the string it is given at :meth:`~seamline.contracts.Sink.commit` and
returns it, unchanged, from :meth:`~seamline.contracts.Sink.recover`. The host
makes that string carry two things: the loader cursor to read on after, and the
:class:`~seamline.contracts.RunCounts` of everything the output held at that
commit. A run that continues an interrupted one — a ``--resume``, or a shard that an
executor tries again after its worker died — thereby knows what the output already
holds, and its summary counts what is published, not only what this attempt
computed. It carries the run's id too, so that a ``--resume`` of a whole run keeps the
id of the run it continues (its manifest and summary name one run, not the last process),
and which attention implementation served each shape so far (``served``): the manifest a
resumed run publishes names every implementation that made its rows, not only those of the
last process (which left out the shapes only the stopped one used, and named its own
implementation for rows another had computed).

The string comes back from a file on disk, so it is read as untrusted data. A string
that does not start as this module's commits do (``{"seamline_commit"``) is a bare
loader cursor, as sinks recorded before the host wrapped it, with unknown counts. One
that does is parsed with a schema — the format, the cursor, every count a
non-negative integer below :data:`MAX_COUNT`, a run id (when there is one) a plain
name of at most 64 characters, and counts that reconcile (every item
read is written, dead-lettered or skipped, as at every commit the host makes) — and
anything else is :class:`TamperedCommit`: it was edited or damaged, and is never
taken for a cursor.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Annotated, Final, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seamline.contracts import RunCounts
from seamline.contracts.executor import Served
from seamline.contracts.manifest import MAX_SERVED_SHAPES

FORMAT: Final = 1
MAX_LENGTH: Final = 1 << 20
"""A commit longer than this is not one the host wrote (cursors are short)."""
MAX_COUNT: Final = 10**15
"""No count reaches this (a thousand million million: a corpus of a billion documents
of a million tokens each); a larger one was not counted, it was written in."""
PREFIX: Final = '{"seamline_commit"'
"""How every commit the host writes begins (and no bare cursor of a first-party loader)."""

_Count = Annotated[int, Field(ge=0, lt=MAX_COUNT)]
RUN_ID: Final = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
"""What a commit's run id may be: a plain name (core makes 12 hex digits; an executor's
task may name another), as the sinks' staged runs take one. A checkpoint is anyone's to
edit, and this id is published in the manifest and printed: nothing else is taken."""


class TamperedCommit(ValueError):
    """A recovered string that starts like a commit but is not one this host wrote.

    The message says what is wrong with it, for the host to name the checkpoint it
    came from."""


class _Counts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    read: _Count
    documents: _Count
    failed_documents: _Count
    skipped_documents: _Count
    examples: _Count
    tokens: _Count
    positions: _Count
    batches: _Count


_Signature = Annotated[str, Field(min_length=1, max_length=1000)]
_Implementation = Annotated[str, Field(min_length=1, max_length=200)]


class _Commit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    seamline_commit: int
    cursor: str  # bounded by the commit's MAX_LENGTH; a constraint here would refuse a
    # lone surrogate (pydantic's string_unicode), which a cursor may hold: a file name
    counts: _Counts
    run_id: Annotated[str, Field(pattern=RUN_ID)] | None = None
    """The run that made the commit; None in commits from before it was recorded."""
    served: (
        dict[_Signature, _Implementation | Annotated[list[_Implementation], Field(max_length=16)]]
        | None
    ) = Field(default=None, max_length=MAX_SERVED_SHAPES)
    """Shape signature → what served its rows so far; None in commits from before 2026-12-06."""


class Decoded(NamedTuple):
    """A recovered commit: where to read on, what the output held, which run made it."""

    cursor: str
    counts: RunCounts | None
    """None when not recorded (a bare cursor of an older checkpoint)."""
    run_id: str | None = None
    """The run that committed it; None when not recorded (an older checkpoint)."""
    served: Served | None = None
    """Shape signature → the attention that served the rows committed; None when not
    recorded (a checkpoint from before 2026-12-06: which served them is not known)."""


def encode(
    cursor: str, counts: RunCounts, run_id: str | None = None, served: Served | None = None
) -> str:
    """The string to commit: ``cursor``, what the output holds up to it, the run's id, and
    what served each shape of its rows."""
    commit: dict[str, object] = {"seamline_commit": FORMAT, "cursor": cursor}
    commit["counts"] = asdict(counts)
    if run_id is not None and re.fullmatch(RUN_ID, run_id):  # else not kept: never refused
        commit["run_id"] = run_id
    if served is not None:
        commit["served"] = {key: served[key] for key in sorted(served)[:MAX_SERVED_SHAPES]}
    return json.dumps(commit, separators=(",", ":"))


def decode(committed: str) -> Decoded:
    """``(loader cursor, counts, run id)`` from a recovered commit; counts and id None when
    not recorded.

    A string that does not begin as a commit is a bare loader cursor, as sinks recorded
    before the host wrapped it; it is returned as it is, with counts None. One that
    begins as a commit and is not a valid one raises :class:`TamperedCommit`.
    """
    if not committed.startswith(PREFIX):
        return Decoded(committed, None)
    if len(committed) > MAX_LENGTH:
        raise TamperedCommit(f"it is longer than {MAX_LENGTH:,} characters")
    try:
        # json.loads, not pydantic's JSON parser: that one refuses the escape of a lone
        # surrogate ("\udcff"), which is how a file name that is not UTF-8 is stored.
        raw = json.loads(committed)
    except (ValueError, RecursionError):
        raise TamperedCommit("it is not JSON") from None
    try:
        commit = _Commit.model_validate(raw)
    except ValidationError as err:
        raise TamperedCommit(_first_problem(err)) from None
    if commit.seamline_commit != FORMAT:
        raise TamperedCommit(
            f"it is of commit format {commit.seamline_commit}, this seamline writes {FORMAT}"
        )
    counts = RunCounts(**commit.counts.model_dump())
    if not counts.reconciles:
        raise TamperedCommit(f"its counts do not add up ({counts.reconciliation()})")
    if counts.examples < counts.documents:
        raise TamperedCommit(
            f"its counts do not add up ({counts.examples} outputs for {counts.documents} "
            "documents written; each document makes at least one)"
        )
    return Decoded(commit.cursor, counts, commit.run_id, commit.served)


def _first_problem(err: ValidationError) -> str:
    """The first thing wrong, one line: where (``counts.read``) and what, the value cut short."""
    problem = err.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the commit"
    if problem["type"] == "json_invalid":
        return "it is not JSON"
    shown = repr(problem.get("input"))
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{where}: {problem['msg']} (got {shown})"
