"""Batches in flight (``run.in_flight``): the device computes one batch while the host writes
the one before, with the same outputs, in the same order, timed without overlap; in a run
and in an in-process embedder."""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
import pytest

from seamline.contracts import Batch, BatchDone, RunFinished
from seamline.core.attention.steps import Launched
from seamline.core.config import parse_pipeline
from seamline.core.embedder import Embedder
from seamline.core.in_flight import InFlight
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.faults.call_scenarios import recorded_spans

TEXTS = [" ".join(["w"] * (1 + n % 3)) for n in range(20)]  # five batches of length 4
BATCHES = 5


@pytest.fixture(autouse=True)
def _clean() -> None:
    MemorySink.reset()
    RecordingMonitor.events.clear()


def orchestrator(in_flight: int, texts: list[str] = TEXTS) -> Orchestrator:
    registry = toy_registry()
    text = (
        "pipeline: in-flight\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "monitors: [{use: recording}]\n"
        "sink: {use: memory}\n"
        f"run: {{batch_size: 4, buckets: [4, 8], in_flight: {in_flight}}}\n"
    )
    return Orchestrator(parse_pipeline(text, "in-flight.yaml", registry), registry)


def launches_and_writes(run: Orchestrator) -> list[str]:
    """Run it; "launch" ("compile" when the batch's shape is new) and "write", in order."""
    order: list[str] = []
    launch, write = run.encoder.launch, run.sink.write

    def launching(batch: Batch) -> Launched:
        order.append("launch" if run.steps.compiled(batch) else "compile")
        return launch(batch)

    def writing(records: Any) -> None:
        order.append("write")
        write(records)

    run.encoder.launch = launching  # type: ignore[method-assign]
    run.sink.write = writing  # type: ignore[method-assign]
    run.run()
    return order


@pytest.mark.parametrize("in_flight", [0, 1, 2])
def test_the_next_batches_are_launched_before_a_batch_is_written(in_flight: int) -> None:
    order = [
        "launch" if what == "compile" else what
        for what in launches_and_writes(orchestrator(in_flight))
    ]
    assert order.count("launch") == order.count("write") == BATCHES
    writes = [at for at, what in enumerate(order) if what == "write"]
    launched_before = [order[:at].count("launch") for at in writes]
    assert launched_before == [min(n + in_flight, BATCHES) for n in range(1, BATCHES + 1)]


def test_the_batches_in_flight_are_written_before_a_new_shape_is_compiled() -> None:
    """Compiling takes seconds; counted into the batch before it, it would show as that
    batch's time (and the steady state's)."""
    texts = ["w"] * 12 + ["w w w w w w"] * 8  # three batches of length 4, then two of 8
    order = launches_and_writes(orchestrator(2, texts))
    assert order.count("compile") == 2
    second = order.index("compile", 1)
    assert order[:second].count("write") == 3, order  # every batch launched before it


