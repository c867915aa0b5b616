"""``SinkContract``: all of a run's output or none of it, and each record exactly once.

The author provides ``make_sink(directory)`` (a sink writing under ``directory``)
and ``read_output(directory)`` (the records a reader would see there now, or None
when nothing is published). A crash is simulated by abandoning a sink between a
write and a commit without calling ``close``: the process died. A resumable sink
must then recover to its last commit, so that resuming writes every record exactly
once; any sink must leave nothing behind that a fresh run would duplicate. A sink
that stages parts (contract 1.3) must publish a run's parts together, once, only
when every part is finished, and resume a part from its last commit.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from seamline.contracts.component import Component
from seamline.contracts.conformance import CONFIG_FREE_KINDS
from seamline.contracts.documents import DocumentError, Shard
from seamline.contracts.errors import ContractViolation, UserError
from seamline.contracts.sink import OutputRecord, Sink, StagedRun
from seamline.contracts.testing._common import ComponentContract
from seamline.contracts.versions import Kind, parse_version

MakeSink = Callable[[Path], Sink[Any]]
ReadOutput = Callable[[Path], Sequence[OutputRecord] | None]

MANIFEST = {"seamline_manifest": 1, "pipeline": "conformance", "run_id": "conformance"}
DIM = 8


def sample_batches(batches: int = 3, per_batch: int = 4) -> list[list[OutputRecord]]:
    """Deterministic records: document ``d<i>`` has windows 0 and 1, vectors of unit scale."""
    rng = np.random.default_rng(0)
    out = []
    number = 0
    for _ in range(batches):
        batch = []
        for _ in range(per_batch):
            doc, window = divmod(number, 2)
            vector = rng.standard_normal(DIM).astype(np.float32)
            batch.append(
                OutputRecord(f"d{doc}", window, (window * 10, window * 10 + 10), vector, {})
            )
            number += 1
        out.append(batch)
    return out


def _keys(records: Sequence[OutputRecord]) -> list[tuple[str, int]]:
    return [(record.doc_id, int(record.index)) for record in records]


class SinkContract(ComponentContract):
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
    def component(self, make_sink: MakeSink, tmp_path: Path) -> Component[Any]:
        return make_sink(tmp_path / "identity")

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def assert_published(
        sink: Sink[Any],
        found: Sequence[OutputRecord] | None,
        expected: list[OutputRecord],
        after: str = "close(True)",
    ) -> None:
        """``found`` is ``expected``, once each and in order; ``after`` names the call that
        should have published it, so that a failure points at the call that did not."""
        assert found is not None, f"sink {sink.name!r} published nothing after {after}"
        counts: dict[tuple[str, int], int] = {}
        for key in _keys(found):
            counts[key] = counts.get(key, 0) + 1
        repeated = {key: n for key, n in counts.items() if n > 1}
        assert not repeated, (
            f"sink {sink.name!r}: records published more than once: {repeated} "
            "(exactly once is the contract)"
        )
        missing = [key for key in _keys(expected) if key not in counts]
        assert not missing, f"sink {sink.name!r}: records lost: {missing}"
        assert _keys(found) == _keys(expected), f"sink {sink.name!r}: records out of order"
        for got, want in zip(found, expected, strict=True):
            assert tuple(got.span) == tuple(want.span), (
                f"sink {sink.name!r}: record {_keys([want])[0]} has span {got.span}, "
                f"expected {want.span}"
            )
            vector = np.asarray(got.vector, np.float64)
            assert vector.shape == want.vector.shape, (
                f"sink {sink.name!r}: record {_keys([want])[0]} reads back a vector of shape "
                f"{vector.shape}, expected {want.vector.shape}"
            )
            assert np.allclose(vector, want.vector, rtol=1e-3, atol=1e-3), (
                f"sink {sink.name!r}: record {_keys([want])[0]} reads back a different vector"
            )

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

    # -- staged parts (contract 1.3) -----------------------------------------------------

    def test_staged_parts_are_published_together_and_once(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        driver = make_sink(tmp_path)
        if not driver.stageable:
            pytest.skip(f"sink {driver.name!r} does not stage parts")
        first, second, third = sample_batches()
        driver.begin_parts("run-a", 2, MANIFEST)
        part = driver.part("run-a", Shard(0, 2))
        assert part.recover(MANIFEST) is None, "a new part recovered a cursor"
        part.write(first)
        part.commit("p0")
        part.close(complete=True)
        assert part.finished(), f"sink {driver.name!r}: a closed part does not say it is finished"

        crashed = make_sink(tmp_path).part("run-a", Shard(1, 2))
        crashed.recover(MANIFEST)
        crashed.write(second)
        crashed.commit("p1")
        crashed.write(third)  # written, never committed: then the worker dies
        del crashed
        gc.collect()
        assert read_output(tmp_path) is None, (
            f"sink {driver.name!r}: a staged part is visible before publish_parts"
        )
        staged = make_sink(tmp_path).staged_run(MANIFEST)
        assert staged is not None, f"sink {driver.name!r}: staged_run() lost the staged run"
        assert (staged.run_id, staged.count, staged.finished) == ("run-a", 2, frozenset({0}))
        with pytest.raises(ContractViolation):
            make_sink(tmp_path).publish_parts("run-a", 2, MANIFEST)  # part 1 is unfinished
        assert read_output(tmp_path) is None, "publish_parts published an unfinished run"

        retried = make_sink(tmp_path).part("run-a", Shard(1, 2))
        assert retried.recover(MANIFEST) == "p1", "a retried part did not resume its last commit"
        retried.write(third)
        retried.close(complete=True)
        make_sink(tmp_path).publish_parts("run-a", 2, MANIFEST)
        self.assert_published(
            driver,
            read_output(tmp_path),
            [*first, *second, *third],
            after="publish_parts('run-a', 2, ...) with both parts finished",
        )
        assert make_sink(tmp_path).staged_run(MANIFEST) is None, "a published run is still staged"

    def test_a_fresh_staged_run_discards_an_unpublished_one(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        driver = make_sink(tmp_path)
        if not driver.stageable:
            pytest.skip(f"sink {driver.name!r} does not stage parts")
        first, second, _ = sample_batches()
        driver.begin_parts("abandoned", 1, MANIFEST)
        part = driver.part("abandoned", Shard(0, 1))
        part.recover(MANIFEST)
        part.write(first)
        part.close(complete=True)
        fresh = make_sink(tmp_path)
        fresh.begin_parts("fresh", 1, MANIFEST)
        assert fresh.staged_run(MANIFEST) == StagedRun("fresh", 1, frozenset())
        part = fresh.part("fresh", Shard(0, 1))
        part.recover(MANIFEST)
        part.write(second)
        part.close(complete=True)
        fresh.publish_parts("fresh", 1, MANIFEST)
        self.assert_published(
            fresh, read_output(tmp_path), second, after="publish_parts('fresh', 1, ...)"
        )

    def test_a_staged_run_s_hold_keeps_every_other_run_out(
        self, make_sink: MakeSink, read_output: ReadOutput, tmp_path: Path
    ) -> None:
        """Contract 1.6: ``hold_destination`` keeps out every other run, not the parts."""
        driver = make_sink(tmp_path)
        if not driver.stageable or parse_version(driver.contract_version) < (1, 6):
            pytest.skip(f"sink {driver.name!r} does not stage parts under contract 1.6")
        with driver.hold_destination():
            for call, other in (("start()", _start), ("hold_destination()", _hold_and_leave)):
                refused = make_sink(tmp_path)
                try:
                    other(refused)
                except UserError:
                    refused.close(complete=False)
                else:
                    pytest.fail(f"sink {driver.name!r}: another run's {call} was not refused "
                                "while the driver held hold_destination()")  # fmt: skip
            driver.begin_parts("held", 1, MANIFEST)
            part = driver.part("held", Shard(0, 1))
            part.recover(MANIFEST)
            part.write(sample_batches()[0])
            part.close(complete=True)
            driver.publish_parts("held", 1, MANIFEST)
        after = make_sink(tmp_path)
        after.start(MANIFEST)  # the hold was let go
        after.write(sample_batches()[1])
        after.close(complete=True)
        self.assert_published(after, read_output(tmp_path), sample_batches()[1])


def _start(sink: Sink[Any]) -> None:
    sink.start(MANIFEST)


def _hold_and_leave(sink: Sink[Any]) -> None:
    with sink.hold_destination():
        pass
