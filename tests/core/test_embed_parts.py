"""A pass takes a bounded part of the queue: a large request is embedded in parts.

A tester's server took 2,048 long texts in one pass, and a one-text request sent 3 s
later got its answer after 606 s, with the big one's. Now a pass takes texts, oldest
request first, up to a few batches' worth (``PASS_BATCHES``), and a request that arrives
meanwhile joins the next pass. Here ``PASS_BATCHES`` is 1 (a batch of 8 long texts per
pass of the toy model), and what arrives "meanwhile" arrives from a monitor at the first
batch's ``BatchDone``: no timing is involved.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from seamline.contracts import BatchDone, Compiled
from seamline.core import embedder as embedder_module
from seamline.core.embedder import Cancelled, Embedder, Pending
from tests.core.toy import toy_registry

LONG = [" ".join(f"w{i}x{j}" for j in range(16)) for i in range(40)]
"""40 texts of the toy model's whole window (16 tokens): 5 passes of 8."""
MIXED = [" ".join(f"m{i}y{j}" for j in range(1 + (i * 7) % 16)) for i in range(40)]
"""40 texts of 1 to 16 tokens, in an order the batching reshuffles."""
MANY = [" ".join(f"n{i}z{j}" for j in range(1 + (i * 5) % 13)) for i in range(300)]
"""300 texts of 1 to 13 tokens: several passes of the real ``PASS_BATCHES``."""


class AtFirstBatch:
    """A monitor that calls ``then()`` at the first ``BatchDone`` it sees once armed: while
    that pass runs (the pass waits for its monitors)."""

    name = "at-first-batch"

    def __init__(self) -> None:
        self.then: Callable[[], None] | None = None
        self.every: Callable[[], None] | None = None
        """Called at every later ``BatchDone``."""

    def bind(self, publish: Any) -> None:
        pass

    def observe(self, event: Any) -> None:
        if not isinstance(event, BatchDone):
            return
        if self.then is not None:
            then, self.then = self.then, None
            then()
        elif self.every is not None:
            self.every()

    def close(self) -> None:
        pass


@pytest.fixture
def monitor() -> AtFirstBatch:
    return AtFirstBatch()


@pytest.fixture
def embedder(monitor: AtFirstBatch, monkeypatch: pytest.MonkeyPatch) -> Iterator[Embedder]:
    monkeypatch.setattr(embedder_module, "PASS_BATCHES", 1, raising=False)
    built = Embedder(
        {"use": "toy"},
        "native",
        {"batch_size": 8, "buckets": [4, 16]},
        registry=toy_registry(),
        monitors=[monitor],
    )
    built.encode(["warm up"])
    yield built
    built.close()


def finished_in_order(*pendings: Pending) -> list[int]:
    """Which of ``pendings`` finish, in the order they do (their done-callbacks)."""
    order: list[int] = []
    for number, pending in enumerate(pendings):
        pending.add_done_callback(lambda _, n=number: order.append(n))
    return order


def test_a_request_arriving_while_a_large_one_is_embedded_joins_the_next_pass(
    embedder: Embedder, monitor: AtFirstBatch
) -> None:
    big = embedder.submit(LONG)
    small: list[Pending] = []
    monitor.then = lambda: small.append(embedder.submit(["a short question about lists"]))
    passes = [embedder.drain(5.0)]
    assert passes == [8], "the first pass took a part of the large request"
    order = finished_in_order(big, small[0])
    passes.append(embedder.drain(5.0))
    assert order == [1], "the small request was embedded by the very next pass"
    # Its text and 7 of the large one's next part fill a batch; the part's eighth text, in
    # a partly filled batch of the large request's alone, goes back for the pass after.
    assert passes[1] == 8, "its text, then the large one's next part: a whole batch"
    assert embedder.queue.waiting() == (1, len(LONG) - 15)
    while not big.done():
        passes.append(embedder.drain(5.0))
    assert order == [1, 0]
    assert sum(passes) == len(LONG) + 1
    alone = embedder.encode(["a short question about lists"])  # in a batch of its own shape
    np.testing.assert_allclose(small[0].result(), alone, rtol=1e-6, atol=1e-6)


