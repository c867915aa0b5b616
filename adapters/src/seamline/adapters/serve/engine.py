"""The embedder behind the server: one thread leads its passes; requests wait on futures.

The event loop never embeds. A request's texts are submitted to the
:class:`~seamline.core.embedder.Embedder` (which returns at once) and the handler
awaits an asyncio future that the embedder's done-callback resolves from the engine
thread. That thread warms the model up first (one embedding: the weights loaded, the
attention negotiated, verified and compiled for the first shape) and whatever else must
be warm (``warm_also``: the index's query model, by one search); the server is ready
only then. It then leads pass after pass (``drain``), each pass waiting up to
``max_wait_ms`` for more requests after the oldest arrived.

The queue in front of it is bounded: texts (and their characters) accepted and not
yet answered, counted on the event loop's thread only. A request that would pass a
bound is refused with 429 before anything is queued.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal

from seamline.adapters.serve.errors import RATE_LIMIT, SERVER_ERROR, ApiError, without_paths
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.adapters.serve.pace import Pace
from seamline.contracts.logs import get_logger
from seamline.core import Embedder, Pending, is_interrupt

log = get_logger("seamline.adapters.serve")

State = Literal["loading", "ready", "failed", "stopping"]

WARM_UP_TEXT = "seamline serve warm-up"
DRAIN_POLL_S = 0.05
"""How often the engine thread looks up from an empty queue to see whether to stop."""
STOP_WAIT_S = 5.0
"""How long a stopping server waits for the engine's pass to reach its next batch."""


TRUNCATED_CHARS = 2_048
"""How many of a text's characters count as work under ``--long-text truncate``: about
one 256-token window of English. The model embeds a text's first window only, and the
estimate counted a 30,000-character text as 100 windows' work: short requests behind one
of 64 such texts (3.4 s of work) were refused "about 948 s of work: retry after 946 s"."""
MOST_RETRY_AFTER_S = 60
"""The longest ``Retry-After`` a ``--max-queue-wait`` refusal asks for: an estimate, not
a promise; a client honouring 946 s stayed away for 16 minutes."""


def work(texts: Sequence[str], long_text: str) -> int:
    """The queue's work for ``texts``, in characters: each whole under ``mean`` (every
    window is embedded), at most :data:`TRUNCATED_CHARS` under ``truncate``. The pace is
    measured in the same unit, so the estimate holds for any length below the cap."""
    if long_text == "mean":
        return sum(len(text) for text in texts)
    return sum(min(len(text), TRUNCATED_CHARS) for text in texts)


