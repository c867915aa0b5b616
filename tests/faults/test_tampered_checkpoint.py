"""A checkpoint edited after it was written is refused on ``--resume``, never published from.

The audit's reproductions, on a small corpus through ``seamline run`` in this process:
a run of the real ``text-files`` loader fails at its 4th write, leaving a checkpoint; the
checkpoint is edited; ``--resume`` must then end in one line naming the checkpoint, exit
code 2, and leave the committed state as it was (``--restart`` then starts over and
publishes every document once). Untouched, the same checkpoint resumes to the output an
uninterrupted run publishes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.component_scenarios import Ran, in_process_cli, pipeline, published, seamline

FILES = 20


@contextlib.contextmanager
def cli_in(folder: Path) -> Iterator[Any]:
    with in_process_cli() as cli, contextlib.chdir(folder):
        yield cli


def interrupted(work: Path) -> Path:
    """A corpus, a run of it that failed at its 4th write (exit 1); its checkpoint."""
    docs = work / "docs"
    docs.mkdir(parents=True)
    for i in range(FILES):
        (docs / f"f{i:02d}.txt").write_text(" ".join([f"w{i}"] * (1 + i % 5)), encoding="utf-8")
    loader = f"{{use: text-files, with: {{root: {json.dumps(str(docs))}, glob: '*.txt'}}}}"
    pipeline(work, loader=loader)
    with cli_in(work) as cli:
        failed = seamline(cli, Path("pipeline.yaml"), SEAMLINE_FAULT_RAISE="write:4")
    assert failed.exit_code == 1, failed.stderr
    checkpoint = work / "out" / ".emb.jsonl.checkpoint"
    assert checkpoint.exists()
    return checkpoint


def edit(checkpoint: Path, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
    """Change the checkpoint and the host's commit inside it (its ``cursor``), as a hand would."""
    record = json.loads(checkpoint.read_text(encoding="utf-8"))
    commit = json.loads(record["cursor"])
    change(record, commit)
    record["cursor"] = json.dumps(commit, separators=(",", ":"))
    checkpoint.write_text(json.dumps(record), encoding="utf-8")


def resume(work: Path, *flags: str) -> Ran:
    with cli_in(work) as cli:
        return seamline(cli, Path("pipeline.yaml"), "--resume", *flags)


def one_line(ran: Ran) -> str:
    assert "Traceback" not in ran.stdout + ran.stderr, ran.stderr
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, ran.stderr
    return lines[0]


def partial_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.glob(".*.partial.*.tmp")}


def assert_refused_and_kept(work: Path, checkpoint: Path, ran: Ran, *said: str) -> None:
    assert ran.exit_code == 2, ran.stderr
    line = one_line(ran)
    assert line.startswith("error: cannot resume"), line
    assert str(checkpoint) in line, line
    assert "--restart" in line, line
    for words in said:
        assert words in line, line
    assert published(work / "out") is None, "nothing was published"
    assert checkpoint.exists(), "the refused resume leaves the checkpoint for the user"


def assert_once_each(work: Path) -> None:
    records = published(work / "out")
    assert records is not None
    assert sorted(r["id"] for r in records) == [f"f{i:02d}.txt" for i in range(FILES)]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path / "work"


def test_an_untouched_checkpoint_resumes_to_every_document_once(work: Path) -> None:
    interrupted(work)
    ran = resume(work)
    assert ran.exit_code == 0, ran.stderr
    assert_once_each(work)


def test_a_cut_inside_a_record_is_refused_and_the_partial_file_is_not_cut(work: Path) -> None:
    """(a): ``files.records.bytes`` set to 100 glued half a record to the next, exit 0."""
    checkpoint = interrupted(work)
    edit(checkpoint, lambda record, commit: record["files"]["records"].update(bytes=100))
    before = partial_files(work / "out")
    ran = resume(work)
    assert_refused_and_kept(work, checkpoint, ran, "at byte 100, inside a record")
    assert partial_files(work / "out") == before, "the committed records are kept, uncut"
    restarted = resume(work, "--restart")
    assert restarted.exit_code == 0, restarted.stderr
    assert_once_each(work)


def test_a_cut_on_an_earlier_record_boundary_is_refused(work: Path) -> None:
    """A whole record dropped: the output no longer holds what the commit counts."""
    checkpoint = interrupted(work)
    partial = next((work / "out").glob(".emb.jsonl.partial.*.tmp"))

    def drop_last_record(record: dict[str, Any], commit: dict[str, Any]) -> None:
        cut = record["files"]["records"]["bytes"]
        record["files"]["records"]["bytes"] = partial.read_bytes().rfind(b"\n", 0, cut - 1) + 1

    edit(checkpoint, drop_last_record)
    ran = resume(work)
    assert_refused_and_kept(work, checkpoint, ran, "output records where it counts")


def test_a_cursor_moved_back_is_refused_not_published_twice(work: Path) -> None:
    """(b): the cursor moved to an earlier file, the counts left: documents written twice."""
    checkpoint = interrupted(work)
    edit(checkpoint, lambda record, commit: commit.update(cursor="f01.txt"))
    ran = resume(work)
    assert_refused_and_kept(work, checkpoint, ran, "resumes after 'f01.txt', item 2 of the input")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda commit: commit["counts"].update(documents=10**40), "counts.documents"),  # (c)
        (lambda commit: commit["counts"].update(read=-1), "counts.read"),  # (d)
        (lambda commit: commit["counts"].update(read=commit["counts"]["read"] + 1), "add up"),
        (lambda commit: commit.update(seamline_commit=7), "commit format 7"),
    ],
    ids=["huge", "negative", "not-reconciling", "format"],
)
def test_counts_out_of_bounds_are_a_tampered_commit_not_a_bare_cursor(
    work: Path, change: Callable[[dict[str, Any]], None], said: str
) -> None:
    checkpoint = interrupted(work)
    edit(checkpoint, lambda record, commit: change(commit))
    ran = resume(work)
    assert_refused_and_kept(work, checkpoint, ran, "holds a commit seamline did not write", said)
    assert "text-files loader" not in ran.stderr, "not mistaken for a loader's cursor"


def test_a_run_whose_counts_do_not_reconcile_publishes_nothing_and_exits_1(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(c) printed ``DOES NOT RECONCILE`` and exited 0. A commit that does not add up is now
    refused when read (above); should counts still not add up at the end (a bug of the
    host or a component: here, a decoder that lets one through), nothing is published,
    the last commit is kept, and the run ends with exit code 1 and one line saying so."""
    checkpoint = interrupted(work)
    from seamline.core import commits

    decode = commits.decode

    def lenient(committed: str) -> commits.Decoded:
        cursor, held, run_id, *_ = decode(committed)
        assert held is not None
        return commits.Decoded(cursor, dataclasses.replace(held, read=held.read + 1), run_id)

    monkeypatch.setattr(commits, "decode", lenient)
    monkeypatch.setattr("seamline.core.orchestrator._check_cursor", lambda *args: None)
    ran = resume(work)
    assert ran.exit_code == 1, ran.stderr
    line = one_line(ran)
    assert "do not reconcile (read 21 = written 20" in line, line
    assert "DOES NOT RECONCILE" in line, line
    assert "not published" in line, line
    assert published(work / "out") is None
    assert checkpoint.exists(), "the last commit is kept"
