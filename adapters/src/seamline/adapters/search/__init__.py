"""Nearest-neighbour search over an index a pipeline wrote: any first-party sink's output.

Everything comes from the index's manifest, which the sink publishes beside its
output (:mod:`.index`): where the files or the table are, the sink that wrote them, the
model and its config (the query is embedded by the same model that embedded the
documents, :mod:`.query`), and the run's ``attention`` section. Search keeps no list of
sink kinds: the sink the manifest names is found in the registry, as a pipeline's sink
is, and its reader (sink contract 1.4) reads the output back: through the output's own
query engine where it has one (a LanceDB table's vector index), else every vector,
exactly, in chunks (:mod:`.scan`).

The manifest and the files it names are untrusted input: whoever can write the
output's folder can edit them. The manifest is validated by a schema before anything
in it is used; the model it names is resolved as a pipeline's is (a registered name
that trust allows, its config checked); only regular files in the manifest's own
folder are opened; every record is checked as it is read; and a snippet is the text
the output stores, never a file that a record or the manifest names.
"""

from __future__ import annotations

import json
import numbers
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seamline.adapters.search.documents import nearest_documents
from seamline.adapters.search.index import (
    Index,
    manifest_path,
    open_index,
    read_manifest,
    sink_named,
)
from seamline.adapters.search.query import (
    QueryEncoder,
    QueryRefused,
    check_query,
    checked_queries,
    embed_query,
    index_attention,
    unicode_problem,
)
from seamline.adapters.search.scan import QUERIES_A_READ, nearest_each
from seamline.adapters.search.versions import written_by_another
from seamline.contracts import UserError
from seamline.contracts.manifest import embedded_by, load_manifest
from seamline.contracts.readback import FilterRefused, Nearest, OutputReader
from seamline.contracts.stored import StoredRow
from seamline.contracts.untrusted import visible
from seamline.core import Registry, clipped, raise_kept_stop, stops_kept

__all__ = [
    "MAX_K",
    "FilterRefused",
    "Found",
    "Hit",
    "Index",
    "IndexClosed",
    "ModelChanged",
    "QueryEncoder",
    "QueryRefused",
    "Searcher",
    "check_k",
    "check_query",
    "embed_query",
    "find",
    "index_attention",
    "manifest_path",
    "open_index",
    "read_manifest",
    "search",
    "sink_named",
    "unicode_problem",
]


@dataclass(frozen=True, slots=True)
class Hit:
    score: float
    doc_id: str
    window: int
    span: tuple[int, int]
    metadata: dict[str, Any]
    text: str | None = None
    """The window's text, where the sink stored it (every first-party sink, contract 1.2)."""

    def snippet(self, width: int = 160) -> str:
        """The matched text as the output stores it ("" where it stores none), on one line,
        its control characters shown (:func:`~seamline.contracts.untrusted.visible`).

        Never read back from a file: a record's metadata ``path``, and any folder a
        manifest records, are data that whoever can write the output controls.
        """
        given: object = width  # a caller's, whatever the hint says
        if isinstance(given, bool) or not isinstance(given, numbers.Integral) or int(given) < 1:
            raise TypeError(f"width must be a whole number of characters, not {width!r}")
        width = int(given)
        piece = visible(" ".join((self.text or "").split()))
        return piece if len(piece) <= width else piece[: width - 1] + "…"

    def __repr__(self) -> str:
        """Bounded: the text's first 60 characters and the metadata's keys, not all of them."""
        # Whitespace (a newline) made one space first, as snippet() does: visible() shows
        # control characters as the replacement mark, and a newline is not damage.
        text = None if self.text is None else clipped(visible(" ".join(self.text.split())), 60)
        keys = clipped(", ".join(map(str, self.metadata)), 60)
        return (
            f"Hit(score={self.score:.4f}, doc_id={clipped(visible(self.doc_id), 60)!r}, "
            f"window={self.window}, span={self.span}, text={text!r}, metadata keys: {keys})"
        )


class ModelChanged(UserError):
    """The output was republished by a run with another model or precision since an index
    was opened (during one of its searches or between two): its rows may be the new
    run's, and the query was embedded by the old model, so the scores would mean nothing.
    Open the index again."""


class IndexClosed(RuntimeError):
    """A search (``find``, ``find_each``, ``search``, the query model) of an index that was
    closed: ``close()``, or the end of its ``with`` block. The model was released then;
    building it again unasked, as a closed index once did, held a model nobody would close.
    A ``RuntimeError``, as a closed ``Embedder``'s calls raise: a mistake in the program,
    not in the user's input."""