def test_threads_sharing_an_embedder_take_turns_too(
    embedder: Embedder, monitor: AtFirstBatch
) -> None:
    """``encode`` in one thread leads the passes of its many texts; another thread's one text
    is embedded by the next pass, and that thread has its answer while the big call goes on
    (the big call's later passes wait here for it to: before, it waited for the engine
    until every pass was over)."""
    small: list[Pending] = []
    answered = threading.Event()

    def arrive() -> None:  # in the first pass
        small.append(embedder.submit(["a short question about lists"]))
        threading.Thread(target=lambda: (small[0].result(), answered.set()), daemon=True).start()

    waited: list[bool] = []
    monitor.then = arrive
    monitor.every = lambda: waited.append(answered.wait(2.0)) if small[0].done() else None
    embedder.encode(LONG)
    assert waited, "the big call's passes went on after the small one's"
    assert all(waited), "the other thread waited for the engine while its texts were done"


def embedded_in_parts(embedder: Embedder, texts: list[str], long_text: str) -> Pending:
    pending = embedder.submit(texts, long_text=long_text)  # type: ignore[call-overload]
    drained = []
    while not pending.done():
        drained.append(embedder.drain(5.0))
    assert len(drained) >= 3, f"not taken in parts: {drained}"
    return pending


def embedded_whole(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch, texts: list[str], long_text: str
) -> Pending:
    with monkeypatch.context() as patched:
        patched.setattr(embedder_module, "PASS_BATCHES", 1_000_000, raising=False)
        whole = embedder.submit(texts, long_text=long_text)  # type: ignore[call-overload]
        assert embedder.drain(5.0) == len(texts), "one pass"
    return whole


