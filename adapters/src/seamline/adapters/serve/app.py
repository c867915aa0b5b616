"""The routes: ``/v1/embeddings``, ``/v1/search``, ``/v1/models``, ``/healthz``, ``/metrics``.

Every answer to a POST goes through :func:`_endpoint`: a span per request
(``POST /v1/embeddings``; the embedder's ``seamline.embed.request`` span is its
child, linked to the batch that served it), the request counted by status and timed,
a refusal (:class:`~.errors.ApiError`) answered in OpenAI's error shape (a 5xx one also
logged and recorded on the span, :func:`_refused`), and anything else a 500 whose
details go to the server's log, never to the client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import numpy as np
from opentelemetry import trace
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route

from seamline.adapters.serve.access import CALLERS_ID_KEY, SPAN_KEY, TracedAccessLog
from seamline.adapters.serve.bodies import (
    SearchRequest,
    embeddings_request,
    read_body,
    search_request,
)
from seamline.adapters.serve.budget import BodyBudget
from seamline.adapters.serve.catalog import ModelNames, list_models, retrieve_model
from seamline.adapters.serve.checking import checked
from seamline.adapters.serve.engine import Engine
from seamline.adapters.serve.errors import RATE_LIMIT, SERVER_ERROR, ApiError, without_paths
from seamline.adapters.serve.foreign import route_hint
from seamline.adapters.serve.guard import Guard, HostAndOrigin
from seamline.adapters.serve.index import IndexSearch
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.adapters.serve.slots import Slots
from seamline.contracts.logs import get_logger
from seamline.contracts.versions import installed_version
from seamline.core import Cancelled, Unembeddable, extract_trace_context, is_interrupt

log = get_logger("seamline.adapters.serve")
tracer = trace.get_tracer(
    "seamline.adapters.serve", installed_version("seamline-adapters", missing="") or None
)

INLINE_TEXTS = 16
"""Answers of more texts than this are serialized in a worker thread, off the event loop."""
CLIENT_CLOSED = 499
"""The status counted for a request whose client went away (nginx's convention)."""

Handler = Callable[[Request], Awaitable[Response]]
Asked = TypeVar("Asked")


@dataclass(frozen=True, slots=True)
class Served:
    """What the routes serve."""

    engine: Engine
    index: IndexSearch
    limits: Limits
    metrics: ServeMetrics
    model: str
    """The name answers carry in ``model``: the pipeline's."""
    created: int = field(default_factory=lambda: int(time.time()))
    """When the server started (Unix seconds): ``created`` of ``GET /v1/models``."""
    model_names: ModelNames = field(init=False)
    """The unknown ``model`` names requests sent, each logged once."""
    searches: Slots = field(init=False)
    """The places of ``limits.max_concurrent_searches``."""
    bodies: BodyBudget = field(init=False)
    """The bytes of bodies read and not yet parsed: ``limits.max_body_bytes_held``."""

    def __post_init__(self) -> None:  # frozen: each set once
        object.__setattr__(self, "model_names", ModelNames(self.model))
        object.__setattr__(self, "searches", Slots(self.limits.max_concurrent_searches))
        budget = BodyBudget(self.limits.max_body_bytes_held, self.limits.retry_after_s)
        object.__setattr__(self, "bodies", budget)


def build_app(served: Served, lifespan: Any = None, guard: Guard | None = None) -> Starlette:
    """The application; ``lifespan`` starts and stops the engine (see :mod:`.server`);
    ``guard`` the hosts and origins it answers (:mod:`.guard`; None: any)."""
    routes = [
        Route("/v1/embeddings", _endpoint(served, "embeddings", _embeddings), methods=["POST"]),
        Route("/v1/search", _endpoint(served, "search", _search), methods=["POST"]),
        Route("/v1/models", list_models(served.model, served.created), methods=["GET"]),
        Route(
            "/v1/models/{model:path}",
            retrieve_model(served.model, served.created),
            methods=["GET"],
        ),
        Route("/healthz", _healthz(served), methods=["GET"]),
        Route("/metrics", _metrics(served), methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(TracedAccessLog),
            *(
                [Middleware(HostAndOrigin, guard=guard, counted=_count_refusal(served))]
                if guard is not None
                else []
            ),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error(served), Exception: _crashed},
    )
    # Starlette answers /healthz/ with a 307 to /healthz on whatever host the request's
    # Host header names (attacker.example:666 as well): an unknown path is a 404 here.
    app.router.redirect_slashes = False
    return app


def _endpoint(
    served: Served, name: str, handle: Callable[[Served, Request], Awaitable[Response]]
) -> Handler:
    async def answer(request: Request) -> Response:
        started = time.perf_counter()
        span_name = f"{request.method} {request.url.path}"
        # The caller's trace, when its request says which (W3C `traceparent`): the request's
        # span is then a child of the client's, as an instrumented ASGI server makes it.
        caller = extract_trace_context(request.headers)
        with tracer.start_as_current_span(
            span_name, context=caller, kind=trace.SpanKind.SERVER
        ) as span:
            request.scope[SPAN_KEY] = span  # its access-log line's trace (:mod:`.access`)
            span.set_attributes(_request_attributes(request))
            own_id = request.scope.get(CALLERS_ID_KEY)  # the trace found by the caller's id
            if own_id is not None:
                span.set_attribute("http.request.header.x-request-id", (own_id,))
            try:
                response = await handle(served, request)
            except ApiError as err:
                response = _refused(span, name, err)
            except ClientDisconnect:  # gone while its body was being read
                response = Response(status_code=CLIENT_CLOSED)
            except asyncio.CancelledError:  # stopping: --graceful-timeout gave up on it
                response = _refused(span, name, _given_up(served))
            except BaseException as err:  # a Rust panic a pass stored on the request too
                if is_interrupt(err):
                    raise
                log.exception("a request failed", endpoint=name, error=repr(err))
                span.record_exception(err)
                _failed(span, type(err).__qualname__, f"{type(err).__name__}: {err}")
                response = ApiError(
                    500,
                    "the server failed to answer this request (see its log)",
                    code="internal_error",
                    kind=SERVER_ERROR,
                ).response()
            span.set_attribute("http.response.status_code", response.status_code)
        served.metrics.requests.labels(name, str(response.status_code)).inc()
        served.metrics.latency.labels(name).observe(time.perf_counter() - started)
        return response

    return answer


def _request_attributes(request: Request) -> dict[str, str | int]:
    """A request span's attributes, as OpenTelemetry's HTTP server conventions name them.

    ``url.scheme`` is Required there, and ``http.route``, ``server.*``, ``client.address``
    and ``user_agent.original`` are what a backend groups and filters requests by; the
    span carried only the method and path. The routes that make spans are fixed paths,
    so the path is the route.
    """
    url = request.url
    server = request.scope.get("server") or (None, None)
    attributes: dict[str, str | int] = {
        "http.request.method": request.method,
        "url.path": url.path,
        "url.scheme": url.scheme,
        "http.route": url.path,
        "network.protocol.version": str(request.scope.get("http_version", "1.1")),
    }
    address = url.hostname or server[0]
    port = url.port or server[1] or {"http": 80, "https": 443}.get(url.scheme)
    if address:
        attributes["server.address"] = address
    if port:
        attributes["server.port"] = int(port)
    if request.client is not None:
        attributes["client.address"] = request.client.host
        attributes["client.port"] = request.client.port
    agent = request.headers.get("user-agent")
    if agent:
        attributes["user_agent.original"] = agent[:REASON_CHARS]
    return attributes


REASON_CHARS = 500
"""At most this much of a refusal's message goes to a log line or a span's status."""


def _refused(span: trace.Span, endpoint: str, err: ApiError) -> Response:
    """The answer to a refusal, recorded where the operator looks.

    A 5xx is the server's failure (an index it cannot read, a model that failed to
    load): one warning line with its status, code and reason, and the request's span
    an error with that reason and ``error.type`` (the code), as OpenTelemetry's HTTP
    conventions have it; the client's answer alone said why, and the log said nothing.
    A 4xx is the client's (its body, its limits): a debug line with the code only (the
    reason may quote what the client sent) and the span's status left unset, as the
    conventions ask of a server's span.
    """
    if err.status >= 500:
        reason = _bounded(err.message)
        # `not_ready` is a state the server announces (its model loading, its stop) and
        # each client retries through (Retry-After): a warning per request buried the
        # failures among a warm-up's dozens of lines.
        emit = log.info if err.code == "not_ready" else log.warning
        emit(
            "a request was answered with a server error",
            endpoint=endpoint,
            status=err.status,
            code=err.code,
            reason=reason,
        )
        _failed(span, err.code, reason)
    else:
        log.debug("a request was refused", endpoint=endpoint, status=err.status, code=err.code)
    return err.response()


def _failed(span: trace.Span, error_type: str, description: str) -> None:
    """The request's span marked failed: ``error.type`` and the status's description."""
    span.set_attribute("error.type", error_type)
    span.set_status(trace.Status(trace.StatusCode.ERROR, _bounded(description)))


def _bounded(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def _given_up(served: Served) -> ApiError:
    """The refusal of a request the stopping server cancelled (its ``--graceful-timeout``
    passed, or a second Ctrl-C came), answered in OpenAI's shape, where uvicorn would send a
    plain-text 500 and log a traceback. The cancellation is taken back so that the answer
    is still sent."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    return ApiError(
        503,
        "the server is shutting down and stopped waiting for this request "
        "(its --graceful-timeout passed, or it was told to stop at once): send it again",
        code="not_ready",
        kind=SERVER_ERROR,
        headers={"Retry-After": str(served.limits.retry_after_s)},
    )


async def _embeddings(served: Served, request: Request) -> Response:
    engine = served.engine
    if engine.state != "ready":
        raise engine.not_ready()
    dimension = engine.dimension
    asked = await _read(
        served, request, lambda data: embeddings_request(data, served.limits, dimension)
    )
    served.model_names.note(asked.model)
    loop = asyncio.get_running_loop()
    pending, future = engine.submit(asked.texts, asked.characters, loop, queries=asked.queries)
    left = asyncio.ensure_future(_client_left(request))
    waiting: list[asyncio.Future[Any]] = [future, left]
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        left.cancel()
        if not future.done() and pending.cancel():
            served.metrics.cancelled.inc()
    if not future.done():  # the client went away: nobody to answer
        return Response(status_code=CLIENT_CLOSED)
    try:
        vectors = pending.result()
    except Unembeddable as err:
        # The request's field (texts[i] is the embedder's name), as the other errors name it.
        where = "input" if asked.single else f"input[{err.index}]"
        raise ApiError(
            400, f"{where} cannot be embedded: {err.reason}", code="unembeddable", param=where
        ) from None
    except Cancelled:
        return Response(status_code=CLIENT_CLOSED)
    except Exception:
        if engine.failure is not None:  # the engine stopped serving meanwhile: say so
            raise engine.not_ready() from None
        raise
    assert isinstance(vectors, np.ndarray)
    tokens = pending.tokens
    served.metrics.texts.inc(len(asked.texts))
    served.metrics.tokens.inc(tokens)
    args = (vectors, asked.encoding_format, served.model, tokens)
    if len(asked.texts) > INLINE_TEXTS:
        body = await anyio.to_thread.run_sync(_embeddings_body, *args)
    else:
        body = _embeddings_body(*args)
    return Response(body, media_type="application/json")


async def _read(served: Served, request: Request, check: Callable[[Any], Asked]) -> Asked:
    """The request's body read and checked, its bytes held in ``served.bodies`` (429 past
    ``--max-body-bytes-held``) until it is parsed: read, a large body may wait its turn."""
    held = served.bodies.hold()
    try:
        body = await read_body(request, served.limits.max_request_bytes, held)
        return await checked(body, check)
    finally:
        held.give_back()


async def _client_left(request: Request) -> None:
    """Return when the client disconnects (the body is read: nothing else can arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _embeddings_body(vectors: np.ndarray, encoding: str, model: str, tokens: int) -> bytes:
    """OpenAI's answer: one ``embedding`` object per text, in input order, and ``usage``."""
    if encoding == "base64":  # little-endian float32, as the openai client decodes it
        little = vectors.astype("<f4", copy=False)
        items: list[Any] = [base64.b64encode(row.tobytes()).decode("ascii") for row in little]
    else:
        items = vectors.tolist()
    body = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": item}
            for index, item in enumerate(items)
        ],
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    # Never the bare word NaN, which no JSON parser reads: a ValueError, answered as a 500
    # with the reason in the log (the encoder refuses such outputs before they get here).
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


async def _search(served: Served, request: Request) -> Response:
    """The search, in a worker thread, raced against its client leaving (499).

    A client that left was answered 200 all the same once its search ended (the metrics
    counted it served), and nothing bounded how many ran: the thread cannot be stopped,
    so its place (``--max-concurrent-searches``) is held until it ends. A search past the
    bound waits its turn (:class:`Slots`: a client leaving while it waits costs no work),
    and one past that line is a 429 at once.
    """
    asked = await _read(served, request, lambda data: search_request(data, served.limits))
    if served.searches.full:
        raise _searches_busy(served)
    left = asyncio.ensure_future(_client_left(request))
    try:
        place = asyncio.ensure_future(served.searches.take())
        await asyncio.wait([place, left], return_when=asyncio.FIRST_COMPLETED)
        if not place.done() or left.done():  # it left while waiting: no work done
            place.cancel()
            if place.done() and not place.cancelled():
                served.searches.give_back()
            return Response(status_code=CLIENT_CLOSED)
        searching = asyncio.ensure_future(anyio.to_thread.run_sync(_search_answer, served, asked))
        searching.add_done_callback(lambda _: served.searches.give_back())  # the thread's end
        await asyncio.wait([searching, left], return_when=asyncio.FIRST_COMPLETED)
    finally:
        left.cancel()
    if not searching.done():  # the client went away: its thread runs on, unanswered
        searching.add_done_callback(_unanswered_failure)
        return Response(status_code=CLIENT_CLOSED)
    return Response(searching.result(), media_type="application/json")


def _search_answer(served: Served, asked: SearchRequest) -> bytes:
    """The search and its answer's JSON, both in the worker thread: encoded on the event
    loop, ``k=10000`` hits (964 KB) held every other answer for 15 ms."""
    found = served.index.find(asked)
    found["model"] = served.model
    return json.dumps(found, separators=(",", ":"), default=str, allow_nan=False).encode()


def _unanswered_failure(done: asyncio.Future[Any]) -> None:
    """A search that failed after its client left: logged (a refusal, the client's, is
    not), never asyncio's "exception was never retrieved" at exit."""
    failure = None if done.cancelled() else done.exception()
    if failure is not None and not isinstance(failure, ApiError):
        log.warning("a search whose client left failed", error=repr(failure))


def _searches_busy(served: Served) -> ApiError:
    """429, in the shape of the embeddings' ``queue_full``: ``--max-concurrent-searches``."""
    seconds = served.limits.retry_after_s
    return ApiError(
        429,
        f"the server is running {served.searches.taken:,} searches, the limit set by "
        f"--max-concurrent-searches, and {len(served.searches.waiting):,} more wait for "
        f"their turn: retry after {seconds} s",
        code="queue_full",
        kind=RATE_LIMIT,
        headers={"Retry-After": str(seconds)},
    )


def _healthz(served: Served) -> Handler:
    async def healthz(request: Request) -> Response:
        engine = served.engine
        body: dict[str, Any] = {"status": engine.state, "model": served.model}
        if engine.state == "ready":
            body["dimension"] = engine.dimension
            return JSONResponse(body)
        if engine.failure:  # no path of the server's: its log has the whole error
            body["error"] = without_paths(engine.failure)
        headers = {"Retry-After": str(served.limits.retry_after_s)}
        return JSONResponse(body, status_code=503, headers=headers)

    return healthz


def _metrics(served: Served) -> Handler:
    async def metrics(request: Request) -> Response:
        body, headers = served.metrics.answer(
            request.headers.get("accept", ""), request.headers.get("accept-encoding", "")
        )
        return Response(body, headers=headers)

    return metrics


def _count_refusal(served: Served) -> Callable[[str], None]:
    """Counts a refusal made before any endpoint, by its error code."""

    def count(code: str) -> None:
        served.metrics.refused.labels(code).inc()

    return count


def _http_error(served: Served) -> Callable[[Request, Exception], Awaitable[Response]]:
    """Unknown paths and methods, in the same error shape as everything else, counted."""
    count = _count_refusal(served)

    async def answer(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 400
        message = {404: "no such endpoint", 405: "this endpoint does not take that method"}.get(
            status, str(getattr(exc, "detail", "bad request"))
        )
        route = f"{request.method} {request.url.path}"
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "bad_request")
        hint = _without_v1(request, status) or (
            route_hint(request.url.path) if status == 404 else ""
        )
        count(code)
        return ApiError(status, f"{message}: {route}{hint}", code=code).response()

    return answer


def _without_v1(request: Request, status: int) -> str:
    """For a 404 of a path that is one of ours without its ``/v1`` (``POST /embeddings``:
    an OpenAI client whose ``base_url`` lacks the ``/v1``), where the endpoint is."""
    path = request.url.path
    if status != 404 or path.startswith("/v1/"):
        return ""
    scope = {**request.scope, "path": f"/v1{path}"}
    if not any(route.matches(scope)[0] != Match.NONE for route in request.app.router.routes):
        return ""
    return (
        f"; the endpoint is /v1{path} (an OpenAI client's base_url ends "
        "in /v1: http://HOST:PORT/v1)"
    )


async def _crashed(request: Request, exc: Exception) -> Response:
    """The last resort (a route above answers its own failures): a 500, no traceback sent."""
    log.error("unhandled error", path=request.url.path, error=repr(exc))
    failed = ApiError(500, "internal server error", code="internal_error", kind=SERVER_ERROR)
    return failed.response()
