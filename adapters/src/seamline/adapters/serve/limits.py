"""Every bound ``seamline serve`` keeps: what one request may hold, and what may wait.

A server's memory is what its clients send it; each bound below caps one way of
sending more, and a request past one is refused with the bound's name in its error
(:mod:`.errors`), never queued:

* ``max_request_bytes``: a request's body, counted as it is read (413, HTTP's own bound);
* ``max_inputs``: texts in one request (400, as OpenAI refuses input), and
  ``max_input_chars``: characters in one text (400);
* ``max_queue_texts`` and ``max_queue_chars``: texts (and their characters) accepted
  and not yet answered, across all clients: past either, 429 with ``Retry-After``. Each
  is at least what one request may hold (else such a request could never be queued,
  and its 429 would ask for a retry that never succeeds): settings below are refused
  before the server starts;
* ``max_queue_wait_s`` (off unless set): the wait a new request can expect behind the
  texts queued, from the engine's measured pace (:mod:`.pace`): past it, 429 with
  ``Retry-After``. An empty queue always takes a request, however long;
* ``max_connections``: connections and requests in progress at once, bodies still
  being read included (uvicorn's ``limit_concurrency``): past it, uvicorn answers 503.
  With ``max_request_bytes`` it bounds what bodies being read can hold;
* ``max_body_bytes_held``: bytes of bodies read and not yet parsed, across all requests
  (429 with ``Retry-After`` past it, before a body whose length is declared is read);
* ``max_concurrent_searches``: ``/v1/search`` requests being searched at once (429 past
  it, with ``Retry-After``), each counted until its worker thread is done;
* ``header_timeout_s`` and ``keep_alive_timeout_s``: how long a connection may take to
  send a request's head, and how long it is kept idle between two requests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

LongText = Literal["truncate", "mean"]


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's or ``taskset``'s), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def default_searches() -> int:
    """Twice the CPUs: a search's thread waits on its index's reads as well as computes."""
    return 2 * usable_cpus()


MAX_PORT = 65_535
"""The highest TCP port: a larger one would not fail to bind, the kernel takes it modulo
65,536 (99999 listens on 34463), so the command and the server refuse it."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The server's bounds and batching settings (the command's options)."""

    max_inputs: int = 2048
    """Texts in one request (OpenAI's own limit is 2048)."""
    max_input_chars: int = 32_768
    """Characters in one text."""
    max_request_bytes: int = 16 * 1024 * 1024
    """Bytes in one request body."""
    max_queue_texts: int = 4096
    """Texts accepted and not yet answered, across every client."""
    max_queue_chars: int = 16 * 1024 * 1024
    """Characters of those texts."""
    max_queue_wait_s: float | None = None
    """Seconds a new request's texts may be expected to wait behind those queued (from the
    engine's measured pace): past it, 429 at once. None: not bounded by time."""
    max_body_bytes_held: int = 256 * 1024 * 1024
    """Bytes of request bodies read and not yet parsed, across every request: past it, 429."""
    max_connections: int = 1024
    """Connections and requests in progress at once (past it: 503 from uvicorn)."""
    header_timeout_s: float = 10.0
    """Seconds a connection has to send a request's head (from its opening, and from the
    first byte of each next request): a connection that sends nothing held a
    ``max_connections`` place for ever."""
    keep_alive_timeout_s: float = 65.0
    """Seconds a connection is kept open, idle, after an answer, for the client's next
    request. Above a load balancer's idle timeout (60 s for AWS's ALB and nginx's
    ``keepalive_timeout`` upstream), so that the balancer, not the server, closes an idle
    connection: the other way round, a request the balancer sends as the server closes
    is lost (502). uvicorn's own 5 s did that to every connection idle for 5 s."""
    max_concurrent_searches: int = field(default_factory=default_searches)
    """Searches running at once, each in a worker thread until its end (a client that left
    does not stop its thread): past it, 429 at once."""
    max_wait_ms: float = 2.0
    """How long a pass waits for more requests, from the oldest one's arrival."""
    retry_after_s: int = 1
    """The ``Retry-After`` of a 429 or a 503."""
    long_text: LongText = "truncate"
    """Texts longer than the model's window: the first window (as sentence-transformers
    does), or the mean of every window."""

    @property
    def request_chars(self) -> int:
        """The most characters one request can bring to the queue.

        ``max_inputs`` texts of ``max_input_chars`` each, but no more than
        ``max_request_bytes``: every character of a text takes at least one byte of the
        body (one in UTF-8 for ASCII, more for the rest or as a ``\\u`` escape), so the
        body limit caps them too, and with the defaults it is the lesser (16 Mi
        characters, not 2,048 x 32,768). The few bytes of JSON around the texts make the
        true figure a dozen or so characters lower; the bound errs on the safe side.
        """
        return min(self.max_inputs * self.max_input_chars, self.max_request_bytes)

    def problems(self) -> list[str]:
        """What is wrong with these settings, one line each (none: they are usable)."""
        wrong = []
        for name in (
            "max_inputs",
            "max_input_chars",
            "max_request_bytes",
            "max_body_bytes_held",
            "max_queue_texts",
            "max_queue_chars",
            "max_connections",
            "max_concurrent_searches",
        ):
            if getattr(self, name) < 1:
                wrong.append(f"--{name.replace('_', '-')} must be at least 1")
        if not 0 < self.header_timeout_s <= 3600:
            wrong.append("--header-timeout must be above 0 and at most 3600 seconds")
        if self.max_queue_wait_s is not None and not 0 < self.max_queue_wait_s <= 3600:
            wrong.append("--max-queue-wait must be above 0 and at most 3600 seconds")
        if not 0 < self.keep_alive_timeout_s <= 3600:
            wrong.append("--keep-alive-timeout must be above 0 and at most 3600 seconds")
        if not 0 <= self.max_wait_ms <= 1000:
            wrong.append("--max-wait-ms must be from 0 to 1000")
        if self.max_queue_texts < self.max_inputs:
            wrong.append(
                "--max-queue-texts must be at least --max-inputs (else a request of "
                "--max-inputs texts could never be queued)"
            )
        if self.max_body_bytes_held < self.max_request_bytes:
            wrong.append(
                "--max-body-bytes-held must be at least --max-request-bytes (else a body of "
                "--max-request-bytes could never be read)"
            )
        wrong.extend(self._queue_chars_problem())
        if self.long_text not in ("truncate", "mean"):
            wrong.append("--long-text must be truncate or mean")
        return wrong

    def _queue_chars_problem(self) -> list[str]:
        """``max_queue_chars`` below what one request may hold: such a request would get a
        429 "retry" for ever, even from an empty queue."""
        bounds = (self.max_inputs, self.max_input_chars, self.max_request_bytes)
        needed = self.request_chars
        if min(bounds) < 1 or self.max_queue_chars >= needed:  # (below 1: said already)
            return []
        if needed == self.max_request_bytes:
            source = "--max-request-bytes: each character takes a byte of the body or more"
            lower = "--max-request-bytes"
        else:
            source = "--max-inputs x --max-input-chars"
            lower = "--max-inputs or --max-input-chars"
        return [
            f"--max-queue-chars ({self.max_queue_chars:,}) must be at least {needed:,}, the "
            f"characters one request may hold ({source}), else such a request could never "
            f"be queued: raise --max-queue-chars to {needed:,} or lower {lower}"
        ]
