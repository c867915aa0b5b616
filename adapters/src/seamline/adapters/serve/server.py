"""uvicorn, on a socket of our own, started and stopped cleanly.

The socket is bound and listening before anything else starts, so the address
(``--port 0``: any free port) is known and announced at once, and a client that
connects while the model warms up waits in the backlog rather than being refused.
uvicorn serves it; the application's lifespan starts the engine (:mod:`.engine`) and,
at the end, embeds what is still queued and releases the model.

SIGTERM or SIGINT: uvicorn stops accepting connections, lets every request in flight
finish (their texts are still embedded: the engine runs until the lifespan ends),
closes idle connections, then the process exits with status 0. A second SIGINT, or
``--graceful-timeout`` seconds, cuts the wait short: a request still in flight then
gets a 503, the engine abandons its pass at the next batch, the model and the index are
released all the same (:class:`StoppingServer`), and the process exits
(:meth:`~.engine.Engine.stop` waits a few seconds at most, off the event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import math
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import uvicorn

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.guard import Guard
from seamline.adapters.serve.head_deadline import with_head_timeout
from seamline.adapters.serve.index import IndexSearch
from seamline.adapters.serve.limits import MAX_PORT, Limits
from seamline.adapters.serve.metrics import BatchMetrics, ServeMetrics
from seamline.adapters.serve.open_files import make_room_for
from seamline.contracts import UserError
from seamline.contracts.documents import prepare_blank_check
from seamline.contracts.logs import get_logger
from seamline.core import Embedder, Registry, ResolvedEncoder, ResolvedPipeline, decide_precision

log = get_logger("seamline.adapters.serve")

BACKLOG = 2048


def check_port(port: int) -> None:
    """UserError unless ``port`` is a TCP port: 99999 would not fail to bind, the kernel
    takes it modulo 65,536 (34463) and the server listens on another port, silently."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= MAX_PORT:
        raise UserError(f"the port must be from 0 to {MAX_PORT} (0: any free port), not {port!r}")


def check_graceful_timeout(seconds: float | None) -> None:
    """UserError unless ``seconds`` is None (wait for ever) or 0 or more; seconds, not whole
    seconds (uvicorn hands it to ``asyncio.timeout``): NaN and infinity are refused."""
    if seconds is not None and not 0 <= seconds < math.inf:
        raise UserError(f"the graceful timeout must be 0 seconds or more, not {seconds!r}")


def sink_output(resolved: ResolvedPipeline) -> Path | None:
    """The output the pipeline's sink writes (its ``path``, as every first-party sink names it)."""
    path = getattr(resolved.sink.config, "path", None)
    return Path(path) if isinstance(path, str | os.PathLike) else None


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port); UserError if it cannot."""
    check_port(port)
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as err:
        raise UserError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    _warn_if_reachable(sock)
    return sock


def _warn_if_reachable(sock: socket.socket) -> None:
    """Warn when the socket listens beyond this machine: the server has no authentication,
    and ``--host 0.0.0.0`` (every interface) said nothing of it."""
    host = str(sock.getsockname()[0])
    address = ipaddress.ip_address(host.partition("%")[0])  # an IPv6 scope: fe80::1%eth0
    if not address.is_loopback:
        where = "every interface" if address.is_unspecified else host
        log.warning(
            f"listening on {where}: the server has no authentication, so whoever can reach "
            "it can embed texts and search the index; keep it on 127.0.0.1 behind a proxy "
            "that authenticates, or on a network only trusted clients reach",
            address=host,
        )


def _warn_of_unused_monitors(resolved: ResolvedPipeline) -> None:
    """Say that the pipeline's ``monitors:`` do not watch the server: they watch a run's
    batches, commits and end, and a ``memory`` or ``metrics`` monitor in a served pipeline
    did nothing, without a word. The server's own watch is ``/metrics`` and its logs."""
    if resolved.monitors:
        log.warning(
            "the pipeline's monitors are not run by seamline serve (they watch runs); "
            "watch the server through GET /metrics and its logs",
            monitors=[choice.name for choice in resolved.monitors],
        )