class Engine:
    """The embedder, the thread that leads its passes, and the bounded queue in front."""

    def __init__(
        self,
        embedder: Embedder,
        limits: Limits,
        metrics: ServeMetrics,
        warm_also: Callable[[], None] | None = None,
    ) -> None:
        self.embedder = embedder
        self.warm_also = warm_also
        """What else is warmed before the server says ready (the index's search), after
        the model; it says itself what it could not warm, and the server is ready anyway."""
        self.limits = limits
        self.metrics = metrics
        self.state: State = "loading"
        self.failure: str | None = None
        self.ended = "failed to load"
        """What became of the model, with ``failure``: loading it failed, or serving."""
        self.dimension = 0
        self.texts_waiting = 0
        self.chars_waiting = 0
        self.work_waiting = 0
        """The queued texts' characters as :func:`work` counts them."""
        self.requests_waiting = 0
        self.pace = Pace()
        """Work answered a second: what ``--max-queue-wait`` estimates a wait by."""
        self._stop = threading.Event()
        self._state_lock = threading.Lock()
        """Held to become ready and to begin a stop: one of them happens first, whole."""
        self._thread: threading.Thread | None = None

    def start(self, on_failure: Callable[[BaseException], None]) -> None:
        """Warm up and serve in the engine thread; ``on_failure`` if warming up fails, or
        if the thread stops serving (:meth:`_stopped_serving`)."""
        self._thread = threading.Thread(
            target=self._lead, args=(on_failure,), name="seamline-serve-engine", daemon=True
        )
        self._thread.start()

    def _lead(self, on_failure: Callable[[BaseException], None]) -> None:
        try:
            warm = self.embedder.encode([WARM_UP_TEXT])
            self.dimension = int(warm.shape[-1])
            if self.warm_also is not None and not self._stop.is_set():
                self.warm_also()
        except BaseException as err:
            if self._stop.is_set():  # stopped while warming up (abandoned): not a failure
                log.info("stopped before the model was warm")
                return
            self.state = "failed"
            self.failure = f"{type(err).__name__}: {err}"
            log.error("the model could not be warmed up", error=self.failure)
            on_failure(err)
            return
        if not self._become_ready():
            log.info("stopped while the model was warming up: never ready")
            return
        try:
            while not self._stop.is_set():
                self._drain(DRAIN_POLL_S)
            while self._drain(0):  # whatever was queued before the stop
                pass
        except BaseException as err:
            self._stopped_serving(err, on_failure)

    def _become_ready(self) -> bool:
        """Ready (state, gauge, log line), unless a stop began during the warm-up: False.

        A SIGTERM while the model warmed up waited for the warm-up, then logged "ready"
        after uvicorn's "Shutting down" and set the ready gauge to 1 on the way out,
        which read as a server that came up. Checked under the lock :meth:`stop` takes,
        so that a stop is either seen here or finds the state ready and takes it back.
        """
        with self._state_lock:
            if self._stop.is_set():
                return False
            self.state = "ready"
            self.metrics.warm = True  # the batches from now on are served ones
            self.metrics.ready.set(1)
        log.info("ready", dimension=self.dimension)
        return True

    def _drain(self, timeout: float) -> int:
        """One pass; the thread outlives a failure of it (each request has its error), a
        Rust library's panic too (a ``BaseException``): only an interrupt ends it."""
        try:
            return self.embedder.drain(timeout)
        except BaseException as err:
            if is_interrupt(err):
                raise
            log.exception("a pass of the embedder failed", error=repr(err))
            return 0

    def _stopped_serving(
        self, err: BaseException, on_failure: Callable[[BaseException], None]
    ) -> None:
        """The engine thread ends, serving no more: say so and answer whoever waits.

        Ended silently, it left ``/healthz`` and the ready gauge saying ready while every
        request waited for ever. Now the state is ``failed`` (``/healthz`` answers 503 with
        the reason, a new request 503), the requests queued end now (503 each, with the
        reason: the embedder is closed), and ``on_failure`` stops the server, as a failed
        warm-up does, unless it was stopping anyway.
        """
        stopping = self._stop.is_set()
        self.failure = f"{type(err).__name__}: {err}"
        self.ended = "stopped serving"
        if not stopping:
            self.state = "failed"
        self.metrics.ready.set(0)
        log.exception("the engine stopped serving", error=self.failure)
        if not stopping:
            on_failure(err)  # first: the server stops while it answers the requests below
        try:
            self.embedder.close()  # the requests still queued end now, with its error
        except Exception as problem:
            log.warning("the model could not be released", error=repr(problem))

    def submit(
        self,
        texts: list[str],
        characters: int,
        loop: asyncio.AbstractEventLoop,
        *,
        queries: bool = False,
    ) -> tuple[Pending, asyncio.Future[Pending]]:
        """Queue ``texts`` (on the event loop's thread); refused when not ready or full.

        ``queries``: embed them as search queries (the model's query prefix, if any).
        """
        if self.state != "ready":
            raise self.not_ready()
        limits = self.limits
        if self.texts_waiting + len(texts) > limits.max_queue_texts:
            raise self._full(f"{self.texts_waiting:,} texts", "--max-queue-texts")
        if self.chars_waiting + characters > limits.max_queue_chars:
            raise self._full(f"{self.chars_waiting:,} characters", "--max-queue-chars")
        self._check_wait()
        pending = self.embedder.submit(texts, long_text=limits.long_text, queries=queries)
        size = (len(texts), characters, work(texts, limits.long_text))
        self._count(1, *size)
        future: asyncio.Future[Pending] = loop.create_future()
        arrived = time.monotonic()

        def finished(done: Pending) -> None:  # in the engine thread
            loop.call_soon_threadsafe(self._answered, done, future, size, arrived)

        pending.add_done_callback(finished)
        return pending, future

    def _answered(
        self,
        pending: Pending,
        future: asyncio.Future[Pending],
        size: tuple[int, int, int],
        arrived: float,
    ) -> None:
        texts, characters, done = size
        self._count(-1, -texts, -characters, -done)
        if not pending.cancelled():  # a cancel's texts were not (all) embedded
            self.pace.answered(done, arrived)
        if not future.done():
            future.set_result(pending)

    def _count(self, requests: int, texts: int, characters: int, worth: int) -> None:
        self.requests_waiting += requests
        self.texts_waiting += texts
        self.chars_waiting += characters
        self.work_waiting += worth
        self.metrics.queue_requests.set(self.requests_waiting)
        self.metrics.queue_texts.set(self.texts_waiting)

    def _check_wait(self) -> None:
        """429 where the texts queued would keep a new request waiting past
        ``--max-queue-wait``, by the measured pace; an empty queue takes any request (a
        429 must mean "later"), and so does a queue whose pace is not measured yet."""
        most = self.limits.max_queue_wait_s
        pace = self.pace.per_second()
        if most is None or pace is None or self.requests_waiting == 0:
            return
        wait = self.work_waiting / pace
        if wait > most:
            later = min(max(self.limits.retry_after_s, math.ceil(wait - most)), MOST_RETRY_AFTER_S)
            holds = f"about {wait:,.0f} s of work, {self.texts_waiting:,} texts"
            raise self._full(holds, f"--max-queue-wait ({most:g} s)", later)

    def _full(self, holds: str, option: str, seconds: int | None = None) -> ApiError:
        seconds = self.limits.retry_after_s if seconds is None else seconds
        return ApiError(
            429,
            f"the server's queue is full (it holds {holds}, the limit set by {option}): "
            f"retry after {seconds} s",
            code="queue_full",
            kind=RATE_LIMIT,
            headers={"Retry-After": str(seconds)},
        )

    def not_ready(self) -> ApiError:
        seconds = str(self.limits.retry_after_s)
        if self.state == "loading":
            message = "the model is still loading and compiling: retry shortly (GET /healthz)"
        elif self.state == "failed":
            message = f"the model {self.ended}: {without_paths(self.failure or '')}"
        else:
            message = "the server is shutting down"
        return ApiError(
            503, message, code="not_ready", kind=SERVER_ERROR, headers={"Retry-After": seconds}
        )

    def stop(self, timeout: float = STOP_WAIT_S) -> None:
        """Stop the thread and release the model, within about ``timeout`` seconds.

        The server stops the engine once every request is answered, or once
        ``--graceful-timeout`` gave up on the rest: nobody waits for a pass any more, so
        the one under way is abandoned at its next batch (a pass of many long texts runs
        for minutes). Where the thread does not stop in time (one batch longer than
        that, a model still warming up: a compile cannot be cut short), the model is left
        to the process's exit (the thread is a daemon) and one log line says so, rather
        than holding the exit.
        """
        with self._state_lock:  # a warm-up ending now is never ready (:meth:`_become_ready`)
            warming = self.state == "loading"
            if self.state in ("loading", "ready"):
                self.state = "stopping"
            self.metrics.ready.set(0)
            self._stop.set()
        self.embedder.abandon()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._not_waited_for(timeout, warming=warming)
                return
        self.embedder.close()

    @staticmethod
    def _not_waited_for(waited: float, *, warming: bool) -> None:
        """Say that the engine thread is left to the process's exit, and why.

        A stop during the warm-up (``/healthz`` said loading) found a compile that cannot
        be cut short, and logged the warning meant for a batch running on past the stop,
        "did not stop in time", for an expected, harmless stop: it says so at info now.
        """
        if warming:
            log.info(
                "stopped during the warm-up: never ready; not waiting for the compile to finish",
                waited_s=waited,
            )
            return
        log.warning(
            "the engine did not stop in time; exiting without waiting for it", waited_s=waited
        )
