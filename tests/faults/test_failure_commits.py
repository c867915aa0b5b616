"""A failed run's one line says what a run again does: from a commit, or from the beginning.

``ShardFailed`` used to say "run again with --resume to continue from that commit" even
when the run failed before its first commit. The run fails in the ``fault-loader`` at a
chosen document (``SEAMLINE_FAULT_RAISE=read:<i>``; the pipeline commits every 5
documents), through ``seamline run`` in this process.
"""

from __future__ import annotations

import errno
import os
import pickle
from typing import TYPE_CHECKING, Any

import pytest

from seamline.contracts import ShardFailed
from tests.faults.component_scenarios import in_process_cli, pipeline, seamline

if TYPE_CHECKING:
    from pathlib import Path

LOADER = "loader 'fault-loader' (read, from seamline-fixture-faults 0.1.0)"
NOTHING_COMMITTED = (
    "nothing was published and nothing was committed, so a run again starts from the "
    "beginning (fix the cause, then run again; resuming is not needed)"
)
FROM_THE_COMMIT = (
    "nothing was published and what the sink last committed is kept (fix the cause, then run "
    "again with --resume (run(resume=True) from Python) to continue from that commit)"
)


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_a_run_failing_before_its_first_commit_says_nothing_was_committed(tmp_path: Path) -> None:
    path = pipeline(tmp_path)
    with in_process_cli() as cli:
        ran = seamline(cli, path, SEAMLINE_FAULT_RAISE="read:2")
    assert ran.exit_code == 1, ran.stderr
    line = one_line(ran.stderr)
    assert line.startswith(f"failed: the run failed in {LOADER}: RuntimeError: "), line
    assert NOTHING_COMMITTED in line, line
    assert "continue from that commit" not in line
    assert "Traceback" not in ran.stderr
    assert not (tmp_path / "out" / ".emb.jsonl.checkpoint").exists()


def test_a_run_failing_after_a_commit_says_resume_continues_from_it(tmp_path: Path) -> None:
    path = pipeline(tmp_path)
    with in_process_cli() as cli:
        ran = seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17")
    assert ran.exit_code == 1, ran.stderr
    assert FROM_THE_COMMIT in one_line(ran.stderr)
    assert (tmp_path / "out" / ".emb.jsonl.checkpoint").exists()


def test_a_resume_failing_before_committing_again_still_has_the_commit_it_resumed(
    tmp_path: Path,
) -> None:
    path = pipeline(tmp_path)
    with in_process_cli() as cli:
        first = seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17")
        again = seamline(cli, path, "--resume", SEAMLINE_FAULT_RAISE="read:17")
    assert first.exit_code == again.exit_code == 1, again.stderr
    assert FROM_THE_COMMIT in one_line(again.stderr)


def test_a_shard_that_committed_nothing_is_started_over_by_resume() -> None:
    failed = ShardFailed(1, 3, "model 'toy' (apply, from t 1)", "ValueError: no", committed=False)
    assert str(failed) == (
        "shard 1 of 3 failed in model 'toy' (apply, from t 1): ValueError: no; nothing was "
        "published and shard 1 committed nothing (fix the cause and run again with --resume "
        "(run(resume=True) from Python): shard 1 starts from its beginning, the other shards "
        "continue from their last commits)"
    )


def test_an_unknown_commit_is_not_promised() -> None:
    failed = ShardFailed(0, 1, "the pipeline", "OSError: gone")
    assert "what the sink last committed, if anything, is kept" in str(failed)
    assert "continue from that commit" not in str(failed)


def test_whether_it_committed_crosses_a_process_boundary() -> None:
    failed = ShardFailed(0, 2, "the pipeline", "OSError: gone", committed=False)
    copy = pickle.loads(pickle.dumps(failed))  # as a Ray actor's error reaches the driver
    assert copy.committed is False
    assert str(copy) == str(failed)


# -- the machine's failure (an OSError with an errno): the line the CLI makes of it ----------

MACHINE_NOTHING_COMMITTED = (
    "the output was not published, and nothing was committed, so a run again starts from the "
    "beginning: fix that, then run again (--resume is not needed)"
)
MACHINE_KEPT = (
    "the output was not published, and what the sink last committed is kept: fix that, then "
    "run again with --resume"
)


