"""Checkpoints and resume, end to end: a run that dies half-way is finished by a second one.

The toy loader crashes at a chosen document; the real ``jsonl`` sink writes to a
temporary directory. Whatever the first run wrote after its last checkpoint is
written again by the second, so the published output must equal, record for
record, that of a run that was never interrupted.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import structlog

from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import UserError
from seamline.contracts.versions import CONTRACT_VERSIONS, compatibility_problem
from seamline.core import commits
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator, RunSummary
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import LoaderCrash, MemorySink, toy_registry

# Lengths 1 to 7 words fall in buckets 4 and 8; two unreadable documents and one
# that cannot be prepared are set aside, one on each side of the crash.
TEXTS = [" ".join([f"w{i}"] * (1 + i % 7)) for i in range(24)]
TEXTS[3] = "!bad"
TEXTS[15] = "boom"
TEXTS[18] = "!bad"
CRASH_AT = "d13"


def registry() -> Registry:
    jsonl = ComponentInfo(
        "sink", "jsonl", "seamline.components.sinks.jsonl:JsonlSink", "tests", "0", "ok", "",
        JsonlSink, JsonlSink.contract_version,
    )  # fmt: skip
    return Registry([*toy_registry().entries(), jsonl])


def orchestrator(
    out: Path,
    *,
    crash_at: str | None = None,
    every: int = 5,
    sink: str = "jsonl",
    in_flight: int = 1,
    batch_size: int = 2,
) -> Orchestrator:
    sink_ref = (
        f"{{use: jsonl, with: {{path: {json.dumps(str(out / 'emb.jsonl'))}}}}}"
        if sink == "jsonl"
        else f"{{use: {sink}}}"
    )
    loader_with = {"texts": TEXTS}
    text = (
        "pipeline: resume\n"
        f"loader: {{use: list, with: {json.dumps(loader_with)}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {sink_ref}\n"
        f"run: {{batch_size: {batch_size}, buckets: [4, 8], checkpoint_every: {every}, "
        f"in_flight: {in_flight}}}\n"
    )
    reg = registry()
    built = Orchestrator(parse_pipeline(text, "resume.yaml", reg), reg)
    if crash_at is not None:
        # The crash is injected behind the pipeline's back: a resume refuses a pipeline
        # file that changed since the checkpoint, and this one must not have.
        loader = built.loader
        loader.config = loader.config.model_copy(update={"crash_at": crash_at})
    return built


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_same_output(out: Path, reference: Path) -> None:
    """Record for record (id, window, span, metadata, vector) and error for error."""
    got, expected = read_jsonl(out / "emb.jsonl"), read_jsonl(reference / "emb.jsonl")
    key = [(r["id"], r["window"], r["span"], r.get("metadata")) for r in got]
    assert key == [(r["id"], r["window"], r["span"], r.get("metadata")) for r in expected]
    assert len({(r["id"], r["window"]) for r in got}) == len(got), "every record exactly once"
    for line, reference_line in zip(got, expected, strict=True):
        np.testing.assert_allclose(line["embedding"], reference_line["embedding"], atol=1e-6)
    assert read_jsonl(out / "emb.errors.jsonl") == read_jsonl(reference / "emb.errors.jsonl")
    assert sorted(p.name for p in out.iterdir()) == [
        "emb.errors.jsonl",
        "emb.jsonl",
        "emb.manifest.json",
    ], "no partial file or checkpoint is left behind"


@pytest.fixture
def reference(tmp_path: Path) -> Path:
    """The output of a run that was never interrupted."""
    out = tmp_path / "reference"
    orchestrator(out).run()
    return out


def crash(out: Path, *, every: int = 5, hard: bool, in_flight: int = 1) -> None:
    """Run until the loader crashes; ``hard``: the sink is never closed, as if killed.

    The sink's ``close`` is patched in a context of its own, so that undoing it leaves
    alone whatever the test patched (the working directory it changed to).
    """
    first = orchestrator(out, crash_at=CRASH_AT, every=every, in_flight=in_flight)
    with pytest.MonkeyPatch.context() as patch:
        if hard:
            patch.setattr(first.sink, "close", lambda complete=True: None)
        with pytest.raises(LoaderCrash):
            first.run()
    # The process is gone: its open files too (a dead process flushes nothing later on).
    del first
    gc.collect()
    assert not (out / "emb.jsonl").exists(), "a crashed run publishes nothing"


@pytest.mark.parametrize("in_flight", [0, 1], ids=["serial", "in-flight"])
@pytest.mark.parametrize("spelling", ["absolute", "relative"])
@pytest.mark.parametrize("hard", [False, True], ids=["failed", "killed"])
def test_a_resumed_run_publishes_exactly_what_an_uninterrupted_one_does(
    tmp_path: Path,
    reference: Path,
    hard: bool,
    spelling: str,
    in_flight: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Also with the sink's path relative to a working directory of the run's own, as the
    README writes it (a checkpoint used to record absolute paths and refuse them); and
    whether each batch is written before the next is launched or one stays in flight."""
    out = tmp_path / "out"
    if spelling == "relative":
        monkeypatch.chdir(tmp_path)
        out = Path("out")
    crash(out, hard=hard, in_flight=in_flight)
    checkpoint = json.loads((out / ".emb.jsonl.checkpoint").read_text(encoding="utf-8"))
    # Checkpoints after 5 and 10 loaded documents: the last cursor is that of d9.
    cursor, held, *_ = commits.decode(checkpoint["cursor"])
    assert cursor == "9"
    assert held is not None
    assert held.read == 10, "the commit records what the output holds"
    name = checkpoint["files"]["records"]["partial"]
    assert name == Path(name).name, "a checkpoint names a partial file, never a path"
    partial = out / name  # in the destination's folder
    past_commit = partial.stat().st_size - checkpoint["files"]["records"]["bytes"]
    if in_flight == 0:
        assert past_commit > 0, "the test is meant to leave records written after the commit"
    else:  # the one batch the crash left was launched, and is computed again on resume
        assert past_commit == 0, "a batch in flight when the loader crashed was written"

    summary = orchestrator(out, in_flight=in_flight).run(resume=True)
    assert summary.resumed_from == "9"
    assert summary.counts.documents + summary.counts.failed_documents == len(TEXTS) - 10
    assert_same_output(out, reference)
    # The summary counts what is published: the earlier run's commits and this run's work.
    published = summary.published
    assert published is not None
    assert published.read == published.documents + published.failed_documents == len(TEXTS)
    assert published.examples == len((out / "emb.jsonl").read_text().splitlines())


