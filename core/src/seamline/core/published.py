"""What a run's sink says once the output is published: what publishing changed, and
what it left undone.

Both are asked of a fresh sink on the driver, after the run (:func:`after_publishing`),
each through the sink's seam. The output stands by then, so a sink that cannot say is
logged, never fatal; and what it left undone (:meth:`~seamline.contracts.Sink.
published_problem`) fails the run only after its summary is made
(:class:`PublishedButFailed`), so the user sees what the run did before what to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from seamline.contracts import Sink, UserError
from seamline.contracts.logs import get_logger

if TYPE_CHECKING:
    from seamline.core.orchestrator import RunSummary
    from seamline.core.seams import Seam

log = get_logger("seamline.core")
T = TypeVar("T")


class PublishedButFailed(UserError):
    """The run published its output, and its sink then found something left undone (the
    message says what, and the fix): ``summary`` is what the run did, as ``Pipeline.run``
    would have returned it. A ``UserError``: ``seamline run`` prints the summary, then the
    message, and exits with code 2."""

    def __init__(self, message: str, summary: RunSummary) -> None:
        super().__init__(message)
        self.summary = summary


@dataclass(frozen=True, slots=True)
class OlderVersions:
    """What an output's older versions keep on disk (the lancedb sink's, without ``prune``:
    every publication keeps a copy of the rows it rewrote and of its indexes)."""

    kept: int
    """How many older versions the output keeps."""
    bytes: int
    """The bytes of the files only they use: what removing them frees (at least, when
    ``masked_rows``)."""
    masked_rows: int = 0
    """Rows the newest version still holds in its files, masked (deleted): removing the
    older versions compacts them away too, which frees more than ``bytes`` by an amount
    known only once the files are written anew."""

    @property
    def at_least(self) -> bool:
        """Whether :attr:`bytes` is a lower bound of what pruning frees (rows are masked)."""
        return self.masked_rows > 0


OLDER_VERSIONS = ("older_versions", "older_versions_bytes", "older_versions_masked_rows")
"""The keys of :meth:`~seamline.contracts.Sink.published_changes` that count the output's
older versions and their bytes, not documents (the contract names them)."""


@dataclass(frozen=True, slots=True)
class AfterPublishing:
    """What the sink said about the run's publication."""

    changes: Mapping[str, int] | None = None
    """What publishing changed, in documents by kind (None: the sink does not measure it)."""
    older_versions: OlderVersions | None = None
    """What the output's older versions keep (None: none, or the sink does not say)."""
    problem: str | None = None
    """What publishing left undone, to fail the run with after its summary (None: nothing)."""


def after_publishing(sink: Sink[Any], seam: Seam, run_id: str) -> AfterPublishing:
    """Ask ``sink`` (a fresh instance) what publishing run ``run_id`` changed and left undone."""
    attributes: dict[str, str | int] = {"seamline.run_id": run_id}
    changed = "what the run changed"
    changes = _asked(seam, "published_changes", attributes, changed, sink.published_changes)
    undone = "what publishing left undone"
    problem = _asked(seam, "published_problem", attributes, undone, sink.published_problem)
    return AfterPublishing(*_split(changes), problem)


def _split(
    changes: Mapping[str, int] | None,
) -> tuple[Mapping[str, int] | None, OlderVersions | None]:
    """The sink's ``changes`` as document counts, and what older versions keep apart: in
    one mapping, ``RunSummary.changes`` counted bytes among the documents (a script that
    summed it did too)."""
    if changes is None:
        return None, None
    documents = {kind: count for kind, count in changes.items() if kind not in OLDER_VERSIONS}
    kept, size, masked = (changes.get(key) for key in OLDER_VERSIONS)
    older = None if kept is None else OlderVersions(kept, size or 0, masked or 0)
    return documents or None, older


def _asked(
    seam: Seam,
    operation: str,
    attributes: dict[str, str | int],
    what: str,
    call: Callable[[str], T | None],
) -> T | None:
    """``call``'s answer for the run (its id, ``attributes``' run id) through ``seam`` (its
    span ``seamline.sink.<operation>``), or None, logged, when it fails: the output is
    published, and stays so."""
    try:
        with seam.call(operation, attributes):
            return call(str(attributes["seamline.run_id"]))
    except Exception as err:
        log.warning(f"the sink could not say {what}", error=str(err))
        return None