def refusing(monkeypatch: pytest.MonkeyPatch, call: str, at: int) -> None:
    """The jsonl sink's ``at``-th ``call`` fails as on a read-only disk (as root, a folder's
    mode does not make one)."""
    from seamline.components.sinks.jsonl import JsonlSink

    real = getattr(JsonlSink, call)
    calls = [0]

    def refuse(self: JsonlSink, *args: Any) -> Any:
        calls[0] += 1
        if calls[0] == at:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self.config.path))
        return real(self, *args)

    monkeypatch.setattr(JsonlSink, call, refuse)


@pytest.mark.parametrize(("call", "at"), [("start", 1), ("commit", 1)])
def test_the_machine_failing_before_the_first_commit_does_not_offer_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, at: int
) -> None:
    # A read-only output folder or a full disk said "what the sink last committed is kept:
    # fix that, then run again with --resume", though nothing was committed.
    refusing(monkeypatch, call, at)
    with in_process_cli() as cli:
        ran = seamline(cli, pipeline(tmp_path))
    assert ran.exit_code == 1, ran.stderr
    line = one_line(ran.stderr)
    assert line == f"error: Read-only file system ({tmp_path / 'out' / 'emb.jsonl'}): " + (
        MACHINE_NOTHING_COMMITTED
    )


def test_the_machine_failing_after_a_commit_says_it_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusing(monkeypatch, "commit", 2)
    with in_process_cli() as cli:
        ran = seamline(cli, pipeline(tmp_path))
    assert ran.exit_code == 1, ran.stderr
    assert one_line(ran.stderr).endswith(MACHINE_KEPT), ran.stderr
    assert (tmp_path / "out" / ".emb.jsonl.checkpoint").exists()


def test_the_machine_failing_a_resume_says_its_commit_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = pipeline(tmp_path)
    with in_process_cli() as cli:
        seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17")  # leaves a commit
        refusing(monkeypatch, "recover", 1)
        again = seamline(cli, path, "--resume")
    assert again.exit_code == 1, again.stderr
    assert one_line(again.stderr).endswith(MACHINE_KEPT), again.stderr


def test_the_machine_failing_the_publication_of_a_run_that_never_committed_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tiny run (3 documents, checkpoint_every 5) commits nothing before it publishes: a
    # read-only folder at the publication leaves no checkpoint, so "kept ... --resume" is
    # not true of it; the line says a run again starts from the beginning.
    refusing(monkeypatch, "close", 1)
    with in_process_cli() as cli:
        ran = seamline(cli, pipeline(tmp_path, loader="{use: fault-loader, with: {documents: 3}}"))
    assert ran.exit_code == 1, ran.stderr
    assert one_line(ran.stderr).endswith(MACHINE_NOTHING_COMMITTED), ran.stderr
    assert not (tmp_path / "out" / ".emb.jsonl.checkpoint").exists()


def test_the_machine_failing_a_sharded_run_before_it_staged_anything_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sharded run's driver clears an interrupted whole run (the sink's start) and holds
    # the destination before any part is staged: a read-only output folder failed it there
    # (the lock not made), a bare OSError, and the line said "what the sink last committed
    # is kept ... --resume" of a run that had staged nothing.
    from tests.faults.kill_points import in_process_cli as discovering_cli

    (tmp_path / "p.yaml").write_text(
        "pipeline: sharded\nloader: {use: fault-loader, with: {documents: 3}}\n"
        "model: {use: tiny}\nattention: {use: native}\n"
        f"sink: {{use: fault-jsonl, with: {{path: {tmp_path / 'out' / 'emb.jsonl'}}}}}\n"
        "run: {batch_size: 4, buckets: [4, 8], executor: {use: fault-sharded}}\n",
        encoding="utf-8",
    )
    refusing(monkeypatch, "start", 1)
    with discovering_cli() as cli:
        ran = seamline(cli, tmp_path / "p.yaml")
    assert ran.exit_code == 1, ran.stderr
    assert one_line(ran.stderr).endswith(MACHINE_NOTHING_COMMITTED), ran.stderr
