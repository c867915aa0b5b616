"""``/v1/search``: the output the pipeline wrote, searched as ``open_index`` searches it.

The index is opened on the first search (a pipeline may be served before it was
ever run) and kept: its manifest is read and checked as untrusted input, and its
query model (the index's own model and attention, an in-process embedder) is built
once and stays warm. An index that cannot be opened is a 404 naming why, tried again
on the next search. A search runs in a worker thread, never on the event loop.

The index may be written again while it is served (the pipeline re-run, perhaps with
another model setting): each search first looks at the manifest (one ``stat``) and,
when it is another file than the one opened, opens the index anew, so that a query is
always embedded by the model the current manifest names. Where that is the model already
built (the same settings, weights digest, precision and attention), it is kept, and only
the output is opened again; another model is built, within that search. The searcher it replaces is
closed once the searches still using it are done: each search holds a lease on the
searcher it began with (:meth:`IndexSearch._acquire`, :meth:`IndexSearch._release`),
because a closed searcher refuses to search (:class:`~seamline.adapters.search.IndexClosed`), and a
search closed under it would have answered 500. A republish that lands during a
search, by another model, is caught after the rows are read (:class:`ModelChanged`):
the search is made once more, with the index opened anew.

At the server's stop (:meth:`IndexSearch.close`) the searcher is closed the same way,
once its last search is done, and a search that comes later is refused (503) rather
than open the index again: a model opened then would never be closed.

Once a replaced searcher is closed, the memory its query model freed is handed back to the
system (:func:`release_freed_memory`): glibc's malloc kept it, and a server whose index was
republished grew by about 27 MiB each time (see :mod:`.freed_memory`).
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seamline.adapters.search import (
    FilterRefused,
    Found,
    ModelChanged,
    QueryRefused,
    Searcher,
    manifest_path,
)
from seamline.adapters.serve.bodies import DEFAULT_K, SearchRequest
from seamline.adapters.serve.errors import SERVER_ERROR, ApiError, without_paths
from seamline.adapters.serve.freed_memory import release_freed_memory
from seamline.contracts import UserError
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import visible
from seamline.core import Registry

log = get_logger("seamline.adapters.serve")

WARM_UP_QUERY = "seamline serve warm-up query"
"""The query :meth:`IndexSearch.warm` searches for: a few words, as most queries are."""

Signature = tuple[int, int, int, int, int] | None
"""What tells one version of a manifest from another: its device, inode, modification and
change times and size (None: there is none to read)."""


def manifest_signature(index: Path) -> Signature:
    """The signature of ``index``'s manifest, from one ``stat`` (no read).

    A sink publishes a manifest by renaming a new file in place (a new inode); an edit in
    place changes its change time, which no one can set back.
    """
    try:
        found = os.stat(manifest_path(index), follow_symlinks=False)
    except (OSError, UserError):
        return None
    return (found.st_dev, found.st_ino, found.st_mtime_ns, found.st_ctime_ns, found.st_size)


@dataclass(slots=True)
class _Opened:
    """A searcher, the manifest it was opened from, and how many searches are using it."""

    searcher: Searcher
    signature: Signature
    users: int = 0
    retired: bool = False
    """Replaced (the manifest changed) or closed: closed once ``users`` falls to 0."""


class IndexSearch:
    """The server's index, opened on first use and again when its manifest changes;
    searches from any thread."""

    def __init__(self, registry: Registry, path: Path | None) -> None:
        self.registry = registry
        self.path = path
        self._opened: _Opened | None = None
        self._lock = threading.Lock()
        self._stopped = False
        """Set by :meth:`close`: no searcher is opened any more."""

    def _acquire(self) -> _Opened:
        """The searcher of the index's current manifest, counted as in use until released."""
        path = self._index()
        signature = manifest_signature(path)  # before opening: never newer than what is read
        stale: _Opened | None = None
        try:
            with self._lock:
                if self._stopped:
                    raise ApiError(
                        503,
                        "the server is shutting down",
                        code="not_ready",
                        kind=SERVER_ERROR,
                    )
                replaced = self._opened
                if replaced is not None and replaced.signature != signature:
                    stale = self._retire()
                if self._opened is None:
                    kept = None if replaced is None else replaced.searcher
                    self._opened = _Opened(self._build(path, kept), signature)
                self._opened.users += 1
                return self._opened
        finally:
            if stale is not None:
                self._close(stale.searcher)

    def warm(self) -> None:
        """Open the index, build its query model and search it once, before the server
        says ready (the engine's warm-up calls it: :class:`~.engine.Engine`).

        Built on the first search, the query model (its weights loaded, its attention
        verified and compiled) made that search take 4 to 7 s after ``/healthz`` had said
        ready, and behind a readiness probe every replica's first user waited for it.
        One search of a query of a few words and the default ``k`` warms the usual
        path: the model's shape for short queries, the output's reader and its vector
        index. An index that cannot be searched now (not written yet: a pipeline served
        before its first run; or broken) does not keep the server from serving
        embeddings: one log line says why, and the first search tries again.
        """
        if self.path is None:
            return
        try:
            self.find(SearchRequest(WARM_UP_QUERY, DEFAULT_K, None))
        except ApiError as err:
            absent = manifest_signature(self.path) is None
            say = log.info if absent else log.warning
            say(
                "the index cannot be searched yet; /v1/search opens it at its first search",
                index=str(self.path),
                reason=err.message,
            )
            return
        except Exception as err:  # the server serves embeddings all the same
            log.warning(
                "the index could not be warmed up; /v1/search tries again at its first search",
                index=str(self.path),
                error=repr(err),
            )
            return
        log.info("the index is warm", index=str(self.path))

    def _index(self) -> Path:
        if self.path is None:
            raise ApiError(
                404,
                "this server has no index to search: the pipeline's sink names no output "
                "path; start the server with --index PATH",
                code="no_index",
            )
        return self.path

    def _build(self, path: Path, replaced: Searcher | None = None) -> Searcher:
        """The index opened and its query model built (under the lock: once at a time), or,
        where the searcher it replaces embeds queries as the new manifest says, that
        searcher's model kept (:meth:`Searcher.share_encoder`): only the output is opened
        again, a fraction of a second where building a model took seconds."""
        try:
            searcher = Searcher(self.registry, path)
            if replaced is None or not searcher.share_encoder(replaced):
                _ = searcher.encoder  # the query model, built once, here
        except UserError as err:
            raise ApiError(
                404,
                self._for_clients(f"cannot search {path}: {err}"),
                code="index_unavailable",
            ) from None
        if searcher.version_warning:  # once for each opening, never for each search
            log.warning(searcher.version_warning, index=str(path))
        return searcher

    def _retire(self) -> _Opened | None:
        """Forget the open searcher (under the lock); it, if no search is using it, to close."""
        opened, self._opened = self._opened, None
        if opened is None:
            return None
        opened.retired = True
        return opened if opened.users == 0 else None

    def _release(self, opened: _Opened) -> None:
        with self._lock:
            opened.users -= 1
            done = opened.retired and opened.users == 0
        if done:
            self._close(opened.searcher)

    def _close(self, searcher: Searcher) -> None:
        """Close a retired searcher, then hand the memory its model freed back to the system."""
        searcher.close()
        release_freed_memory()

    def find(self, request: SearchRequest) -> dict[str, Any]:
        """The hits of ``request``, as the response body."""
        try:
            return self._find(request)
        except ModelChanged:  # republished by another model as it was searched: once more
            # Retire the searcher whose model the output no longer names (its manifest's
            # signature, taken before the search, may not have changed yet): the next
            # search opens the index anew.
            self._drop()
            return self._find(request)

    def _find(self, request: SearchRequest) -> dict[str, Any]:
        opened = self._acquire()
        try:
            found = opened.searcher.find(
                request.query, request.k, where=request.where, per_document=request.per_document
            )
        except ModelChanged:
            raise
        except QueryRefused as err:  # a query the model cannot embed, as /v1/embeddings says
            raise ApiError(400, visible(str(err)), code="unembeddable", param="query") from None
        except FilterRefused as err:  # the request's filter: the client's to fix
            message = self._for_clients(str(err))
            raise ApiError(400, message, code="invalid_search", param="where") from None
        except UserError as err:  # the index's files, changed or damaged since it was opened
            raise ApiError(
                503,
                self._for_clients(f"cannot search {self.path}: {err}"),
                code="index_unavailable",
                kind=SERVER_ERROR,
            ) from None
        finally:
            self._release(opened)
        return _body(found)

    def _for_clients(self, message: str) -> str:
        """``message`` as a client may read it: the index named by its name, not by where it
        lies on the server's disk (``/srv/app/out/emb.lance`` → ``emb.lance``; LanceDB
        writes it without its leading ``/``), no other path of the server's (a library's
        source files, in LanceDB's messages), printable."""
        if self.path is not None:
            # ``--index out/emb.lance`` is named as given too (``out/`` is the server's folder)
            given = {str(self.path), os.path.normpath(self.path)}
            spellings = {os.path.abspath(self.path), os.path.realpath(self.path), *given}
            for spelling in sorted(spellings, key=len, reverse=True):  # the longest first
                if not os.path.dirname(spelling):
                    continue  # a bare name: no folder to take out
                folder = os.path.dirname(spelling).rstrip(os.sep) + os.sep
                message = message.replace(folder, "").replace(folder.lstrip(os.sep), "")
        return without_paths(message)

    def _drop(self) -> None:
        """Retire the open searcher: closed now, or when the last search using it is done."""
        with self._lock:
            stale = self._retire()
        if stale is not None:
            self._close(stale.searcher)

    def close(self) -> None:
        """At the server's stop: the searcher closed now, or when the last search using it
        is done, and no other opened (a later search is a 503)."""
        with self._lock:
            self._stopped = True
        self._drop()


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
