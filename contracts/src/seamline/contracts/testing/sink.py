"""``SinkContract``: all of a run's output or none of it, and each record exactly once.

The author provides ``make_sink(directory)`` (a sink writing under ``directory``)
and ``read_output(directory)`` (the records a reader would see there now, or None
when nothing is published). A crash is simulated by abandoning a sink between a
write and a commit without calling ``close``: the process died. A resumable sink
must then recover to its last commit, so that resuming writes every record exactly
once; any sink must leave nothing behind that a fresh run would duplicate. A sink
that stages parts (contract 1.3) must publish a run's parts together, once, only
when every part is finished, and resume a part from its last commit. Each record's
text is read back for a sink declaring 1.2 or later, and metadata, where a sink
stores any, must be the record's own; a run of 1,200 records is published whole;
and, with the optional ``read_errors(directory)``, the errors are read back too.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seamline.contracts.component import Component
from seamline.contracts.conformance import CONFIG_FREE_KINDS
from seamline.contracts.documents import DocumentError
from seamline.contracts.errors import UserError
from seamline.contracts.testing._common import ComponentContract
from seamline.contracts.testing._sink_records import (
    DIM,
    MANIFEST,
    MakeSink,
    ReadErrors,
    ReadOutput,
    assert_published,
    assert_same_record,
    sample_batches,
    stored_fields,
)
from seamline.contracts.testing._sink_staged import StagedPartChecks
from seamline.contracts.versions import Kind

__all__ = [
    "DIM",
    "MANIFEST",
    "MakeSink",
    "ReadErrors",
    "ReadOutput",
    "SinkContract",
    "sample_batches",
    "stored_fields",
]


class SinkContract(StagedPartChecks, ComponentContract):
    """Subclass it and provide ``make_sink`` and ``read_output``."""

    kind: ClassVar[Kind] = "sink"
    config_in_record: ClassVar[bool] = "sink" not in CONFIG_FREE_KINDS

    @pytest.fixture
    def make_sink(self) -> MakeSink:
        raise NotImplementedError("provide a 'make_sink' fixture: directory -> your Sink")

    @pytest.fixture
    def read_output(self) -> ReadOutput:
        raise NotImplementedError(
            "provide a 'read_output' fixture: directory -> the published records, or None"
        )

    @pytest.fixture
    def read_errors(self) -> ReadErrors | None:
        """Optional: directory -> the error records a reader sees there (each a mapping with
        ``id`` and ``reason``), or None when nothing is published. A sink with a reader
        (contract 1.4): ``lambda d: read_errors(d / "out.x", YourSink)`` from
        ``seamline.contracts.readback``. Without it, ``write_error`` is not checked."""
        return None

    @pytest.fixture
    def component(self, make_sink: MakeSink, tmp_path: Path) -> Component[Any]:
        return make_sink(tmp_path / "identity")

    # -- helpers ---------------------------------------------------------------------------

    assert_published = staticmethod(assert_published)
    assert_same_record = staticmethod(assert_same_record)

    # -- the checks ------------------------------------------------------------------------

    def test_publishes_exactly_what_was_written(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        sink = make_sink(tmp_path)
        sink.start(MANIFEST)
        batches = sample_batches()
        for batch in batches:
            sink.write(batch)
        sink.write_error(DocumentError("broken", "not UTF-8", {}))
        sink.close(complete=True)
        self.assert_published(sink, read_output(tmp_path), [r for b in batches for r in b])

    def test_publishes_a_long_run_whole(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        """1,200 records in batches of 100 and no commit between them (a host commits only
        every so many documents): whatever a sink buffers, nothing may be lost, where the
        suite's other runs hold a dozen records, never past a buffer's end."""
        sink = make_sink(tmp_path)
        sink.start(MANIFEST)
        batches = sample_batches(batches=12, per_batch=100)
        for batch in batches:
            sink.write(batch)
        sink.close(complete=True)
        self.assert_published(sink, read_output(tmp_path), [r for b in batches for r in b])

    def test_errors_are_read_back(
        self,
        make_sink: MakeSink,
        read_output: ReadOutput,
        read_errors: ReadErrors | None,
        tmp_path: Path,
    ) -> None:
        """What ``write_error`` kept is published with the run: each error once, in order,
        with its id and reason (checked where the author provides ``read_errors``)."""
        if read_errors is None:
            pytest.skip("no read_errors fixture: the errors a sink keeps are not read back")
        errors = [
            DocumentError("broken", "not UTF-8", {"path": "broken.txt"}),
            DocumentError("empty", "an empty text", {}, "skip"),
        ]
        sink = make_sink(tmp_path)
        sink.start(MANIFEST)
        sink.write(sample_batches()[0])
        for error in errors:
            sink.write_error(error)
        sink.close(complete=True)
        found = read_errors(tmp_path)
        assert found is not None, f"sink {sink.name!r} published no errors after close(True)"
        got = [(row.get("id"), row.get("reason")) for row in found]
        want = [(error.id, error.reason) for error in errors]
        assert got == want, (
            f"sink {sink.name!r}: the errors read back are {got}, expected {want}: every "
            "document set aside with write_error must be published with the run"
        )

    def test_nothing_visible_before_close(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        sink = make_sink(tmp_path)
        sink.start(MANIFEST)
        for batch in sample_batches():
            sink.write(batch)
            sink.commit("c")
        assert read_output(tmp_path) is None, (
            f"sink {sink.name!r}: output is visible before close(True); readers could see "
            "half a run"
        )
        sink.close(complete=False)
        assert read_output(tmp_path) is None, (
            f"sink {sink.name!r}: close(complete=False) published a failed run's output"
        )

    def test_exactly_once_across_a_crash(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        first, second, third = sample_batches()
        crashed = make_sink(tmp_path)
        crashed.start(MANIFEST)
        crashed.write(first)
        crashed.commit("after-first")
        crashed.write(second)  # written, never committed: then the process dies
        resumable = crashed.resumable
        del crashed
        gc.collect()

        sink = make_sink(tmp_path)
        if resumable:
            cursor = sink.recover(MANIFEST)
            assert cursor == "after-first", (
                f"sink {sink.name!r}: recover() returned {cursor!r}, not the last committed "
                "cursor 'after-first'"
            )
            remaining = [second, third]
        else:
            sink.start(MANIFEST)  # a sink that cannot resume starts over
            remaining = [first, second, third]
        for batch in remaining:
            sink.write(batch)
        sink.close(complete=True)
        self.assert_published(sink, read_output(tmp_path), [*first, *second, *third])

    def test_resumes_from_a_path_relative_to_the_working_directory(
        self,
        make_sink: MakeSink,
        read_output: ReadOutput,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Users write relative paths (``out/emb.jsonl``, as every example does): from a
        working directory of the run's own, a sink made for a relative folder must commit,
        resume after a crash and publish exactly as for an absolute one. A sink that
        records a path in one spelling and compares it with another refuses its own
        checkpoint here."""
        monkeypatch.chdir(tmp_path)
        relative = Path("relative-out")
        first, second, third = sample_batches()
        crashed = make_sink(relative)
        crashed.start(MANIFEST)
        crashed.write(first)
        crashed.commit("after-first")
        crashed.write(second)  # written, never committed: then the process dies
        resumable = crashed.resumable
        del crashed
        gc.collect()

        sink = make_sink(relative)
        remaining = [first, second, third]
        if resumable:
            try:
                cursor = sink.recover(MANIFEST)
            except UserError as err:
                pytest.fail(
                    f"sink {sink.name!r} refused to resume from a relative path "
                    f"({str(relative / '...')!r} from {str(tmp_path)!r}), its own checkpoint: "
                    f"{err}"
                )
            assert cursor == "after-first", (
                f"sink {sink.name!r}: recover() from a relative path returned {cursor!r}, "
                "not the last committed cursor 'after-first'"
            )
            remaining = [second, third]
        else:
            sink.start(MANIFEST)
        for batch in remaining:
            sink.write(batch)
        sink.close(complete=True)
        self.assert_published(sink, read_output(relative), [*first, *second, *third])

    def test_recover_without_a_commit_starts_over(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        crashed = make_sink(tmp_path)
        crashed.start(MANIFEST)
        batches = sample_batches()
        crashed.write(batches[0])
        if not crashed.resumable:
            pytest.skip(f"sink {crashed.name!r} does not resume")
        del crashed
        gc.collect()
        sink = make_sink(tmp_path)
        cursor = sink.recover(MANIFEST)
        assert cursor is None, (
            f"sink {sink.name!r}: recover() returned {cursor!r} though nothing was committed"
        )
        for batch in batches:
            sink.write(batch)
        sink.close(complete=True)
        self.assert_published(sink, read_output(tmp_path), [r for b in batches for r in b])

    def test_a_fresh_run_discards_an_abandoned_one(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        batches = sample_batches()
        crashed = make_sink(tmp_path)
        crashed.start(MANIFEST)
        crashed.write(batches[0])
        crashed.commit("after-first")
        del crashed
        gc.collect()
        sink = make_sink(tmp_path)
        sink.start(MANIFEST)  # not a resume: the abandoned run's records must not reappear
        sink.write(batches[1])
        sink.close(complete=True)
        self.assert_published(sink, read_output(tmp_path), batches[1])
