"""Callers' texts waiting for an :class:`~seamline.core.embedder.Embedder`, and who embeds them.

Every caller puts a :class:`Request` in one queue. Whoever holds the engine (a lock:
one pass at a time) takes a pass's worth of the queue and embeds it in shared
batches, then hands each request its rows. Nobody has to run a background thread: a
caller that finds its request still queued when it gets the engine leads a pass
itself (:meth:`EmbedQueue.serve`); a server may instead keep one thread that leads
pass after pass (:meth:`EmbedQueue.drain`) while its callers wait on callbacks.

A pass is bounded: each text carries its share of one pass (``Request.shares``, the
embedder's estimate of its tokens over a few batches' worth), and a pass takes texts,
oldest request first, until their shares reach 1. A large request is so taken
in parts (:class:`Part`) across passes: a request that arrives while one of its parts is
embedded joins the next pass, rather than waiting for all of its texts (2,048 long
texts held a one-text request for minutes, on a server). A request whose part was
not its last goes to the back of the queue after the pass, behind those that arrived
meanwhile, so that requests take turns, oldest first. Its rows are kept by text
index, whichever pass embedded them, and it is finished (its callbacks run) when its
last part is. A part that is not its request's last is not embedded in partly filled
batches: the pass puts the texts of those back (``Request.held``), and the next pass
takes them first. The request is so batched as one pass would batch it, each length's
partly filled batch in its last part only: a partly filled batch per pass was a new
shape to compile and verify per pass (1,000 texts compiled 12 programs, not 7).

Two things a server needs, and a lone caller does not pay for:

* ``max_wait``: before taking the queue, a leader waits until its oldest request has
  waited that long, so that requests arriving a few milliseconds apart share a
  batch. Under load the engine is busy for longer than that anyway, so requests
  that queued meanwhile are taken at once; the wait only delays a lone request on an
  idle engine, by at most ``max_wait``. Zero (the default) never waits.
* :meth:`EmbedQueue.cancel`: a request whose caller went away before a leader took it
  leaves the queue, so it takes no place in a batch; one whose first parts were
  taken leaves it too, and its texts not yet taken are never embedded.

A request's callbacks run in the thread that finished it; the thread leading a pass
holds the engine meanwhile, so it runs them once the pass is over and the engine
released (:func:`holding`): a callback may then embed more, or close the embedder,
where under the engine it would wait for the lock its own thread holds, for ever.

An interrupt (``KeyboardInterrupt``: Python delivers a signal to the main thread) that
stops a pass is raised in the thread leading it only; the other callers' requests it
held go back to the head of the queue from the first text of the part it held, and
the next pass embeds them. Any other ``BaseException`` (a Rust library's panic, see
:func:`~seamline.core.stops.is_interrupt`) is a failure, as an ``Exception`` is: taken
for an interrupt, a panic put its request back at the head of the queue, to fail the
next pass again, and stopped a server's engine thread.

A request carries the span of its caller (``seamline.embed.request``); the pass and
batch spans that serve it link to it, and it to them (see the embedder).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from opentelemetry import trace

from seamline.contracts.logs import get_logger
from seamline.core.forking import refuse_after_fork
from seamline.core.stops import is_interrupt

LongText = Literal["truncate", "mean", "windows"]

log = get_logger("seamline.core.embedder")

LOOK_S = 0.05
"""How often a caller waiting for another thread's passes looks whether its request is done."""

Cancelled = concurrent.futures.CancelledError
"""What a request cancelled before it was embedded ends with."""


