"""One run count: ``RunCounts`` adds, commits carry it, and a summary counts what is published."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import Any

import pytest

from seamline.contracts import ExecutionReport, RunCounts, Shard, ShardReport
from seamline.core import commits
from seamline.core.pipeline import summarize

SOME = RunCounts(
    read=5, documents=3, failed_documents=1, skipped_documents=1, examples=7, tokens=90,
    positions=128, batches=2,
)  # fmt: skip


def test_counts_add_field_by_field_and_reconcile() -> None:
    total = SOME + RunCounts(read=2, documents=2, examples=3, tokens=10, positions=16, batches=1)
    assert total == RunCounts(7, 5, 1, 1, 10, 100, 144, 3)
    assert total.reconciles
    assert "DOES NOT RECONCILE" in RunCounts(read=2, documents=1).reconciliation()
    assert sum([SOME, SOME], RunCounts()) == SOME + SOME


def test_a_commit_round_trips_its_cursor_and_counts() -> None:
    assert commits.decode(commits.encode("line:42", SOME))[:2] == ("line:42", SOME)
    # A cursor that itself looks like JSON is kept exactly.
    odd = '{"seamline_commit": 1}'
    assert commits.decode(commits.encode(odd, SOME))[:2] == (odd, SOME)
    # text-files' cursor for a file name that is not UTF-8 (its odd bytes as lone
    # surrogates): pydantic's JSON parser refused it, so such a run could not be resumed.
    name = b"notes/caf\xe9 \xff.txt".decode("utf-8", "surrogateescape")
    assert commits.decode(commits.encode(name, SOME))[:2] == (name, SOME)


def test_a_bare_cursor_is_taken_whole_with_unknown_counts() -> None:
    """A string that does not start as a commit: a cursor sinks stored before the host
    wrapped it (``"9"``), or one that merely contains JSON."""
    assert commits.decode("9")[:2] == ("9", None)
    assert commits.decode(' {"seamline_commit":1}')[:2] == (' {"seamline_commit":1}', None)


def _counts(**changed: Any) -> str:
    counts = {**asdict(SOME), **changed}
    return json.dumps({"seamline_commit": 1, "cursor": "9", "counts": counts})


@pytest.mark.parametrize(
    ("committed", "said"),
    [
        ('{"seamline_commit":1,"cursor":"9"}', "counts: Field required"),
        ('{"seamline_commit":1,"cursor":"9","counts":{"read":"5"}}', "counts.read"),
        (commits.encode("9", SOME).replace(":1,", ":2,", 1), "commit format 2"),
        ('{"seamline_commit":1,"cursor":9,"counts":{}}', "cursor"),
        (_counts(read=-1, documents=-1), "counts.read: Input should be greater than or equal"),
        (_counts(documents=10**40), "counts.documents: Input should be less than"),
        (_counts(tokens=commits.MAX_COUNT), "counts.tokens"),
        (_counts(read=6), "do not add up (read 6 = written 3"),
        (_counts(examples=2), "2 outputs for 3 documents"),
        ('{"seamline_commit"' + " " * (commits.MAX_LENGTH + 1), "longer than"),
        (_counts()[:-1] + ', "extra": 1}', "extra: Extra inputs are not permitted"),
        ('{"seamline_commit":1,', "not JSON"),
        (_counts()[:-1] + ', "run_id": "../../etc"}', "run_id: String should match pattern"),
        (_counts()[:-1] + f', "run_id": "{"a" * 65}"}}', "run_id"),
        (_counts()[:-1] + ', "run_id": 7}', "run_id: Input should be a valid string"),
    ],
)
def test_what_starts_as_a_commit_and_is_not_one_is_refused_as_tampered(
    committed: str, said: str
) -> None:
    """Never taken for a bare cursor (which misled the loader's message, and the counts)."""
    with pytest.raises(commits.TamperedCommit, match=re.escape(said)):
        commits.decode(committed)


def test_a_commit_carries_the_run_id_and_one_without_it_has_none() -> None:
    # A resumed whole run took a new id: nothing recorded which run the commit was made by.
    assert commits.decode(commits.encode("9", SOME, "d03d63196715")).run_id == "d03d63196715"
    assert commits.decode(commits.encode("9", SOME)).run_id is None  # an older commit
    assert commits.decode("9").run_id is None
    # An id that is not a plain name (a caller's own) is not kept, rather than refused later.
    assert commits.decode(commits.encode("9", SOME, "my run")).run_id is None


def test_the_largest_counts_a_run_makes_are_accepted() -> None:
    big = RunCounts(*(commits.MAX_COUNT - 1 for _ in range(8)))
    with pytest.raises(commits.TamperedCommit):  # read != the sum of three of them
        commits.decode(commits.encode("9", big))
    fine = RunCounts(3 * 10**14, 10**14, 10**14, 10**14, *(commits.MAX_COUNT - 1,) * 4)
    assert commits.decode(commits.encode("9", fine))[:2] == ("9", fine)


def report(index: int, counts: RunCounts, before: RunCounts | None, **kw: Any) -> ShardReport:
    return ShardReport(Shard(index, 2), "w", counts, before, **kw)


class _Job:
    """The little of a ``PipelineJob`` that :func:`summarize` reads."""

    run_id, pipeline, count, finished_before, resolved = "r", "p", 2, (), None


def summarized(*reports: ShardReport, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr("seamline.core.pipeline.provenance", lambda resolved: {})
    execution = ExecutionReport("ray", tuple(reports), workers=1, seconds=1.0)
    return summarize(_Job(), execution, 2.0)  # type: ignore[arg-type]


def test_a_summary_counts_what_is_published_across_retried_shards(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    summary = summarized(
        report(0, SOME, RunCounts()), report(1, SOME, SOME), monkeypatch=monkeypatch
    )
    assert summary.counts == SOME + SOME  # what this run computed
    assert summary.published == SOME + SOME + SOME  # what the output holds
    assert summary.output == summary.published
    assert summary.tokens_per_second == (SOME + SOME).tokens / 2.0


@pytest.mark.parametrize(
    "second",
    [
        report(1, RunCounts(), None, finished_before=True),
        report(1, SOME, None),  # resumed from a checkpoint that did not record its counts
    ],
    ids=["finished-before", "old-checkpoint"],
)
def test_a_summary_that_cannot_know_what_is_published_says_so(
    second: ShardReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = summarized(report(0, SOME, RunCounts()), second, monkeypatch=monkeypatch)
    assert summary.published is None
    assert summary.output == summary.counts
