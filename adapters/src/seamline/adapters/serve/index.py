"""``/v1/search``: the output the pipeline wrote, searched as ``open_index`` searches it.

The index is opened on the first search (a pipeline may be served before it was
ever run) and kept: its manifest is read and checked as untrusted input, and its
query model (the index's own model and attention, an in-process embedder) is built
once and stays warm. An index that cannot be opened is a 404 naming why, tried again
on the next search. A search runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path
from typing import Any

from seamline.adapters.search import Found, QueryRefused, Searcher
from seamline.adapters.serve.bodies import SearchRequest
from seamline.adapters.serve.errors import ApiError
from seamline.contracts import UserError
from seamline.contracts.untrusted import visible
from seamline.core import Registry


class IndexSearch:
    """The server's index, opened on first use; searches from any thread."""

    def __init__(self, registry: Registry, path: Path | None) -> None:
        self.registry = registry
        self.path = path
        self._searcher: Searcher | None = None
        self._lock = threading.Lock()

    def _open(self) -> Searcher:
        if self.path is None:
            raise ApiError(
                404,
                "this server has no index to search: the pipeline's sink names no output "
                "path; start the server with --index PATH",
                code="no_index",
            )
        with self._lock:
            if self._searcher is None:
                try:
                    searcher = Searcher(self.registry, self.path)
                    _ = searcher.encoder  # the query model, built once, here
                except UserError as err:
                    raise ApiError(
                        404,
                        self._for_clients(f"cannot search {self.path}: {err}"),
                        code="index_unavailable",
                    ) from None
                self._searcher = searcher
            return self._searcher

    def find(self, request: SearchRequest) -> dict[str, Any]:
        """The hits of ``request``, as the response body."""
        searcher = self._open()
        try:
            found = searcher.find(request.query, request.k, where=request.where)
        except QueryRefused as err:  # a query the model cannot embed, as /v1/embeddings says
            raise ApiError(422, visible(str(err)), code="unembeddable", param="query") from None
        except UserError as err:
            param = "where" if request.where else None
            message = self._for_clients(str(err))
            raise ApiError(422, message, code="invalid_search", param=param) from None
        return _body(found)

    def _for_clients(self, message: str) -> str:
        """``message`` as a client may read it: the index named by its name, not by where it
        lies on the server's disk (``/srv/app/out/emb.lance`` → ``emb.lance``), printable."""
        if self.path is not None:
            for spelling in {os.path.abspath(self.path), os.path.realpath(self.path)}:
                folder = os.path.dirname(spelling)
                message = message.replace(folder + os.sep, "")
        return visible(message)

    def close(self) -> None:
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None


def _body(found: Found) -> dict[str, Any]:
    data = [
        {
            "object": "search.hit",
            "index": rank,
            "score": hit.score if math.isfinite(hit.score) else None,
            "id": hit.doc_id,
            "window": hit.window,
            "span": list(hit.span),
            "text": hit.text,
            "metadata": hit.metadata,
        }
        for rank, hit in enumerate(found.hits)
    ]
    return {"object": "list", "data": data, "how": found.how}