MAX_K = 10_000
"""The most results one search returns."""


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    how: str
    """How they were found: an exact scan of how many rows, or which vector index."""
    plan: str = ""
    """The store's plan of the query, where it has one (LanceDB)."""

    def __repr__(self) -> str:
        """Bounded: how many hits and the best one, not every hit's text and metadata."""
        best = self.hits[0] if self.hits else None
        top = f", best {best.score:.4f} {clipped(visible(best.doc_id), 40)!r}" if best else ""
        return f"Found({len(self.hits)} hits{top}, how={clipped(self.how, 100)!r})"


class Searcher:
    """An index opened for searching, its query model built once and kept warm.

    The manifest is read and checked when it is opened; the model (an in-process
    :class:`~seamline.core.embedder.Embedder` of the run's model and attention) is
    built on the first search and serves every later one. Threads may share one
    searcher: the model is built once, by whichever search comes first. Once closed it
    stays closed: every later search raises :class:`IndexClosed` (a closed file, or a
    closed ``Embedder``, refuses use alike), so whoever shares it closes it only when
    every search is done (``seamline serve`` counts its searches: :mod:`..serve.index`).
    """

    def __init__(self, registry: Registry, index: Path, attention: str | None = None) -> None:
        self.path = index
        self.registry = registry
        self.attention = attention
        self.index = open_index(index)
        self.readers = self.index.readers(registry)
        """The readers of the output's parts, by the sink the manifest names."""
        self.embedded_by = embedded_by(self.index.manifest)
        """The model and precision the query model is built as (the manifest's when opened)."""
        self.version_warning = written_by_another(index, self.index)
        """Which versions of what computes vectors differ between the seamline that wrote the
        index and this one, and how to mend it; None when they are the same (or unrecorded).
        The command line and the server say it once, on stderr, when they open the index."""
        self._encoder: QueryEncoder | None = None
        self._building = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (then every search raises :class:`IndexClosed`)."""
        return self._closed

    @property
    def encoder(self) -> QueryEncoder:
        """The query model, built on first use under a lock: threads that searched a fresh
        searcher at once each built a model of their own, and all but one were never
        closed. A closed searcher's is gone: :class:`IndexClosed`."""
        with self._building:
            if self._closed:
                raise self._closed_error()
            if self._encoder is None:
                self._encoder = QueryEncoder(self.registry, self.index, self.attention)
            return self._encoder

    def share_encoder(self, other: Searcher) -> bool:
        """Hold ``other``'s query model, built already, instead of building one, where it
        embeds a query as this index's own would: the same model (its settings, weights
        digest included), precision and attention section in both manifests, and the same
        attention asked. Whether it did; the model is closed when both searchers are.

        ``seamline serve`` opens its index anew at each republication, and building a
        model (weights loaded, attention verified, compiled) made the first search after
        a republication by the same model take seconds, the searches behind it waiting.
        """
        if self.attention != other.attention or _made_by(self.index) != _made_by(other.index):
            return False
        with other._building:
            encoder = other._encoder
            if other._closed or encoder is None:
                return False
            encoder.held()  # before other can close: held by both now
        with self._building:
            if self._closed or self._encoder is not None:
                taken = None
            else:
                taken, self._encoder = encoder, encoder
        if taken is None:
            encoder.let_go()
        return taken is not None

    def _closed_error(self) -> IndexClosed:
        """What a search of a closed searcher raises (a new one each time: one exception
        raised in several threads would share, and grow, one traceback)."""
        return IndexClosed(
            f"this index ({self.path}) is closed: open it again (open_index) to search it "
            "after close(), or search it inside its `with open_index(...) as index:` block"
        )

    def find(
        self,
        query: str,
        k: int = 5,
        *,
        exact: bool = False,
        where: str | None = None,
        per_document: bool = False,
    ) -> Found:
        """The ``k`` records most similar (cosine) to ``query``, best first.

        ``exact`` scans every vector even where an index exists; ``where`` is a SQL
        filter on the rows, for an output whose sink's reader has a query engine (a
        LanceDB table; the file sinks' outputs have none to apply it: a ``UserError``
        says so before any work is done). ``per_document``: the best window of each of
        the ``k`` best documents instead (:mod:`.documents`), for a prompt that should
        cite ``k`` sources, not overlapping windows of a few. A query that is empty,
        only whitespace or not valid Unicode is refused (:class:`QueryRefused`) before
        the model is built. A ``where`` that cannot apply is a :class:`FilterRefused`;
        any other ``UserError`` is the index's (a file gone or damaged since it was
        opened).
        """
        found = self.find_each([query], k, exact=exact, where=where, per_document=per_document)
        return next(found)

    def find_each(
        self,
        queries: Iterable[str],
        k: int = 5,
        *,
        exact: bool = False,
        where: str | None = None,
        per_document: bool = False,
    ) -> Iterator[Found]:
        """:meth:`find` for each of ``queries``, in order, as each is found.

        Every query is checked, here, before any is embedded: ``queries`` is a sequence
        or another ordered iterable of str (a generator is read at once); a lone str, a
        set or a mapping is a ``TypeError``. An output without a query engine is read
        once for each :data:`~.scan.QUERIES_A_READ` queries, not once for each: the
        answers are those of :meth:`find`, query by query. A closed searcher refuses at
        once (:class:`IndexClosed`), and the answers not yet taken when it is closed too.
        """
        if self._closed:
            raise self._closed_error()
        texts = checked_queries(queries)
        k = check_k(k)
        if where is not None and not isinstance(where, str):
            raise TypeError(
                f"where must be a SQL filter (a str) or None, not {type(where).__name__}"
            )
        if where is not None and not where.strip():
            # "" was read as no filter: `--where "$FILTER"` with FILTER unset got every row.
            raise FilterRefused(
                f"the where filter is empty ({where!r}): give a SQL filter on the rows, or "
                "no filter at all to search every row"
            )
        if not isinstance(per_document, bool | np.bool_):  # "no" would be true
            raise TypeError(f"per_document must be True or False, not {per_document!r}")
        readers = self.readers
        if where and not (len(readers) == 1 and readers[0].filters):
            raise FilterRefused(_no_filter(self.registry, self.path, self.index.sink))
        return self._each(readers, texts, k, _Ask(exact, where, bool(per_document)))

    def _each(
        self, readers: list[OutputReader], queries: list[str], k: int, ask: _Ask
    ) -> Iterator[Found]:
        """The answers of :meth:`find_each`, its arguments checked, a read at a time."""
        for start in range(0, len(queries), QUERIES_A_READ):
            # A Ctrl-C Python dropped (in JAX's GC callback) stops the read, not ignored; the
            # guard is this read's only, never held across a yield to the caller.
            with stops_kept():
                vectors = self._embedded(queries[start : start + QUERIES_A_READ])
                found = list(self._found(readers, vectors, k, ask))
                self._check_embedded_by()
                raise_kept_stop()
            for answer in found:
                if self._closed:  # closed while its answers were being taken
                    raise self._closed_error()
                yield answer

    def _embedded(self, queries: list[str]) -> list[np.ndarray]:
        """``queries``' vectors; a close by another thread meanwhile is :class:`IndexClosed`,
        not the released model's own "this Embedder is closed"."""
        encoder = self.encoder
        try:
            return [encoder(query) for query in queries]
        except RuntimeError:
            if self._closed:
                raise self._closed_error() from None
            raise

    def _found(
        self, readers: list[OutputReader], vectors: list[np.ndarray], k: int, ask: _Ask
    ) -> Iterator[Found]:
        """The nearest rows to each of ``vectors``: by the output's engine, where it has one
        (asked query by query), else by one scan of every vector for them all."""
        one = readers[0] if len(readers) == 1 else None
        first = ask.engine(one, vectors[0], k) if one else None
        if one is not None and first is not None:  # an engine answers every query, or none
            later = [ask.engine(one, vector, k) for vector in vectors[1:]]
            for engine in (first, *later):
                assert engine is not None
                if engine.made_by is not None and engine.made_by != self.embedded_by:
                    raise self._model_changed()  # rows of the version another model made
                yield Found([_hit(s, row) for s, row in engine.rows], engine.how, engine.plan)
            return
        for rows, scanned in nearest_each(readers, vectors, k, ask.per_document):
            how = f"exact: every one of {scanned:,} rows"
            if ask.per_document:
                how += "; the best window of each document"
            yield Found([_hit(s, row) for s, row in rows], how)

    def _check_embedded_by(self) -> None:
        """Refuse what was just read if the output has since been republished by another
        model or precision than the query model's (:class:`ModelChanged`).

        A file sink renames its manifest into place before its rows (its primary file
        last), so rows of a newer publish are never read without this check then seeing
        its manifest. A LanceDB table commits its rows first: its reader reads the table
        at the version the manifest records, and says which manifest's model made the rows
        it found (``Nearest.made_by``, compared in :meth:`_found`).
        """
        try:
            now = embedded_by(load_manifest(self.index.manifest_path))
        except FileNotFoundError:
            raise UserError(
                f"{self.index.manifest_path} was removed while it was searched"
            ) from None
        if now != self.embedded_by:
            raise self._model_changed()

    def _model_changed(self) -> ModelChanged:
        # "since it was opened", not "while it was searched": the republish is found at the
        # next search, whether it landed during one or between two (an open index kept).
        return ModelChanged(
            f"{self.path} was republished since it was opened, by a run with another "
            "model or precision than the one its queries are embedded with: open it again "
            "(`seamline search` again; `open_index` again) to search it with the new one"
        )

    def search(
        self, query: str, k: int = 10, where: str | None = None, *, per_document: bool = False
    ) -> list[Hit]:
        """The ``k`` records most similar to ``query``, best first (``where``: LanceDB only;
        ``per_document``: the best window of each of ``k`` documents, as :meth:`find`)."""
        return self.find(query, k, where=where, per_document=per_document).hits

    def close(self) -> None:
        """Release the query model, if one was built; every later search raises
        :class:`IndexClosed`. Closing again does nothing."""
        with self._building:
            self._closed = True
            encoder, self._encoder = self._encoder, None
        if encoder is not None:
            encoder.let_go()  # closed, unless a searcher it was shared with still holds it

    def __repr__(self) -> str:
        """Short, for a notebook's ``Out[]``: the output, its model, whether it is open."""
        manifest = self.index.manifest
        model = "?" if manifest.model is None else clipped(manifest.model.use, 40)
        state = "closed" if self._closed else "open, model built" if self._encoder else "open"
        return (
            f"<Searcher {clipped(str(self.path), 100)} ({self.index.sink}): "
            f"{model} {manifest.precision}, {state}>"
        )

    def __enter__(self) -> Searcher:
        if self._closed:  # `with index:` again after its block ended
            raise self._closed_error()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _made_by(index: Index) -> tuple[str, str]:
    """What a query model of ``index`` is built from: the model and precision
    (:func:`embedded_by`) and the run's attention section, as its manifest says."""
    return embedded_by(index.manifest), json.dumps(index.manifest.attention, sort_keys=True)


