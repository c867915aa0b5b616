"""The embedder's queue as a server drives it: submit, drain, wait for more, cancel, trace.

The toy model keeps these fast. A server submits each request and keeps one thread
leading passes (``drain``): requests arriving within ``max_wait`` of the oldest share a
pass, a cancelled request takes no place in a batch, and every request's span and the
batch span that served it are linked both ways.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.adapters.telemetry_setup import configure_telemetry, shutdown_telemetry
from seamline.contracts import BatchDone
from seamline.core.config import TelemetrySettings
from seamline.core.embedder import Cancelled, Embedder, Unembeddable
from seamline.core.telemetry import tracer
from tests.core.toy import toy_registry


class Batches:
    """The ``BatchDone`` events an embedder emits (one per batch, as a run's)."""

    name = "batches"

    def bind(self, publish: Any) -> None:
        pass

    def __init__(self) -> None:
        self.done: list[BatchDone] = []

    def observe(self, event: Any) -> None:
        if isinstance(event, BatchDone):
            self.done.append(event)

    def close(self) -> None:
        pass


@pytest.fixture
def batches() -> Batches:
    return Batches()


@pytest.fixture
def embedder(batches: Batches) -> Iterator[Embedder]:
    built = Embedder(
        {"use": "toy"},
        "native",
        {"batch_size": 8, "buckets": [16]},
        registry=toy_registry(),
        monitors=[batches],
        max_wait=0.5,
    )
    built.encode(["warm up"])  # compiled before anything is timed
    batches.done.clear()
    yield built
    built.close()


def drain_in_thread(embedder: Embedder) -> tuple[threading.Thread, list[int]]:
    drained: list[int] = []
    thread = threading.Thread(target=lambda: drained.append(embedder.drain(5.0)))
    thread.start()
    return thread, drained


def test_a_leader_waits_up_to_max_wait_so_that_later_requests_share_its_pass(
    embedder: Embedder, batches: Batches
) -> None:
    first = embedder.submit(["one two three"])
    thread, drained = drain_in_thread(embedder)
    time.sleep(0.1)  # well within max_wait (0.5 s) of the first request
    second = embedder.submit(["four five"])
    thread.join(timeout=30)
    assert drained == [2], "both requests' texts in one pass"
    assert first.done()
    assert second.done()
    assert len(batches.done) == 1
    assert batches.done[0].examples == 2
    np.testing.assert_allclose(second.result(), embedder.encode(["four five"]), atol=1e-6)


def test_without_max_wait_a_leader_takes_the_queue_at_once(batches: Batches) -> None:
    with Embedder({"use": "toy"}, "native", registry=toy_registry(), monitors=[batches]) as e:
        e.encode(["warm up"])
        started = time.perf_counter()
        e.submit(["alone"])
        assert e.drain(5.0) == 1
        assert time.perf_counter() - started < 0.4
        assert e.drain(0.01) == 0, "nothing left: drain waits its timeout and returns"


def test_a_cancelled_request_leaves_the_queue_and_takes_no_batch_slot(
    embedder: Embedder, batches: Batches
) -> None:
    gone = embedder.submit(["alpha beta", "gamma delta"])
    kept = embedder.submit("epsilon")
    assert gone.cancel()
    assert embedder.drain(5.0) == 1
    assert [b.examples for b in batches.done] == [1], "only the kept text was batched"
    with pytest.raises(Cancelled):
        gone.result()
    assert not kept.cancel(), "a request already embedded cannot be cancelled"
    assert kept.result().shape == (32,)  # type: ignore[union-attr]
    assert kept.tokens == 1


def test_done_callbacks_run_once_and_tokens_are_the_batched_ones(embedder: Embedder) -> None:
    seen: list[int] = []
    pending = embedder.submit(["a b c", "d e"])
    pending.add_done_callback(lambda p: seen.append(p.tokens))
    assert embedder.drain(5.0) == 2
    pending.add_done_callback(lambda p: seen.append(-1))  # already done: called now
    assert seen == [5, -1]


def in_thread(work: Any, seconds: float = 30.0) -> list[Any]:
    """``work()`` in a thread of its own, its result in the list; a hang fails the test."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), "still waiting: the embedder hangs"
    return out


def unclosed_embedder() -> Embedder:
    """One the test closes itself: when the embedder hangs, closing would hang too, and the
    test is to fail, not to wait for ever."""
    return Embedder({"use": "toy"}, "native", {"buckets": [16]}, registry=toy_registry())


@pytest.mark.parametrize("leader", ["result", "drain"])
def test_a_done_callback_may_embed_again(leader: str) -> None:
    """The callback runs in the thread that led the pass: under the engine it waited for the
    lock its own thread held, and every later caller with it."""
    embedder = unclosed_embedder()
    inner: list[Any] = []
    pending = embedder.submit(["first text"])
    pending.add_done_callback(lambda _: inner.append(embedder.encode("second text")))
    in_thread(pending.result if leader == "result" else lambda: embedder.drain(5.0))
    assert len(inner) == 1, "the callback ran once and embedded"
    assert in_thread(lambda: embedder.encode(["third"]).shape) == [(1, 32)]
    np.testing.assert_allclose(inner[0], embedder.encode("second text"), atol=1e-6)
    in_thread(embedder.close)


def test_a_done_callback_may_close_the_embedder() -> None:
    embedder = unclosed_embedder()
    pending = embedder.submit(["first text"])
    pending.add_done_callback(lambda _: embedder.close())
    assert in_thread(lambda: pending.result().shape) == [(1, 32)]  # type: ignore[union-attr]
    with pytest.raises(RuntimeError, match="closed"):
        embedder.encode(["after"])


def test_submit_checks_its_arguments_now(embedder: Embedder) -> None:
    with pytest.raises(ValueError, match="at least one text"):
        embedder.submit([])
    with pytest.raises(TypeError, match=r"texts\[1\] is an int"):
        embedder.submit(["ok", 3])  # type: ignore[list-item]
    assert embedder.encode([]).shape == (0, 32)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="max_wait"):
        Embedder({"use": "toy"}, "native", registry=toy_registry(), max_wait=-1)


def read_spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_request_span_and_the_batch_span_that_served_it_are_linked(
    embedder: Embedder, tmp_path: Path
) -> None:
    path = tmp_path / "trace.jsonl"
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(path)))
    try:
        start = threading.Barrier(2)

        def caller(text: str) -> None:
            with tracer().start_as_current_span(f"client {text}"):
                start.wait()
                embedder.encode([text])

        threads = [threading.Thread(target=caller, args=(t,)) for t in ("red fox", "blue")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        shutdown_telemetry()
    spans = read_spans(path)
    requests = [s for s in spans if s["name"] == "seamline.embed.request"]
    (batch,) = [s for s in spans if s["name"] == "seamline.embed.batch"]
    (one_pass,) = [s for s in spans if s["name"] == "seamline.embed.pass"]
    clients = {s["span_id"]: s for s in spans if s["name"].startswith("client ")}
    assert len(requests) == 2
    assert {r["parent_span_id"] for r in requests} == set(clients), "children of the callers"
    request_ids = {r["span_id"] for r in requests}
    assert {link["span_id"] for link in batch["links"]} == request_ids
    assert {link["span_id"] for link in one_pass["links"]} == request_ids
    for request in requests:
        assert [link["span_id"] for link in request["links"]] == [batch["span_id"]]
        assert request["attributes"]["seamline.tokens"] >= 1
    assert one_pass["parent_span_id"] is None, "a pass is the root of a trace of its own"
    assert batch["parent_span_id"] == one_pass["span_id"]
    assert batch["attributes"]["seamline.requests"] == 2
    (apply,) = [s for s in spans if s["name"] == "seamline.model.apply"]
    assert apply["parent_span_id"] == batch["span_id"], "the batch leads to its kernel's span"


def test_a_text_the_model_cannot_embed_fails_its_own_request_only(embedder: Embedder) -> None:
    bad = embedder.submit(["fine", "boom"])  # the toy model cannot prepare "boom"
    good = embedder.submit(["also fine"])
    assert embedder.drain(5.0) == 3, "one pass for both"
    with pytest.raises(Unembeddable, match=r"texts\[1\] cannot be embedded") as refused:
        bad.result()
    assert refused.value.index == 1
    np.testing.assert_allclose(good.result(), embedder.encode(["also fine"]), atol=1e-6)


def test_an_empty_string_is_one_text_and_an_empty_list_none(embedder: Embedder) -> None:
    # encode("") used to take the empty string for an empty batch and return no row.
    one = embedder.encode("")
    assert isinstance(one, np.ndarray)
    assert one.shape == (embedder.dimension,)
    none = embedder.encode([])
    assert isinstance(none, np.ndarray)
    assert none.shape == (0, embedder.dimension)
    assert embedder.encode(iter(["a", ""])).shape == (2, embedder.dimension)


def test_an_interrupt_of_the_leader_is_raised_in_the_leader_only(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SIGINT is a KeyboardInterrupt in the main thread, here leading a pass that also held
    # a worker's texts; the worker used to raise the same KeyboardInterrupt object.
    from seamline.core import embedder as embedder_module

    leader = threading.get_ident()
    embed = embedder_module._embed_pass
    held: list[int] = []

    def interrupted(*args: Any) -> Any:
        if threading.get_ident() == leader:
            held.append(len(args[1]))  # (embedder, requests, ...)
            raise KeyboardInterrupt
        return embed(*args)

    monkeypatch.setattr(embedder_module, "_embed_pass", interrupted)
    mine = embedder.submit(["a big batch of text"] * 4)
    got: list[Any] = []

    def worker_encodes() -> None:
        time.sleep(0.1)  # the main thread leads by now, waiting max_wait (0.5 s) for more
        try:
            got.append(embedder.encode(["w x"]))
        except BaseException as err:  # what the worker saw is the finding
            got.append(err)

    worker = threading.Thread(target=worker_encodes)
    worker.start()
    with pytest.raises(KeyboardInterrupt):
        mine.result()
    worker.join(timeout=30)
    monkeypatch.setattr(embedder_module, "_embed_pass", embed)
    assert held == [2], "the interrupted pass held the worker's request too"
    (vectors,) = got  # re-queued and embedded by the next pass: the worker's own rows
    assert isinstance(vectors, np.ndarray), f"the worker raised {vectors!r}"
    np.testing.assert_allclose(vectors, embedder.encode(["w x"]), atol=1e-6)


def test_a_request_whose_pass_was_interrupted_ends_cancelled_not_interrupted_again(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a Ctrl-C in p.result(), p.done() was True and every later p.result() raised a
    # bare KeyboardInterrupt() (as if Ctrl-C'd again), whose traceback kept the pass's
    # frames (batches, device arrays) alive with the Pending.
    from seamline.core import embedder as embedder_module

    embed = embedder_module._embed_pass

    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(embedder_module, "_embed_pass", interrupted)
    pending = embedder.submit(["one two", "three"])
    with pytest.raises(KeyboardInterrupt):  # the caller who pressed Ctrl-C: once
        pending.result()
    monkeypatch.setattr(embedder_module, "_embed_pass", embed)
    assert pending.done()
    assert pending.cancelled()
    stored = pending._request.error
    assert stored is not None
    assert stored.__traceback__ is None, "the stored error holds the pass's frames"
    for _ in range(2):
        with pytest.raises(Cancelled, match=r"interrupted \(KeyboardInterrupt\) .* submit them"):
            pending.result()
    assert stored.__traceback__ is None, "raising it again attached the caller's frames"
    assert embedder.submit(["one two"]).result().shape[0] == 1


def test_a_pending_is_awaited_in_a_worker_thread_and_the_loop_runs_on(
    embedder: Embedder,
) -> None:
    # `await embedder.submit([...])` was a TypeError (not awaitable), and a bridge through
    # add_done_callback + call_soon_threadsafe never resolved: nothing led the pass.
    import asyncio

    async def main() -> tuple[Any, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(tick())
        vectors = await asyncio.wait_for(embedder.submit(["one two", "three"]), 30)
        ticking.cancel()
        return vectors, ticks

    vectors, ticks = asyncio.run(main())
    assert vectors.shape[0] == 2
    assert ticks >= 2, "the loop was blocked while the texts were embedded (max_wait 0.5 s)"
    np.testing.assert_allclose(vectors, embedder.encode(["one two", "three"]), atol=1e-6)
