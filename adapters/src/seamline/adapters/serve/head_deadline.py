"""A deadline for a request's head: a connection that has not sent one in time is closed.

uvicorn (its h11 protocol, the one installed here) times a connection only between two
requests (its keep-alive timeout, armed when a response is complete, cancelled by the
next byte). A connection that sends nothing, or its headers a byte a second, was kept
for ever and held one of the ``--max-connections`` places: 1,024 silent TCP connections
made every request, health checks included, a 503 for as long as they stayed open.
nginx's ``client_header_timeout`` and Apache's ``mod_reqtimeout`` bound the same wait.

The deadline runs from the connection's opening, and, on a kept-alive connection, from
the first byte of its next request: the idle time between an answer and that byte is
the keep-alive timeout's (``--keep-alive-timeout``, above a balancer's idle timeout),
not this one's. Timed from the answer, it closed an idle connection after 10 s that a
load balancer kept for 60, and the balancer's next request on it was lost (a 502). A
request whose head arrived in time is not cut short by it (its body is bounded by
``--max-request-bytes``, its time is not: see serving.md). The connection is closed
without an answer: there is no request to answer.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

from seamline.contracts.logs import get_logger

log = get_logger("seamline.adapters.serve")


class HeadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late."""

    head_timeout_s: ClassVar[float] = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm(None)

    def on_response_complete(self) -> None:
        self._disarm()  # idle from now on: uvicorn's keep-alive timeout's wait
        super().on_response_complete()

    def data_received(self, data: bytes) -> None:
        """The first byte after an answer starts the next request's head: time it."""
        answered = self.cycle is not None and self.cycle.response_complete
        if answered and getattr(self, "_head_timer", None) is None:
            self._arm(self.cycle)
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, answered: Any) -> None:
        """Time the next request's head from now (``answered``: the request just answered)."""
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._late, answered)

    def _disarm(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _late(self, answered: Any) -> None:
        self._head_timer = None
        if self.cycle is not answered or self.transport.is_closing():
            return  # a request's head came in time (or the connection is going anyway)
        log.debug(  # debug: a flood of them must not flood the log too
            "closed a connection that sent no request head in time",
            seconds=self.head_timeout_s,
            client=_client(self.client),
        )
        self.transport.close()


def _client(address: tuple[str, int] | None) -> str:
    return "unknown" if address is None else f"{address[0]}:{address[1]}"


def with_head_timeout(seconds: float) -> type[HeadDeadlineProtocol]:
    """The protocol class for uvicorn's ``http=`` setting, with its deadline ``seconds``."""
    return type("HeadDeadlineProtocol", (HeadDeadlineProtocol,), {"head_timeout_s": seconds})