def find(
    registry: Registry,
    index: Path,
    query: str,
    k: int = 5,
    attention: str | None = None,
    *,
    exact: bool = False,
    where: str | None = None,
    per_document: bool = False,
) -> Found:
    """One search of ``index`` (see :meth:`Searcher.find`), the model built for it alone."""
    with Searcher(registry, index, attention) as searcher:
        return searcher.find(query, k, exact=exact, where=where, per_document=per_document)


def check_k(k: object, name: str = "k") -> int:
    """``k`` as an int, or refused if not a whole number from 1 to ``MAX_K`` (a NumPy integer
    is one; a bool is not), named as the caller spelled it: ``k`` from Python, ``-k`` on the
    command line (which checks it first)."""
    flag = isinstance(k, bool | np.bool_)  # a whole number to Python and NumPy, not a count
    whole = int(k) if not flag and isinstance(k, numbers.Integral) else 0
    if not 1 <= whole <= MAX_K:
        raise UserError(f"{name} (how many results) is from 1 to {MAX_K:,}, not {_shown(k)}")
    return whole


def _no_filter(registry: Registry, index: Path, sink: str) -> str:
    """Why a ``where`` filter (``--where``, ``where=``) cannot apply to the output of
    ``sink``, and which sinks' it can."""
    filtering = [
        info.name
        for info in registry.entries("sink")
        if info.usable and getattr(getattr(info.cls, "reader", None), "filters", False)
    ]
    which = ", ".join(filtering) or "none is installed"
    return (
        f"a where filter runs in the query engine of an output's sink ({which}), and {index} "
        f"is the output of a {sink or 'unknown'} sink, which has none; write the pipeline's "
        "output with a sink that has one, or filter this file with a query engine (DuckDB "
        "reads Parquet as it is)"
    )


def _shown(value: object) -> str:
    """``value`` for a message: a number of thousands of digits is shortened."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text):,} characters)"


def search(
    registry: Registry, index: Path, query: str, k: int = 5, attention: str | None = None
) -> list[Hit]:
    """The ``k`` records of ``index`` most similar (cosine) to ``query``, best first."""
    return find(registry, index, query, k, attention).hits


@dataclass(frozen=True, slots=True)
class _Ask:
    """What a search asks beyond its queries and ``k``, checked."""

    exact: bool
    where: str | None
    per_document: bool

    def engine(self, reader: OutputReader, vector: np.ndarray, k: int) -> Nearest | None:
        """The nearest rows by ``reader``'s engine (None: it has none): ``k`` windows, or
        the best window of each of ``k`` documents (:func:`.documents.nearest_documents`)."""
        exact, where = self.exact, self.where
        if not self.per_document:
            return reader.nearest(vector, k, exact=exact, where=where)
        return nearest_documents(
            lambda windows: reader.nearest(vector, windows, exact=exact, where=where), k
        )


def _hit(score: float, row: StoredRow) -> Hit:
    return Hit(score, row.id, row.window, row.span, dict(row.metadata), row.text)
