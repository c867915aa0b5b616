"""``GET /v1/models`` and ``GET /v1/models/{id}``: the one model the server serves.

OpenAI's clients and the tools built on them list or look up the model at startup (a
health probe, a check that the configured model exists); without these routes they met
a 404 before their first embedding. The server serves one pipeline, so the list holds
one model: its id is the name ``/v1/embeddings`` answers in ``model`` (the pipeline's),
``created`` the time the server started (a model card has no other date to give), and
``owned_by`` ``seamline``. Another id is a 404 in OpenAI's error shape, ``model_not_found``
as OpenAI names it, saying which id is served. The answers do not depend on the model
being loaded: ``/healthz`` says that.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from seamline.adapters.serve.errors import ApiError
from seamline.contracts.logs import get_logger

log = get_logger("seamline.adapters.serve")

OWNER = "seamline"

Handler = Callable[[Request], Awaitable[Response]]


def model_card(model: str, created: int) -> dict[str, Any]:
    """One model as OpenAI's ``Model`` object gives it."""
    return {"id": model, "object": "model", "created": created, "owned_by": OWNER}


def list_models(model: str, created: int) -> Handler:
    """``GET /v1/models``: a list of the one model served."""

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [model_card(model, created)]})

    return models


def retrieve_model(model: str, created: int) -> Handler:
    """``GET /v1/models/{id}``: the model served, or a 404 naming the one that is."""

    async def retrieve(request: Request) -> Response:
        asked = str(request.path_params["model"])
        if asked != model:
            shown = asked if len(asked) <= 100 else f"{asked[:100]}..."
            return ApiError(
                404,
                f"no such model: {shown!r}; this server serves one model, {model!r} "
                "(GET /v1/models lists it)",
                code="model_not_found",
                param="model",
            ).response()
        return JSONResponse(model_card(model, created))

    return retrieve


MAX_NAMES_NOTED = 8
"""How many distinct unknown model names are logged: a client that sends a new name with
each request must not fill the log, nor the server's memory."""


class ModelNames:
    """The ``model`` names embedding requests sent that are not the one served, each
    logged once (a warning), the first :data:`MAX_NAMES_NOTED` of them.

    The name is not checked, so that clients configured with OpenAI's model name work
    unchanged; but a client that meant another model (``text-embedding-3-small``, an
    e5) is answered with this server's vectors, which it cannot tell from its answer's
    ``model`` alone: the log says so, where an operator looks.
    """

    def __init__(self, served: str) -> None:
        self._served = served
        self._noted: set[str] = set()

    def note(self, asked: str | None) -> None:
        """Log ``asked`` if it is a name not served and not yet logged (within the bound)."""
        if asked is None or asked == self._served or asked in self._noted:
            return
        if len(self._noted) >= MAX_NAMES_NOTED:
            return
        self._noted.add(asked)
        last = len(self._noted) == MAX_NAMES_NOTED
        log.warning(
            "an embedding request names a model this server does not serve; it is "
            "answered with the model served (the request's model is not checked)",
            asked=asked if len(asked) <= 100 else f"{asked[:100]}...",
            served=self._served,
            further_names_logged=not last,
        )
