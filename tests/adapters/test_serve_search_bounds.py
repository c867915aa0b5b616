"""``/v1/search`` raced against its client leaving, and bounded by
``--max-concurrent-searches``.

64 clients asking ``k=1000`` with a 1 s timeout: 59 gave up, yet the server counted 64
answers of 200 (no 499) and its CPUs searched for 6 s more; nothing bounded how many
searches ran at once. A search whose client leaves is now a 499, and its place is held
until its thread is done (a thread cannot be stopped); past the bound a search waits its
turn (a client leaving while it waits costs no work), and past that line, a 429 at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics
from seamline.adapters.serve.slots import WAITING_PER_PLACE
from tests.adapters.in_process import ReadyEngine

BODY = json.dumps({"query": "exceptions and errors", "k": 5}).encode()


class SlowIndex:
    """A search that runs until ``release`` is set, as a large one runs for seconds."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.ended = threading.Event()

        self.calls = 0

    def find(self, asked: Any) -> dict[str, Any]:
        self.calls += 1
        self.started.set()
        assert self.release.wait(10)
        self.ended.set()
        return {"object": "list", "data": []}


def _served(index: SlowIndex, searches: int) -> Served:
    engine: Any = ReadyEngine()
    limits = Limits(max_concurrent_searches=searches)
    return Served(engine, index, limits, ServeMetrics(), "m")  # type: ignore[arg-type]


async def _post(app: Any, leave: asyncio.Event | None = None) -> dict[str, Any]:
    """POST /v1/search straight to the ASGI app; the client leaves when ``leave`` is set."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/search", "raw_path": b"/v1/search", "root_path": "",
        "query_string": b"", "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }  # fmt: skip
    sent = False
    answer: dict[str, Any] = {"headers": {}}

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        if leave is None:
            await asyncio.Event().wait()  # never leaves
        else:
            await leave.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            answer["body"] = answer.get("body", b"") + message.get("body", b"")

    await app(scope, receive, send)
    return answer


def test_a_search_whose_client_leaves_is_a_499_and_holds_its_place_until_done() -> None:
    index = SlowIndex()
    served = _served(index, searches=4)
    app = build_app(served)

    async def scenario() -> dict[str, Any]:
        leave = asyncio.Event()
        request = asyncio.ensure_future(_post(app, leave))
        await asyncio.to_thread(index.started.wait, 10)
        leave.set()
        answer = await asyncio.wait_for(request, 10)  # without waiting for the search
        assert not index.ended.is_set(), "answered before the search ended"
        assert served.searches.taken == 1, "its thread still runs: its place is held"
        index.release.set()
        for _ in range(200):
            if served.searches.taken == 0:
                break
            await asyncio.sleep(0.01)
        assert served.searches.taken == 0, "given back once the thread is done"
        return answer

    answer = asyncio.run(scenario())
    assert answer["status"] == 499
    counted = served.metrics.requests.labels("search", "499")._value.get()
    assert counted == 1
    assert served.metrics.requests.labels("search", "200")._value.get() == 0


async def _settle(served: Served, waiting: int) -> None:
    for _ in range(500):
        if len(served.searches.waiting) == waiting:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(served.searches.waiting)} waiting, not {waiting}")


def test_a_search_past_the_bound_waits_its_turn_and_is_answered() -> None:
    # Refused at once past the bound, an ordinary burst (16 clients, k=10, 8 places) was
    # answered with 429s for searches a fraction of a second away.
    index = SlowIndex()
    served = _served(index, searches=1)
    app = build_app(served)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        first = asyncio.ensure_future(_post(app))
        await asyncio.to_thread(index.started.wait, 10)
        second = asyncio.ensure_future(_post(app))
        await _settle(served, 1)
        assert index.calls == 1, "the second search waits for a place, it does not run"
        index.release.set()
        return await asyncio.wait_for(first, 10), await asyncio.wait_for(second, 10)

    first, second = asyncio.run(scenario())
    assert (first["status"], second["status"]) == (200, 200)
    assert index.calls == 2
    assert (served.searches.taken, len(served.searches.waiting)) == (0, 0)


def test_a_search_whose_client_leaves_while_it_waits_costs_no_work() -> None:
    index = SlowIndex()
    served = _served(index, searches=1)
    app = build_app(served)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        first = asyncio.ensure_future(_post(app))
        await asyncio.to_thread(index.started.wait, 10)
        leave = asyncio.Event()
        waiting = asyncio.ensure_future(_post(app, leave))
        await _settle(served, 1)
        leave.set()
        gone = await asyncio.wait_for(waiting, 10)
        assert len(served.searches.waiting) == 0, "it left the line"
        index.release.set()
        return await asyncio.wait_for(first, 10), gone

    first, gone = asyncio.run(scenario())
    assert (first["status"], gone["status"]) == (200, 499)
    assert index.calls == 1, "the search whose client left never ran"
    assert served.searches.taken == 0


def test_searches_past_the_line_are_refused_at_once_with_retry_after() -> None:
    index = SlowIndex()
    served = _served(index, searches=1)
    app = build_app(served)

    async def scenario() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        first = asyncio.ensure_future(_post(app))
        await asyncio.to_thread(index.started.wait, 10)
        line = [asyncio.ensure_future(_post(app)) for _ in range(WAITING_PER_PLACE)]
        await _settle(served, WAITING_PER_PLACE)
        refused = await asyncio.wait_for(_post(app), 5)  # fast: not behind the others
        index.release.set()
        answered = [await asyncio.wait_for(request, 10) for request in [first, *line]]
        return answered, refused

    answered, refused = asyncio.run(scenario())
    assert [answer["status"] for answer in answered] == [200] * (1 + WAITING_PER_PLACE)
    assert refused["status"] == 429
    assert refused["headers"]["retry-after"] == "1"
    error = json.loads(refused["body"])["error"]
    assert error["code"] == "queue_full"
    assert error["type"] == "rate_limit_error"
    assert "--max-concurrent-searches" in error["message"]
    assert f"{WAITING_PER_PLACE} more wait for their turn" in error["message"]
    assert served.searches.taken == 0


def test_the_bound_is_refused_below_1_and_defaults_to_twice_the_cpus() -> None:
    from seamline.adapters.serve.limits import usable_cpus

    assert "--max-concurrent-searches must be at least 1" in " ".join(
        Limits(max_concurrent_searches=0).problems()
    )
    assert Limits().max_concurrent_searches == 2 * usable_cpus()


class _Traced:
    """A value whose JSON (``default=str``) records the thread that encoded it."""

    def __init__(self, threads: list[str]) -> None:
        self.threads = threads

    def __str__(self) -> str:
        self.threads.append(threading.current_thread().name)
        return "traced"


class LargeIndex:
    def __init__(self) -> None:
        self.threads: list[str] = []

    def find(self, asked: Any) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": _Traced(self.threads)}]}


def test_a_search_s_answer_is_encoded_off_the_event_loop() -> None:
    # k=10,000 hits (964 KB) were JSON-encoded on the event loop: 15 ms every other
    # request waited.
    index = LargeIndex()
    engine: Any = ReadyEngine()
    served = Served(engine, index, Limits(), ServeMetrics(), "m")  # type: ignore[arg-type]

    async def scenario() -> tuple[dict[str, Any], str]:
        answer = await _post(build_app(served))
        return answer, threading.current_thread().name

    answer, loop_thread = asyncio.run(scenario())
    assert answer["status"] == 200
    assert json.loads(answer["body"]) == {
        "object": "list",
        "data": [{"id": "traced"}],
        "model": "m",
    }
    assert index.threads
    assert loop_thread not in index.threads