def test_a_request_of_full_batches_embedded_in_parts_has_the_same_bits(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Texts of one length fill every batch of every part (8 a pass, 8 rows a batch): each
    # row is computed in the shape it had in one pass, to the same bits.
    in_parts = embedded_in_parts(embedder, LONG, "truncate")
    whole = embedded_whole(embedder, monkeypatch, LONG, "truncate")
    np.testing.assert_array_equal(in_parts.result(), whole.result())
    assert in_parts.tokens == whole.tokens


@pytest.mark.parametrize("long_text", ["truncate", "mean"])
def test_a_request_embedded_in_parts_has_the_vectors_of_one_pass(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch, long_text: str
) -> None:
    # Bucketing reorders texts of mixed lengths and each part ends in partly filled
    # batches: a row computed in a batch of another shape may differ in its last bit, as a
    # text embedded with other callers' texts does; the rows are each text's own, in order.
    in_parts = embedded_in_parts(embedder, MIXED, long_text)
    whole = embedded_whole(embedder, monkeypatch, MIXED, long_text)
    np.testing.assert_allclose(in_parts.result(), whole.result(), rtol=1e-6, atol=1e-6)
    assert in_parts.tokens == whole.tokens


@pytest.mark.parametrize("long_text", ["mean", "windows"])
def test_a_text_of_many_windows_keeps_them_in_order_across_parts(
    monkeypatch: pytest.MonkeyPatch, long_text: str
) -> None:
    # The toy model with windows makes one window per word: a text's windows are embedded
    # in one pass, and the request's texts in several.
    monkeypatch.setattr(embedder_module, "PASS_BATCHES", 1, raising=False)
    model = {"use": "toy", "with": {"windows": True}}
    with Embedder(model, "native", {"batch_size": 8}, registry=toy_registry()) as embedder:
        in_parts = embedded_in_parts(embedder, MIXED, long_text)
        whole = embedded_whole(embedder, monkeypatch, MIXED, long_text)
        got, expected = in_parts.result(), whole.result()
        if long_text == "windows":
            assert [len(v) for v in got] == [len(t.split()) for t in MIXED]
            got, expected = np.concatenate(got), np.concatenate(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_cancelling_a_request_taken_in_parts_drops_the_rest(embedder: Embedder) -> None:
    big = embedder.submit(LONG)
    assert embedder.drain(5.0) == 8
    assert embedder.queue.waiting() == (1, len(LONG) - 8)
    assert big.cancel(), "its texts not yet taken left the queue"
    assert big.cancelled()
    with pytest.raises(Cancelled, match="after 8 of its 40 texts were taken"):
        big.result()
    assert embedder.queue.waiting() == (0, 0)
    assert embedder.drain(0.01) == 0, "nothing of it left to embed"


def test_cancelling_a_request_while_its_part_is_embedded(
    embedder: Embedder, monitor: AtFirstBatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Its rows from the pass under way are dropped, and nothing is recorded on its ended
    # span (OpenTelemetry warns of that); the other request in the pass is unaffected.
    big = embedder.submit(LONG)
    cancelled: list[bool] = []
    monitor.then = lambda: cancelled.append(big.cancel())
    with caplog.at_level(logging.WARNING):
        assert embedder.drain(5.0) == 8
    assert cancelled == [True]
    assert big.cancelled()
    assert "ended span" not in caplog.text
    assert embedder.drain(0.01) == 0
    last = embedder.submit(LONG[:8])
    last_part: list[bool] = []
    monitor.then = lambda: last_part.append(last.cancel())
    embedder.drain(5.0)
    assert last_part == [False], "its last part was taken: it is embedded"
    assert last.result().shape == (8, 32)  # type: ignore[union-attr]


def interrupt_pass(monkeypatch: pytest.MonkeyPatch, number: int) -> None:
    """The ``number``-th pass from now raises ``KeyboardInterrupt`` (a Ctrl-C), once."""
    embed = embedder_module._embed_pass
    calls = [0]

    def interrupted(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] == number:
            raise KeyboardInterrupt
        return embed(*args)

    monkeypatch.setattr(embedder_module, "_embed_pass", interrupted)


def test_an_interrupted_part_goes_back_and_the_request_ends_whole(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A drain thread (a server's) has no request of its own: the part it held goes back,
    # from its first text, and the next passes embed it and the rest.
    expected = embedder.encode(LONG)
    tokens = embedder.submit(LONG)
    while not tokens.done():
        embedder.drain(5.0)
    big = embedder.submit(LONG)
    interrupt_pass(monkeypatch, 2)
    assert embedder.drain(5.0) == 8
    with pytest.raises(KeyboardInterrupt):
        embedder.drain(5.0)
    assert not big.done()
    assert embedder.queue.waiting() == (1, len(LONG) - 8), "the part interrupted is back"
    while not big.done():
        embedder.drain(5.0)
    np.testing.assert_array_equal(big.result(), expected)
    assert big.tokens == tokens.tokens, "the interrupted part's tokens are counted once"


def test_an_interrupt_cancels_the_leaders_own_request_taken_in_parts(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = embedder.submit(LONG)
    interrupt_pass(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        mine.result()
    assert mine.cancelled()
    assert embedder.queue.waiting() == (0, 0), "its untaken texts left the queue too"
    with pytest.raises(Cancelled, match="interrupted"):
        mine.result()


class Compilations:
    """The shapes an embedder compiles (its ``Compiled`` events), ``(rows, length)``."""

    name = "compilations"

    def __init__(self) -> None:
        self.shapes: list[tuple[int, int]] = []

    def bind(self, publish: Any) -> None:
        pass

    def observe(self, event: Any) -> None:
        if isinstance(event, Compiled):
            self.shapes.append((event.batch_size, event.length))

    def close(self) -> None:
        pass


def encoded_alone(texts: list[str], passes: list[int] | None = None) -> tuple[Any, list[Any]]:
    """``encode(texts)`` by a fresh embedder (nothing compiled before): the vectors and the
    shapes compiled; ``passes`` gets the texts each pass embedded."""
    compilations = Compilations()
    run = {"batch_size": 8, "buckets": [4, 8, 16]}
    with Embedder(
        {"use": "toy"}, "native", run, registry=toy_registry(), monitors=[compilations]
    ) as embedder:
        if passes is None:
            vectors = embedder.encode(texts)
        else:
            pending = embedder.submit(texts)
            while not pending.done():
                passes.append(embedder.drain(5.0))
            vectors = pending.result()
    return vectors, compilations.shapes


def test_a_large_encode_alone_compiles_the_shapes_of_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tester's ``encode`` of 1,000 texts of 80 to 160 characters (MiniLM) compiled and
    verified 12 shapes, not the 7 of one pass (CPU +27%): each of its 8 or so passes ended
    in partly filled batches of each length, [1|2|4|8] rows. A part's partly filled
    batches now go back to the queue, taken first by the next pass: each length's batches
    hold the texts that one pass puts in them, to the same bits."""
    passes: list[int] = []
    in_parts, shapes = encoded_alone(MANY, passes)
    assert len(passes) >= 3, f"not taken in parts: {passes}"
    assert sum(passes) == len(MANY), "each text embedded once"
    with monkeypatch.context() as patched:
        patched.setattr(embedder_module, "PASS_BATCHES", 1_000_000, raising=False)
        whole, one_pass = encoded_alone(MANY)
    assert sorted(shapes) == sorted(one_pass), "the shapes of one pass, no more"
    np.testing.assert_array_equal(in_parts, whole)
    again, in_encode = encoded_alone(MANY)  # encode leads the passes itself
    assert sorted(in_encode) == sorted(one_pass)
    np.testing.assert_array_equal(again, whole)
