"""Errors as OpenAI's API gives them, so its clients report them as they would OpenAI's.

``{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}`` with an HTTP
status: 400 for a body that is not JSON or asks for something refused (a field of the
wrong type, an empty text, too many texts, a text too long, one the model cannot
embed: OpenAI's status for its own refusals of input, which its SDK raises as
``BadRequestError``; on ``/v1/search`` too, so one status means "the request's fault"
on every endpoint), 413 for a body past the byte limit, 415 for a compressed body,
429 when the queue is full and 503 while the model is loading (both with ``Retry-After``) or
when the index searched broke, 404 where there is nothing to search, 500 for a failure
of the server itself (its message says only that, the details go to the server's log:
never a traceback to the client).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from starlette.responses import JSONResponse

from seamline.contracts.untrusted import visible

INVALID_REQUEST = "invalid_request_error"
RATE_LIMIT = "rate_limit_error"
SERVER_ERROR = "server_error"


class ApiError(Exception):
    """A request refused, with its status and OpenAI-shaped body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        param: str | None = None,
        kind: str = INVALID_REQUEST,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.kind = kind
        self.headers = dict(headers or {})

    def response(self) -> JSONResponse:
        body = {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        }
        return JSONResponse(body, status_code=self.status, headers=self.headers)


_SOURCE_PLACE = re.compile(r",? */\S+\.rs:\d+(?::\d+)?")
"""Where a Rust library raised its error (``, /root/.cargo/.../local.rs:12:5``), dropped."""
_SERVER_PATH = re.compile(r"(?<![\w./~-])/(?:[\w.@+~-]+/)+[\w.@+~-]*(?![\w/])")
"""Any other absolute path of two or more parts left in a message, shown as ``…``."""


def without_paths(message: str) -> str:
    """``message`` as a client may read it: no path of the server's (its files, a
    library's source files), printable. The full message is the server's log's."""
    return visible(_SERVER_PATH.sub("…", _SOURCE_PLACE.sub("", message)))
