"""A Rust library's panic in a component is a failure, not an interrupt (core.stops).

pyo3's ``PanicException`` is a ``BaseException`` that is no ``Exception``. A third
party's Qwen3 model whose tokenizer panicked in ``prepare`` (a stride as long as the
window) ended ``seamline run`` with a 175-line traceback, where the docs say that an
exception in ``prepare`` sets the document aside; on a server, the queue took the panic
for a Ctrl-C: the request went back to the head of the queue and the engine's thread
ended, so that every later request hung. Only Python's own stops
(:data:`~seamline.core.stops.INTERRUPTS`) stop the work now; the tests use a stand-in
of pyo3's class (:mod:`tests.core.panicky`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

from seamline.core.config import parse_pipeline
from seamline.core.embed_queue import EmbedQueue, Part, Request
from seamline.core.embedder import Embedder, Unembeddable
from seamline.core.orchestrator import Orchestrator
from seamline.core.stops import is_interrupt
from seamline.core.telemetry import tracer
from tests.core.panicky import (
    PANIC,
    PANIC_IN_COLLATE,
    PANIC_IN_PREPARE,
    PanicException,
    panicky_registry,
)
from tests.core.toy import MemorySink


@pytest.mark.parametrize(
    ("error", "interrupt"),
    [
        (KeyboardInterrupt(), True),
        (SystemExit(3), True),
        (GeneratorExit(), True),
        (asyncio.CancelledError(), True),
        (BaseExceptionGroup("g", [PanicException(), KeyboardInterrupt()]), True),
        (PanicException(PANIC), False),
        (BaseExceptionGroup("g", [PanicException(), ValueError()]), False),
        (ValueError("x"), False),
    ],
)
def test_only_pythons_stops_are_interrupts(error: BaseException, interrupt: bool) -> None:
    assert is_interrupt(error) is interrupt


def test_a_panic_in_prepare_sets_the_document_aside_and_the_run_goes_on() -> None:
    MemorySink.reset()
    registry = panicky_registry()
    texts = ["one two", PANIC_IN_PREPARE, "three four"]
    text = (
        "pipeline: toy\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "toy.yaml", registry), registry).run()
    assert {e.id: e.reason for e in MemorySink.errors} == {
        "d1": f"prepare failed: PanicException: {PANIC}"
    }
    assert sorted({r.doc_id for r in MemorySink.records}) == ["d0", "d2"]


@pytest.fixture
def embedder() -> Iterator[Embedder]:
    built = Embedder(
        {"use": "toy"}, "native", {"batch_size": 4, "buckets": [8]}, registry=panicky_registry()
    )
    yield built
    built.close()


def test_a_panic_in_prepare_is_the_texts_own_failure(embedder: Embedder) -> None:
    with pytest.raises(Unembeddable, match=r"texts\[1\] cannot be embedded: prepare failed"):
        embedder.encode(["fine", PANIC_IN_PREPARE])
    assert embedder.encode(["fine"]).shape == (1, embedder.dimension)


def test_a_panic_in_prepare_fails_its_own_request_of_a_shared_pass(embedder: Embedder) -> None:
    bad = embedder.submit([PANIC_IN_PREPARE])
    good = embedder.submit(["also fine"])
    assert embedder.drain(5.0) == 2, "one pass for both, led by a server's thread"
    with pytest.raises(Unembeddable, match="PanicException"):
        bad.result()
    np.testing.assert_allclose(good.result(), embedder.encode(["also fine"]), atol=1e-6)
    assert embedder.queue.waiting() == (0, 0)


def test_a_panic_elsewhere_fails_the_pass_not_the_thread_that_leads_it(
    embedder: Embedder,
) -> None:
    # Taken for an interrupt, it left the drain (a server's engine thread) and put the
    # request back at the head of the queue, to panic again in the next pass.
    failing = embedder.submit([PANIC_IN_COLLATE])
    embedder.drain(5.0)
    assert failing.done()
    with pytest.raises(PanicException):
        failing.result()
    assert embedder.queue.waiting() == (0, 0)
    assert embedder.encode(["fine"]).shape == (1, embedder.dimension)


def test_a_pass_that_panics_finishes_its_requests_rather_than_queueing_them_again() -> None:
    def run(parts: list[Part]) -> None:
        raise PanicException(PANIC)

    queue = EmbedQueue(run)
    request = Request(["a"], "truncate", None, tracer().start_span("request"))
    queue.put(request)
    with pytest.raises(PanicException):
        queue.drain(1.0)
    assert request.done.is_set()
    assert isinstance(request.error, RuntimeError)
    assert queue.waiting() == (0, 0)


def test_an_interrupt_still_puts_the_others_requests_back() -> None:
    def run(parts: list[Part]) -> None:
        raise KeyboardInterrupt

    queue = EmbedQueue(run)
    request = Request(["a"], "truncate", None, tracer().start_span("request"))
    queue.put(request)
    with pytest.raises(KeyboardInterrupt):
        queue.drain(1.0)
    assert not request.done.is_set()
    assert queue.waiting() == (1, 1)