def test_a_resume_may_change_how_many_batches_are_in_flight(
    tmp_path: Path, reference: Path
) -> None:
    """``run.in_flight`` and ``run.prefetch`` decide how fast a run goes, not what it
    writes: a resume with other values continues the run instead of refusing it."""
    out = tmp_path / "out"
    crash(out, hard=True, in_flight=1)
    summary = orchestrator(out, in_flight=0).run(resume=True)
    assert summary.resumed_from == "9"
    assert_same_output(out, reference)


def test_a_refused_resume_names_the_setting_that_changed(tmp_path: Path) -> None:
    """A ``--set run.batch_size=8`` was refused as "the pipeline file's run section
    changed": neither the setting nor where it came from."""
    out = tmp_path / "out"
    crash(out, hard=True)
    with pytest.raises(UserError) as refused:
        orchestrator(out, batch_size=4).run(resume=True)
    said = str(refused.value)
    assert "the pipeline's setting run.batch_size (in the file or a --set) changed" in said
    assert "pipeline file's" not in said
    assert orchestrator(out).run(resume=True).resumed_from == "9", "it changed nothing"


def test_resume_with_nothing_committed_starts_from_the_beginning(
    tmp_path: Path, reference: Path
) -> None:
    out = tmp_path / "out"
    crash(out, every=0, hard=False)
    assert not (out / ".emb.jsonl.checkpoint").exists(), "checkpoint_every: 0 never commits"
    with structlog.testing.capture_logs() as logs:
        summary = orchestrator(out).run(resume=True)
    # Said as a warning: with an appending sink, starting over adds every document again
    # (a scheduler that always passes --resume appended 40 rows to 40, then to 80).
    (said,) = [e for e in logs if "nothing was committed" in e["event"]]
    assert said["log_level"] == "warning"
    assert summary.resumed_from is None
    assert summary.counts.documents + summary.counts.failed_documents == len(TEXTS)
    assert_same_output(out, reference)


def test_a_fresh_run_discards_an_interrupted_one(tmp_path: Path, reference: Path) -> None:
    out = tmp_path / "out"
    crash(out, hard=True)
    summary = orchestrator(out).run()
    assert summary.resumed_from is None
    assert_same_output(out, reference)


def test_checkpoints_come_after_everything_loaded_before_them(tmp_path: Path) -> None:
    run = orchestrator(tmp_path / "out", every=4)
    seen: list[tuple[str, int, int]] = []
    sink = run.sink
    written = {"records": 0, "errors": 0}
    write, write_error = sink.write, sink.write_error

    def counting_write(records: Any) -> None:
        written["records"] += len(records)
        write(records)

    def counting_write_error(error: Any) -> None:
        written["errors"] += 1
        write_error(error)

    def recording_commit(cursor: str) -> None:
        seen.append((commits.decode(cursor)[0], written["records"], written["errors"]))

    sink.write = counting_write  # type: ignore[method-assign]
    sink.write_error = counting_write_error  # type: ignore[method-assign]
    sink.commit = recording_commit  # type: ignore[method-assign]
    summary: RunSummary = run.run()
    assert [cursor for cursor, _, _ in seen] == ["3", "7", "11", "15", "19", "23"]
    # Every document up to the cursor is written or set aside when the commit comes:
    # one record per toy document, and the unreadable d3 at the first commit.
    set_aside = {3, 15, 18}
    for cursor, records, errors in seen:
        upto = range(int(cursor) + 1)
        assert records == sum(1 for i in upto if i not in set_aside)
        assert errors == sum(1 for i in upto if i in set_aside)
    assert summary.resumed_from is None


def test_resume_with_a_sink_that_cannot_is_a_user_error(tmp_path: Path) -> None:
    MemorySink.reset()
    with pytest.raises(UserError, match=r"cannot resume: sink 'memory'.*without --resume"):
        orchestrator(tmp_path, sink="memory").run(resume=True)
    assert MemorySink.records == []
    assert MemorySink.closed == [False]


def test_a_non_resumable_sink_is_never_checkpointed(tmp_path: Path) -> None:
    MemorySink.reset()
    summary = orchestrator(tmp_path, sink="memory", every=1).run()
    # A checkpoint after every document would flush every document into a batch of
    # its own; without, the toy documents pair up into batches of two.
    assert len(MemorySink.records) == len(TEXTS) - 3
    assert summary.counts.batches < len(TEXTS) - 3
    assert MemorySink.closed == [True]


def test_sinks_written_for_contract_1_0_still_load() -> None:
    assert CONTRACT_VERSIONS["sink"] == "1.6"
    assert compatibility_problem("sink", MemorySink.contract_version) is None
    assert MemorySink.contract_version == "1.0"
    assert not MemorySink.resumable
    assert registry().get("sink", "memory").usable
