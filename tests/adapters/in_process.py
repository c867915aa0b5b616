"""``seamline serve``'s application in this process, without a model: for the answers
given before anything is embedded (refusals, routing, ``/healthz``).

The engine is a stand-in that is ready and never reached: a request that would be
queued is a test's mistake. Requests go through httpx's ASGI transport, on the
test's own event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from seamline.adapters.serve.app import Served, build_app
from seamline.adapters.serve.limits import Limits
from seamline.adapters.serve.metrics import ServeMetrics

Result = TypeVar("Result")


@dataclass
class ReadyEngine:
    """What ``/healthz`` and the checks ask of the engine; nothing reaches ``submit``."""

    state: str = "ready"
    dimension: int = 32
    failure: str | None = None


def served(limits: Limits | None = None) -> Served:
    engine: Any = ReadyEngine()
    index: Any = None
    return Served(engine, index, limits or Limits(), ServeMetrics(), "m")


def with_client(talk: Callable[[httpx.AsyncClient], Awaitable[Result]]) -> Result:
    """``talk(client)`` run to its end, the client sending to a fresh application."""

    async def scenario() -> Result:
        transport = httpx.ASGITransport(app=build_app(served()))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await talk(client)

    return asyncio.run(scenario())