def _before_the_model(resolved: ResolvedPipeline, limits: Limits) -> None:
    """What is said and set before the model is built: the monitors that will not run, and
    the limit on open files raised for ``--max-connections`` (:mod:`.open_files`), before
    the model, the compile cache and the index open theirs under a limit too low."""
    _warn_of_unused_monitors(resolved)
    make_room_for(limits.max_connections)


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve_pipeline(
    resolved: ResolvedPipeline,
    registry: Registry,
    limits: Limits,
    *,
    host: str,
    port: int,
    index: Path | None,
    announce: Callable[[str], None],
    graceful_timeout: float | None = 30.0,
    access_log: bool = False,
    allowed: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),  # hosts, origins: .guard
) -> None:
    """Serve ``resolved``'s model until a signal; raises the warm-up's error if it fails.

    A port outside 0 to 65,535 or a ``graceful_timeout`` that is negative or not finite
    is a ``UserError``, raised before the model is built (seconds: 2.5 as well as 30).
    """
    check_port(port)
    check_graceful_timeout(graceful_timeout)
    metrics = ServeMetrics()
    _before_the_model(resolved, limits)
    decision = resolved.precision or decide_precision(resolved, registry)
    side = ResolvedEncoder(
        resolved.model,
        resolved.attention,
        resolved.spec.run,
        resolved.source,
        precision=decision.chosen,
        overrides=tuple(resolved.overrides_under(("model", "with"))),
    )
    embedder = Embedder.from_resolved(
        side,
        registry,
        monitors=[BatchMetrics(metrics)],
        long_text=limits.long_text,
        max_wait=limits.max_wait_ms / 1000,
    )
    searched = IndexSearch(registry, index or sink_output(resolved))
    engine = Engine(embedder, limits, metrics, warm_also=searched.warm)  # search warm too
    served = Served(engine, searched, limits, metrics, resolved.spec.pipeline)
    prepare_blank_check()  # 0.3 s, now rather than on the event loop at a first request
    sock = bind(host, port)
    failures: list[BaseException] = []
    holder: dict[str, StoppingServer] = {}

    def failed(error: BaseException) -> None:  # in the engine thread
        failures.append(error)
        holder["server"].should_exit = True

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        served.engine.start(failed)
        announce(url_of(sock))
        try:
            yield
        finally:  # off the event loop, which still writes the last answers meanwhile
            await asyncio.to_thread(served.engine.stop)
            await asyncio.to_thread(served.index.close)
            holder["server"].released = True

    config = uvicorn.Config(
        build_app(served, lifespan, Guard.for_address(str(sock.getsockname()[0]), *allowed)),
        log_config=None,
        access_log=access_log,
        # Annotated int by uvicorn, which hands it to asyncio.timeout: seconds, 2.5 too.
        timeout_graceful_shutdown=graceful_timeout,  # type: ignore[arg-type]
        limit_concurrency=limits.max_connections,
        http=with_head_timeout(limits.header_timeout_s),  # uvicorn has no such deadline
        # Idle between two requests (uvicorn's default, 5 s, lost a balancer's requests):
        # seconds, 2.5 too (uvicorn hands it to call_later, though it annotates an int).
        timeout_keep_alive=limits.keep_alive_timeout_s,  # type: ignore[arg-type]
        server_header=False,
        lifespan="on",
    )
    holder["server"] = server = StoppingServer(config)
    with _quiet_after_drain(), _cut_off_said_as_warning(graceful_timeout):
        server.run(sockets=[sock])
    if failures:
        raise failures[0]


class StoppingServer(uvicorn.Server):
    """uvicorn's server, whose stop always ends the application's lifespan.

    A second SIGINT sets uvicorn's ``force_exit``: it stops waiting for the requests in
    flight, as it should, but also skips the lifespan's end, so the engine and the index
    were never released, and the lifespan, cancelled as the event loop closed, logged a
    ``CancelledError`` traceback at error level. Here the requests still in flight are
    cancelled instead (each answers 503, as past ``--graceful-timeout``), and the
    lifespan ends as after any other stop: its wait for a batch is bounded
    (:meth:`~.engine.Engine.stop`).
    """

    released = False
    """Set by the lifespan once the engine is stopped and the index closed."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        if not self.force_exit or self.released:
            return
        cut = [task for task in self.server_state.tasks if not task.done()]
        log.warning("stopping at once (a second Ctrl-C)", requests_cut_off=len(cut))
        for task in cut:
            task.cancel()
        await self.lifespan.shutdown()


UVICORN_CUT_OFF = "Cancel %s running task(s), timeout graceful shutdown exceeded"
"""What uvicorn logs, at error level, as ``--graceful-timeout`` passes."""


class _CutOffLine(logging.Filter):
    """uvicorn's line as ``--graceful-timeout`` passes, said at warning level in our words.

    uvicorn logs it at error level, every time a stop outlasts the timeout: a designed
    outcome (each request cut off is answered 503 ``not_ready``, which clients retry
    through), which paged operators who alert on ``level=error``.
    """

    def __init__(self, seconds: float | None) -> None:
        super().__init__()
        self.seconds = seconds

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != UVICORN_CUT_OFF:
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        log.warning(
            "--graceful-timeout passed: the requests still in flight are cut off, each "
            "answered 503 not_ready",
            requests_cut_off=args[0] if args else None,
            graceful_timeout_s=self.seconds,
        )
        return False


@contextlib.contextmanager
def _cut_off_said_as_warning(seconds: float | None) -> Any:
    """:class:`_CutOffLine` on uvicorn's logger while the server runs."""
    uvicorn_log = logging.getLogger("uvicorn.error")
    line = _CutOffLine(seconds)
    uvicorn_log.addFilter(line)
    try:
        yield
    finally:
        uvicorn_log.removeFilter(line)


@contextlib.contextmanager
def _quiet_after_drain() -> Any:
    """uvicorn raises the stopping signals again once it has drained; take them as done.

    Without this, the signal's default action would end a cleanly drained server with
    "killed by SIGTERM" (or a second Ctrl-C's KeyboardInterrupt) instead of exit status 0.
    """
    stops = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