@dataclass(eq=False)
class Request:
    """One caller's texts, waiting to be embedded, and what came of them."""

    texts: Sequence[str]
    long_text: LongText
    batch_tokens: int | None
    span: trace.Span
    """The caller's ``seamline.embed.request`` span (ended when the request is)."""
    queries: bool = False
    """Embed the texts as search queries (the model's query side), not as documents."""
    arrived: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    windows: list[dict[int, np.ndarray]] = field(default_factory=list)
    """Per text: window index → its vector."""
    tokens: int = 0
    """Tokens the model computed for these texts (every window kept), counted as batched."""
    batches: int = 0
    """Batches that held at least one of its windows."""
    shares: Sequence[float] = ()
    """Each text's share of one pass (a pass takes texts until their shares reach 1);
    empty: none, a pass takes every text (what the embedder estimates, see the module)."""
    error: BaseException | None = None
    next: int = 0
    """The first text no pass took yet: a large request is taken in parts."""
    held: tuple[int, ...] = ()
    """Texts before ``next`` that a pass took and put back, not embedded (its part's partly
    filled batches): the next pass takes them first, in this order."""
    _callbacks: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def taken(self) -> bool:
        """A leader took (the first part of) it from the queue: that part will be embedded,
        cancelled or not."""
        return self.next > 0

    @property
    def left(self) -> int:
        """Its texts no pass has embedded or holds: those not taken yet, and those held."""
        return len(self.texts) - self.next + len(self.held)

    def share(self, index: int) -> float:
        return self.shares[index] if self.shares else 0.0

    def count_batch(self, tokens: int, batch: trace.Link) -> None:
        """Count a batch that held ``tokens`` of its windows and link the request's span to
        the batch's: not once finished (cancelled while a pass embedded one of its parts:
        its span has ended)."""
        with self._lock:
            if self.done.is_set():
                return
            self.tokens += tokens
            self.batches += 1
            self.span.add_link(batch.context, batch.attributes)

    def finish(self, error: BaseException | None = None) -> None:
        """Record the outcome, end the span, wake the caller, run the callbacks (once)."""
        with self._lock:
            if self.done.is_set():
                return
            self.error = error
            span = self.span
            span.set_attribute("seamline.tokens", self.tokens)
            span.set_attribute("seamline.batches", self.batches)
            if error is not None:
                span.set_status(trace.StatusCode.ERROR, f"{type(error).__name__}: {error}")
            span.end()
            self.done.set()
            callbacks, self._callbacks = self._callbacks, []
        _run_or_defer(callbacks)

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` when the request is finished (now, if it is), in the thread
        that finishes it, after any pass that thread leads (:func:`holding`); it holds up
        that thread's next work, so a server's hands the news to another thread."""
        with self._lock:
            if not self.done.is_set():
                self._callbacks.append(callback)
                return
        _run_or_defer([callback])


@dataclass(frozen=True, slots=True)
class Part:
    """The texts ``start:stop`` of a request, taken by one pass (a large request's texts are
    taken a part at a time; a small one's whole, in one part), after those the pass before
    put back (``held``)."""

    request: Request
    start: int
    stop: int
    tokens: int = 0
    """The request's ``tokens`` when the part was taken (restored if it is taken again)."""
    batches: int = 0
    held: tuple[int, ...] = ()
    """Texts an earlier pass put back (``Request.held``), taken again before ``start``."""

    @property
    def last(self) -> bool:
        """Whether the part ends its request: once it is embedded, the request is done."""
        return self.stop == len(self.request.texts)

    @property
    def indexes(self) -> tuple[int, ...]:
        """Its texts: those put back by the pass before, then ``start:stop``."""
        return (*self.held, *range(self.start, self.stop))


class _Deferred(threading.local):
    """The callbacks a thread holding the engine finished requests with, to run after."""

    callbacks: list[Callable[[], None]] | None = None


_deferred = _Deferred()


@contextlib.contextmanager
def holding(engine: threading.Lock, timeout: float = -1) -> Iterator[bool]:
    """Hold ``engine`` (waiting up to ``timeout`` seconds for it; without one, until it is
    free) and yield whether it does; the callbacks of requests this thread finishes
    meanwhile run once it is released (in order), so that one may call the embedder again."""
    if not engine.acquire(timeout=timeout):
        yield False
        return
    if _deferred.callbacks is not None:  # already holding one, further out
        try:
            yield True
        finally:
            engine.release()
        return
    deferred: list[Callable[[], None]] = []
    _deferred.callbacks = deferred
    try:
        yield True
    finally:
        engine.release()
        _deferred.callbacks = None
        _run_or_defer(deferred)


def _run_or_defer(callbacks: list[Callable[[], None]]) -> None:
    if _deferred.callbacks is not None:
        _deferred.callbacks.extend(callbacks)
        return
    for callback in callbacks:
        _call(callback)


def closed() -> RuntimeError:
    """What every call of a closed embedder raises (a new one each time: one exception object
    raised in several threads would share, and grow, one traceback)."""
    return RuntimeError("this Embedder is closed")


def _no_pass(_: list[Part]) -> None:
    """A closed queue's ``run``: never called (a closed queue takes no request)."""
    raise closed()


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception as err:  # a caller's callback never breaks the others'
        log.warning("an embed request's callback failed", error=repr(err))


class EmbedQueue:
    """The queue of requests and the engine lock: one pass of ``run`` at a time."""

    def __init__(self, run: Callable[[list[Part]], None], max_wait: float = 0.0) -> None:
        if max_wait < 0:
            raise ValueError(f"max_wait must be 0 or more seconds, not {max_wait}")
        self.run = run
        """Embeds the parts it is given, and finishes every request whose last part it
        embedded (or that failed)."""
        self.max_wait = max_wait
        self._queue: list[Request] = []
        self._changed = threading.Condition()
        self._engine = threading.Lock()
        self._closed = False

    def engine(self) -> contextlib.AbstractContextManager[bool]:
        """Hold the engine, as each pass does (and whoever closes the embedder); requests
        finished meanwhile call back once it is released."""
        return holding(self._engine)

    def put(self, request: Request) -> None:
        """Queue ``request``; once the queue is closed, finish it with the closed error and
        raise that (checked under the queue's lock: a request never slips in after close)."""
        with self._changed:
            if not self._closed:
                self._queue.append(request)
                self._changed.notify_all()
                return
        request.finish(closed())
        raise closed()

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        """Raise the closed error if the queue was closed (every call of a closed embedder),
        or the forked-child error in a child of the process that used the model."""
        if self._closed:
            raise closed()
        refuse_after_fork("this Embedder")

    def close(self) -> None:
        """Refuse requests from now on, and finish those still queued with the closed error.

        Called with the engine held, so no pass is running: a request a pass took has
        been embedded; one still queued never will be, and its caller (waiting in
        ``result()``, or on a callback) is told so rather than left waiting.
        """
        with self._changed:
            self._closed = True
            left, self._queue = self._queue, []
            self._changed.notify_all()
        for request in left:
            request.finish(closed())
        # No pass runs any more: drop ``run`` (its embedder's bound method), or the embedder
        # and this queue stay in a reference cycle, weights' holders and all, until the
        # cyclic collector runs.
        self.run = _no_pass

    def waiting(self) -> tuple[int, int]:
        """``(requests, texts)`` queued and not yet taken."""
        with self._changed:
            return len(self._queue), sum(r.left for r in self._queue)

    def cancel(self, request: Request) -> bool:
        """Take ``request`` out of the queue if some of its texts were not taken yet; True if
        it was. Its texts not taken are never embedded; a part of it that a pass is
        embedding is, and its rows dropped: the request ends cancelled now."""
        with self._changed:
            if request.done.is_set() or request not in self._queue:
                return False
            self._queue.remove(request)
            self._changed.notify_all()
            taken = request.next - len(request.held)
        if request.taken:
            count = len(request.texts)
            why = f"cancelled after {taken} of its {count} texts were taken: the rest were not"
        else:
            why = "cancelled before it was embedded"
        request.finish(Cancelled(why))
        return True

    def serve(self, request: Request) -> None:
        """Return when ``request`` is finished, leading a pass if the engine is free first.

        Waiting for the engine, it looks up every :data:`LOOK_S` seconds: another thread
        that leads pass after pass for a large request of its own takes the engine again
        as soon as it lets it go, and this request, done by one of those passes, is
        answered then rather than after all of them."""
        while not request.done.is_set():
            with holding(self._engine, LOOK_S) as held:
                if held and not request.done.is_set():
                    self._lead(request)

    def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for a request; embed the queue; the texts embedded."""
        with self._changed:
            ready = self._changed.wait_for(lambda: self._queue or self._closed, timeout)
            if not ready:
                return 0
        with holding(self._engine):
            self.check_open()
            return self._lead()

    def _lead(self, own: Request | None = None) -> int:
        """Take a pass's worth of the queue (after ``max_wait``) and embed it; the engine is
        held. ``own`` is the leader's request, if it has one (a ``drain`` thread has none).
        """
        parts = self._take()
        failed = True
        try:
            if parts:
                self.run(parts)
            failed = False
        except BaseException as err:
            if is_interrupt(err):  # not any BaseException: a Rust panic is a failure
                self._interrupted(parts, own, err)
                parts = []
            raise
        finally:
            self._after(parts, failed)
        held = sum(len(part.request.held) for part in parts if not part.last)
        return sum(len(part.indexes) for part in parts) - held

    def _after(self, parts: list[Part], failed: bool) -> None:
        """After a pass: a request whose part was not its last goes to the back of the queue,
        behind the requests that arrived meanwhile (its turn comes again after theirs);
        whatever ``run`` left unfinished, or a failed pass stopped, is not left waiting
        forever."""
        again = []
        for part in parts:
            request = part.request
            if request.done.is_set():
                continue
            if part.last or failed:
                request.finish(RuntimeError("the embedder stopped before embedding this"))
            else:
                again.append(request)
        with self._changed:
            held = [part.request for part in parts if not part.last]  # still in the queue
            self._queue = [r for r in self._queue if r not in held]
            self._queue.extend(r for r in again if not r.done.is_set())
            self._changed.notify_all()

    def _interrupted(self, parts: list[Part], own: Request | None, err: BaseException) -> None:
        """After ``err`` (a ``KeyboardInterrupt``, a ``SystemExit``) stopped the leader's pass,
        finish the leader's own request as cancelled and put the others back in the queue.

        The leader raises ``err`` itself, once. Its request ends with :data:`Cancelled`
        (as ``concurrent.futures`` ends a future whose work was stopped), whose message
        says to submit the texts again: finished with ``err`` itself, every later
        ``result()`` raised a bare ``KeyboardInterrupt()`` again, as if each were a new
        Ctrl-C, and the stored interrupt's traceback kept the pass's frames, batches and
        device arrays alive as long as the ``Pending``. A ``Cancelled`` made here was never
        raised: it holds no frame. It ends so even if this pass held none of its texts
        (others' filled it) or only a part of them.

        The interrupt is the leading thread's alone (a signal is delivered to the main
        thread, whichever callers' texts it was embedding), so the other callers' requests
        go back to the head of the queue from the first text of the part this pass held,
        to be embedded by the next pass, rather than raising an interrupt in threads that
        were not interrupted.
        """
        others = []
        for part in parts:
            request = part.request
            if request is own or request.done.is_set():
                continue
            request.next, request.held = part.start, part.held
            request.tokens, request.batches = part.tokens, part.batches  # counted again
            others.append(request)
        with self._changed:
            gone = [*others, own] if own is not None else others
            self._queue = [r for r in self._queue if r not in gone]
            self._queue[:0] = others
            self._changed.notify_all()
        if own is not None:
            own.finish(
                Cancelled(
                    f"interrupted ({type(err).__name__}) while embedding: these texts were "
                    "not embedded; submit them again"
                )
            )

    def _take(self) -> list[Part]:
        with self._changed:
            while self._queue and self.max_wait > 0:
                oldest = min(r.arrived for r in self._queue)  # a request's later parts: old
                left = oldest + self.max_wait - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return self._parts()

    def _parts(self) -> list[Part]:
        """A pass's parts, oldest request first: texts until their shares reach 1 (the last
        may pass it: a pass of texts of one length so takes whole batches of them, even
        after a short text of another request). A request's texts held back by the pass
        before come first, and at least one new text with them: each part of a request
        goes further, so that its last part comes. A request taken whole leaves the
        queue; one taken in part stays in its place until the pass is over
        (:meth:`_after`). The queue's lock is held."""
        parts: list[Part] = []
        room = 1.0
        for request in list(self._queue):
            if room <= _FULL:
                break
            if request.done.is_set():  # failed or ended by an earlier part
                self._queue.remove(request)
                continue
            start = stop = request.next
            held, request.held = request.held, ()
            room -= sum(request.share(index) for index in held)
            while stop < len(request.texts) and (room > _FULL or stop == start):
                room -= request.share(stop)
                stop += 1
            parts.append(Part(request, start, stop, request.tokens, request.batches, held))
            request.next = stop
            if stop == len(request.texts):
                self._queue.remove(request)
        return parts


_FULL = 1e-9
"""What is left of a pass's room when it is full (shares summed in floating point)."""
