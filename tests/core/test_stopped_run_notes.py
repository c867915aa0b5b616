"""What a stopped ``Pipeline.run`` tells a caller of the library, and what a run again says.

A notebook's stop button (SIGINT) in ``Pipeline.run()`` raised a bare ``KeyboardInterrupt``
under 133 lines of JAX's frames: nothing said that the sink's last commit was kept, nor
how to go on from it, and the cell run again as it was (``p.run()``) started over without
a word, discarding 45 seconds of committed work. The ``seamline`` command said both.
Here the stop is a ``KeyboardInterrupt`` raised by the real ``jsonl`` sink's write (the
main thread, as Ctrl-C is), after some commits or before any.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import structlog

from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import ResumeRefused
from seamline.core.pipeline import Pipeline
from tests.core.test_resume import registry

TEXTS = [" ".join([f"w{i}"] * (1 + i % 5)) for i in range(24)]


def pipeline(overrides: tuple[str, ...] = ()) -> Pipeline:
    """24 documents, two a batch, committed every 5 read, into ``out/emb.jsonl`` (relative,
    as a user writes it: the test runs in a folder of its own)."""
    return Pipeline.from_dict(
        {
            "pipeline": "stopped",
            "loader": {"use": "list", "with": {"texts": TEXTS}},
            "model": {"use": "toy"},
            "attention": {"use": "native"},
            "sink": {"use": "jsonl", "with": {"path": "out/emb.jsonl"}},
            "run": {"batch_size": 2, "buckets": [8], "checkpoint_every": 5, "in_flight": 0},
        },
        overrides,
        registry=registry(),
    )


@pytest.fixture(autouse=True)
def _own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def stopped_at_write(monkeypatch: pytest.MonkeyPatch, at: int) -> KeyboardInterrupt:
    """Run until the sink's ``at``-th write raises ``KeyboardInterrupt``; that stop."""
    write = JsonlSink.write
    seen = [0]

    def stopping(self: JsonlSink, records: Any) -> None:
        seen[0] += 1
        if seen[0] == at:
            raise KeyboardInterrupt
        write(self, records)

    with monkeypatch.context() as patch:
        patch.setattr(JsonlSink, "write", stopping)
        with pytest.raises(KeyboardInterrupt) as stopped:
            pipeline().run()
    return stopped.value


def notes(stop: BaseException) -> str:
    return " ".join(getattr(stop, "__notes__", []))


def test_a_stop_after_a_commit_says_what_is_kept_and_how_to_go_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The 7th write (documents 12 and 13) comes after the commits at 5 and 10 documents.
    stop = stopped_at_write(monkeypatch, at=7)
    assert notes(stop) == (
        "nothing was published; what the sink last committed (10 documents) is kept: "
        "run(resume=True) goes on from it (a run without it starts over, discarding it)"
    )
    assert Path("out/.emb.jsonl.checkpoint").is_file()
    summary = pipeline().run(resume=True)
    assert summary.resumed_from is not None
    assert summary.output.documents == len(TEXTS)


def test_a_stop_before_the_first_commit_says_nothing_was_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stop = stopped_at_write(monkeypatch, at=1)
    said = notes(stop)
    assert "nothing was committed either, so a run again starts from the beginning" in said
    assert "resume=True" not in said, "there is no commit to go on from"
    assert not Path("out/.emb.jsonl.checkpoint").exists()


def test_a_run_without_resume_warns_that_it_discards_a_checkpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cell run again as it was started over in silence; it still starts over (the docs
    say a plain run again does), but says what it discards and how to keep it."""
    stopped_at_write(monkeypatch, at=7)
    with structlog.testing.capture_logs() as logs:
        summary = pipeline().run()
    (warned,) = [e for e in logs if "discard" in e["event"]]
    assert warned["log_level"] == "warning"
    checkpoint = str(Path("out/.emb.jsonl.checkpoint").absolute())
    assert warned["event"] == (
        f"starting over: the checkpoint {checkpoint!r} an interrupted run left is discarded, "
        "and what it committed with it; to go on from it instead, run with --resume "
        "(run(resume=True) from Python)"
    )
    assert summary.resumed_from is None
    assert summary.output.documents == len(TEXTS)
    records = Path("out/emb.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in records] == [f"d{i}" for i in range(len(TEXTS))]


def test_a_refused_resume_names_the_keyword_that_starts_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notebook whose resume was refused (a setting changed since the stop) was told "Run
    again with --restart (or without --resume) to start over": two flags a caller of the
    library has no way to pass. It is told ``run(restart=True)`` beside the flag, which
    starts over."""
    stopped_at_write(monkeypatch, at=7)
    changed = ("run.batch_size=4",)
    with pytest.raises(ResumeRefused) as refused:
        pipeline(changed).run(resume=True)
    said = str(refused.value)
    assert "run.batch_size" in said, said
    assert said.endswith("run again with --restart (run(restart=True) from Python) to start over")
    assert "(or without --resume)" not in said
    summary = pipeline(changed).run(restart=True)
    assert summary.resumed_from is None
    assert summary.output.documents == len(TEXTS)


def test_a_run_with_no_checkpoint_to_discard_warns_of_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stopped_at_write(monkeypatch, at=1)  # before the first commit: nothing to discard
    with structlog.testing.capture_logs() as logs:
        pipeline().run()
        pipeline().run()  # over a published output
    assert [e for e in logs if e["log_level"] == "warning"] == []


def test_a_resume_of_a_published_output_says_it_is_complete() -> None:
    """A cell kept at ``run(resume=True)`` re-embedded a finished run, told "nothing was
    committed to resume from" as if it had been stopped. It starts over still, as
    ``seamline run --resume`` does (the input may have changed), saying why."""
    pipeline().run()
    with structlog.testing.capture_logs() as logs:
        summary = pipeline().run(resume=True)
    (warned,) = [e for e in logs if e["log_level"] == "warning"]
    output = str(Path("out/emb.jsonl").absolute())
    assert warned["event"] == (
        f"resume: {output!r} is complete; there is nothing to resume: starting from the "
        "beginning, every document embedded again (and a sink that appends adds every "
        "document again); run without --resume (resume=False from Python) to start over unwarned"
    )
    assert summary.resumed_from is None
    assert summary.output.documents == len(TEXTS)
