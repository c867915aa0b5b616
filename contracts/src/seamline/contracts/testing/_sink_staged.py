"""The checks of a sink that stages parts (sink contract 1.3) and holds its destination (1.6).

Mixed into :class:`~seamline.contracts.testing.SinkContract`, whose fixtures
(``make_sink``, ``read_output``) they use; each skips for a sink that does not stage.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts.documents import Shard
from seamline.contracts.errors import ContractViolation, UserError
from seamline.contracts.sink import Sink, StagedRun
from seamline.contracts.testing._sink_records import (
    MANIFEST,
    MakeSink,
    ReadOutput,
    assert_published,
    sample_batches,
)
from seamline.contracts.versions import parse_version


class StagedPartChecks:
    """Staged parts: published together, once, when all are finished; the hold keeps others out."""

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
        assert_published(
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
        assert_published(
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
        assert_published(after, read_output(tmp_path), sample_batches()[1])


def _start(sink: Sink[Any]) -> None:
    sink.start(MANIFEST)


def _hold_and_leave(sink: Sink[Any]) -> None:
    with sink.hold_destination():
        pass