def test_in_flight_changes_neither_the_outputs_nor_their_order() -> None:
    orchestrator(0).run()
    serial = [(r.doc_id, r.vector) for r in MemorySink.records]
    MemorySink.reset()
    orchestrator(2).run()
    overlapped = [(r.doc_id, r.vector) for r in MemorySink.records]
    assert [d for d, _ in overlapped] == [d for d, _ in serial]
    for (_, got), (_, expected) in zip(overlapped, serial, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_batch_seconds_do_not_overlap_and_add_up_to_at_most_the_run() -> None:
    """``BatchDone.seconds`` counts from a batch's launch, or from the previous batch's
    hand-over when that came later: with host work as slow as here (each batch's outputs
    waited for 50 ms after the device was done), counting from the launch alone would add
    up to nearly twice the run."""
    run = orchestrator(1)
    finish = run.encoder.finish

    def slow_finish(launched: Launched) -> np.ndarray:
        time.sleep(0.05)
        return finish(launched)

    run.encoder.finish = slow_finish  # type: ignore[method-assign]
    run.run()
    done = [e for e in RecordingMonitor.events if isinstance(e, BatchDone)]
    (finished,) = [e for e in RecordingMonitor.events if isinstance(e, RunFinished)]
    assert len(done) == BATCHES
    assert all(e.seconds >= 0.05 for e in done)
    assert sum(e.seconds for e in done) <= finished.seconds


@pytest.mark.parametrize("in_flight", [0, 1])
def test_a_batch_apply_span_runs_from_its_launch(in_flight: int) -> None:
    """Each ``seamline.model.apply`` span starts when its batch is launched: with one in
    flight, a batch's span starts before the previous one's ends (the device holds it
    while the host waits for the other); one at a time, they follow each other."""
    with recorded_spans() as exporter:
        orchestrator(in_flight).run()
        spans = [s for s in exporter.get_finished_spans() if s.name == "seamline.model.apply"]
    assert len(spans) == BATCHES
    spans.sort(key=lambda s: s.start_time or 0)
    overlaps = [
        (later.start_time or 0) < (earlier.end_time or 0)
        for earlier, later in itertools.pairwise(spans)
    ]
    assert overlaps == [in_flight > 0] * (BATCHES - 1)


def test_in_flight_finishes_in_launch_order_and_keeps_at_most_depth() -> None:
    finished: list[int] = []
    queue: InFlight[int] = InFlight(2, finished.append)
    for n in range(5):
        queue.add(n)
        assert len(queue) == min(n + 1, 2)
    assert finished == [0, 1, 2]
    queue.drain()
    assert finished == [0, 1, 2, 3, 4]
    assert len(queue) == 0
    with pytest.raises(ValueError, match="depth"):
        InFlight(-1, finished.append)


def test_what_a_failure_leaves_launched_is_abandoned_not_finished() -> None:
    finished: list[int] = []

    def finish(n: int) -> None:
        if n == 1:
            raise RuntimeError("the sink failed")
        finished.append(n)

    queue: InFlight[int] = InFlight(1, finish)
    queue.add(0)
    queue.add(1)
    with pytest.raises(RuntimeError):
        queue.add(2)  # finishing 1 fails; 2 stays launched
    assert finished == [0]
    assert queue.abandon() == [2]
    assert len(queue) == 0


def embedder_batches(in_flight: int) -> tuple[list[np.ndarray], list[BatchDone], list[str]]:
    """Vectors, ``BatchDone`` events and the order of launches and finishes of an embedder
    encoding five batches' worth of texts."""
    done: list[BatchDone] = []

    class Batches:
        name = "batches"

        def bind(self, publish: Any) -> None:
            pass

        def observe(self, event: Any) -> None:
            if isinstance(event, BatchDone):
                done.append(event)

        def close(self) -> None:
            pass

    run = {"batch_size": 4, "buckets": [4, 8], "in_flight": in_flight}
    embedder = Embedder(
        {"use": "toy"}, "native", run, registry=toy_registry(), monitors=[Batches()]
    )
    order: list[str] = []
    launch, finish = embedder.encoder.launch, embedder.encoder.finish

    def launching(batch: Batch) -> Launched:
        order.append("launch")
        return launch(batch)

    def finishing(launched: Launched) -> np.ndarray:
        order.append("finish")
        return finish(launched)

    with embedder:
        embedder.encode(["warm up"])  # compiled first: its own pass
        done.clear()
        embedder.encoder.launch = launching  # type: ignore[method-assign]
        embedder.encoder.finish = finishing  # type: ignore[method-assign]
        vectors = embedder.encode(TEXTS)
    return list(vectors), done, order


def test_an_embedder_launches_the_next_batch_before_it_finishes_one() -> None:
    serial, serial_done, serial_order = embedder_batches(0)
    overlapped, overlapped_done, overlapped_order = embedder_batches(1)
    assert serial_order == ["launch", "finish"] * BATCHES
    assert overlapped_order == ["launch", *["launch", "finish"] * (BATCHES - 1), "finish"]
    for got, expected in zip(overlapped, serial, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert [e.index for e in overlapped_done] == [e.index for e in serial_done]
    assert len(overlapped_done) == BATCHES


def test_a_failed_pass_ends_the_spans_of_the_batches_it_left_launched() -> None:
    """The second batch's outputs fail: the first is handed over, the second's span ends
    with the error, and the third, launched before, ends too, marked, not left open."""
    run = {"batch_size": 4, "buckets": [4, 8], "in_flight": 1}
    embedder = Embedder({"use": "toy"}, "native", run, registry=toy_registry())
    finish = embedder.encoder.finish
    calls = 0

    def failing(launched: Launched) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("the device failed")
        return finish(launched)

    with embedder, recorded_spans() as exporter:
        embedder.encode(["warm up"])
        exporter.clear()
        embedder.encoder.finish = failing  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="the device failed"):
            embedder.encode(TEXTS)
        spans = [s for s in exporter.get_finished_spans() if s.name == "seamline.embed.batch"]
    assert [s.status.status_code.name for s in spans] == ["UNSET", "ERROR", "ERROR"]
    assert spans[-1].status.description == "the pass failed first"
