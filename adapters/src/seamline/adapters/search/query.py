"""A query embedded as the index's documents were: the same model, config and attention.

The manifest names the model and its ``with:`` block, and records the run's
``attention`` section, which is negotiated again here for the query's shape (unless
the caller names an attention): an explicit choice that cannot serve on this
machine fails with its reasons, as it would in a run. :class:`QueryEncoder` is an
in-process :class:`~seamline.core.embedder.Embedder` of the index's model, built once,
so a caller with many queries (the recall benchmark, ``open_index(...).search``) pays
for the weights and each compilation once; queries are bucketed as a run buckets its
windows, so that a few compilations serve any number of them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import ParamSpec, TypeVar

import numpy as np

from seamline.adapters.search.index import Index
from seamline.contracts import ConfigError, UserError, untrusted
from seamline.contracts.documents import blank_kind
from seamline.core import (
    MISSING_FIX,
    Embedder,
    PipelineConfigError,
    Registry,
    ResolvedAttention,
    ResolvedEncoder,
    RunSettings,
    Unembeddable,
    dimensions_problem,
    missing_kind,
    parse_located,
    resolve_attention,
    resolve_component,
)

P = ParamSpec("P")
T = TypeVar("T")


def one_problem(resolve: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``resolve(...)``, its problems reported as one line: the first, and how many more.

    A pipeline file lists every problem so that its author fixes them in one pass; a
    manifest is not written by hand, and what it names is reported as a command's error
    is: one line, with its place in the manifest.
    """
    try:
        return resolve(*args, **kwargs)
    except PipelineConfigError as err:
        first, more = err.problems[0], len(err.problems) - 1
        detail = first.detail + (f" (and {more} more problem{'s' * (more > 1)})" if more else "")
        raise ConfigError(detail, first.location) from None


def index_attention(registry: Registry, index: Index, use: str | None) -> ResolvedAttention:
    """The run's ``attention`` section as the manifest records it, resolved for this machine.

    Resolved like a pipeline's (problems are located in the manifest), or ``{use: <use>}``
    when the caller overrides it; it is negotiated again for the query's shapes when
    they are first embedded, as a run would.
    """
    located = index.located
    if use is not None:  # placed at the option, not at a line of the text built here
        located = parse_located(json.dumps({"attention": {"use": use}}), "--attention")
        shown = f"--attention {use}"
        located.values = dict.fromkeys(located.values, shown)
        located.keys = dict.fromkeys(located.keys, shown)
    elif index.manifest.attention is None:  # an index from before manifests recorded it
        located = parse_located(
            json.dumps({"attention": {"use": "auto"}}), str(index.manifest_path)
        )
    return one_problem(resolve_attention, located, registry)


class QueryRefused(UserError, ValueError):
    """A query that cannot be embedded: empty, not valid Unicode, or one the model refuses.

    A :class:`UserError` (the command line exits 2, ``/v1/search`` answers 400), and a
    ``ValueError`` as the embedder's :class:`~seamline.core.embedder.Unembeddable` is.
    Structured as it is, so that a caller of ``find_each`` need not parse the message:
    ``index`` is the refused query's place among the queries (None for the one query of
    ``find`` or ``search``), ``reason`` what is wrong with it. The message names the place
    only among several queries (``queries[1]: the query is empty ...``).
    """

    def __init__(self, reason: str, index: int | None = None, named: bool = True) -> None:
        self.reason = reason
        self.index = index
        self._named = named
        said = f"queries[{index}]: {reason}" if index is not None and named else reason
        super().__init__(said)

    def __reduce__(self) -> tuple[type[QueryRefused], tuple[str, int | None, bool]]:
        """Pickled whole (across processes), not rebuilt from the message alone."""
        return (type(self), (self.reason, self.index, self._named))


def query_problem(query: str) -> str | None:
    """What is wrong with ``query`` as a text to search for, or None: checked before any
    model is built. Empty, or only whitespace and characters the tokeniser drops (the
    loaders' blank rule, ``is_blank``: a run skips such documents, there is nothing to
    embed), or not valid Unicode: a lone surrogate, which is what a command
    line argument that is not UTF-8 decodes to (``$'caf\\xe9'``), cannot be tokenized.
    """
    if (what := blank_kind(query)) is not None:
        return f"the query is {what}: give the text to search for"
    return unicode_problem(query)


def unicode_problem(query: str) -> str | None:
    """Why ``query`` is not valid Unicode (a lone surrogate), or None."""
    return untrusted.unicode_problem(query, "the query")


def not_a_query(query: object) -> str:
    """Why ``query`` is not a str to search for: a missing value (a gap in a Series) is named
    as one, not as its type ("the query must be a str, not float")."""
    missing = missing_kind(query)
    if missing is not None:
        return f"the query is missing ({missing}): {MISSING_FIX}"
    return f"the query must be a str, not {type(query).__name__}"


def check_query(query: str) -> str:
    """``query``, or :class:`QueryRefused` saying what is wrong with it (:func:`query_problem`)."""
    if not isinstance(query, str):
        raise QueryRefused(not_a_query(query))
    problem = query_problem(query)
    if problem is not None:
        raise QueryRefused(problem)
    return query


def checked_queries(queries: object) -> list[str]:
    """``queries`` (``find_each``'s) as a list of valid queries, or a ``TypeError`` saying
    what to give instead: a lone str was searched character by character (five results
    for ``"raise"``); a generator, set or dict failed on ``len()`` or slicing, unexplained.
    A set or a mapping is refused, not listed: their order is nobody's, and the answers
    come back in the order of the queries. So is a table (a DataFrame: its column names
    were the queries) or an array of other than one dimension."""
    if isinstance(queries, str):
        raise TypeError(
            "find_each takes a sequence of queries (a list), not one str: give [query], or "
            "use find(query) (or search(query)) for a single query"
        )
    problem = dimensions_problem(queries, "queries", "a sequence of str (a list)")
    if problem is not None:  # a DataFrame was searched as its column names
        raise TypeError(problem)
    if not isinstance(queries, Iterable) or isinstance(
        queries, Mapping | set | frozenset | bytes | bytearray
    ):
        raise TypeError(
            f"queries is {untrusted.a_type(queries)}: give a sequence of str (a list, or any "
            "iterable in order), whose order is the order of the answers"
        )
    listed = list(queries)
    for index, query in enumerate(listed):
        try:
            check_query(query)
        except QueryRefused as refused:  # among thousands, which one (of one: it)
            raise QueryRefused(refused.reason, index, len(listed) > 1) from None
    return listed


QUERY_RUN = RunSettings(batch_size=1)
"""Queries come one or a few at a time: one packed row per batch, no budget to fill."""


OLDER_SETTINGS = (
    " (the manifest records the model as the seamline that wrote the index named it, an "
    "older or a newer one, and this version does not take that; nothing in a pipeline "
    "changes what a manifest says: search it with the seamline that wrote it, or run the "
    "pipeline that made it again, fixed as said, to write it anew)"
)
"""Said after a model setting of an index's manifest that this version refuses."""


class QueryEncoder:
    """The index's model, built once (an :class:`Embedder`), turning query texts into unit vectors.

    The same model, config and attention negotiation as the run, through the same host
    work, seams, verification and compiled steps: a query is embedded exactly as a
    document of the index was (truncated to the model's first window), except that the
    model is asked for its query side (``for_queries()``, model contract 1.3): a
    retrieval model that wants an instruction before queries gets it.
    """

    def __init__(self, registry: Registry, index: Index, attention: str | None = None) -> None:
        spec = index.manifest.model
        assert spec is not None  # open_index refuses a manifest without one
        self.index = index
        # As a pipeline's model: a registered name that trust allows, its config validated.
        try:
            choice = one_problem(
                resolve_component,
                index.located,
                registry,
                "model",
                spec.use,
                spec.with_,
                ("model",),
            )
        except ConfigError as err:
            # A setting, not the name or its trust: "model.with.x: ..." or, for a field this
            # version does not know (a newer seamline's), "unknown field 'model.with.x'",
            # which read as the user's typo ("did you mean 'sha256'?") with no way out.
            if not err.detail.startswith(("model.with", "unknown field 'model.with")):
                raise
            raise ConfigError(f"{err.detail}{OLDER_SETTINGS}", err.location) from None
        resolved = index_attention(registry, index, attention)
        # Queries in the precision the index's vectors were made in (its manifest says).
        side = ResolvedEncoder(
            choice,
            resolved,
            QUERY_RUN,
            str(index.manifest_path),
            precision=index.manifest.precision,
            queries=True,  # the model's query side: e5's "query: ", bge's instruction
        )
        self.embedder = Embedder.from_resolved(side, registry)
        self._holders = 1
        """The searchers holding this model (:meth:`held`, :meth:`let_go`): closed by the last."""
        self._holding = threading.Lock()

    def held(self) -> None:
        """One more searcher holds the model (a republication's, by the same model)."""
        with self._holding:
            self._holders += 1

    def let_go(self) -> None:
        """A searcher is done with the model: it is closed once every holder is."""
        with self._holding:
            self._holders -= 1
            last = self._holders == 0
        if last:
            self.close()

    @property
    def chosen(self) -> dict[str, str]:
        """Shape signature → the attention that serves it, for the shapes embedded so far."""
        return {d.signature: d.chosen for d in self.embedder.encoder.steps.decisions}

    def __call__(self, query: str) -> np.ndarray:
        """``query``'s first window as a unit vector (float32).

        A query that is not valid Unicode or that the model cannot embed raises
        :class:`QueryRefused` (a user error), not the embedder's ``Unembeddable``. An
        empty one is embedded, as sentence-transformers embeds it: refusing it is for the
        commands and the server (:func:`check_query`), not for the encoder.
        """
        problem = unicode_problem(query) if isinstance(query, str) else None
        if problem is not None:
            raise QueryRefused(problem)
        try:
            vector: np.ndarray = self.embedder.encode(query, normalize=True)
        except Unembeddable as err:
            raise QueryRefused(f"the query cannot be embedded: {err.reason}") from None
        return vector

    def close(self) -> None:
        self.embedder.close()


def embed_query(
    registry: Registry, index: Index, query: str, attention: str | None = None
) -> np.ndarray:
    """Embed ``query`` with the index's model and attention (or ``attention`` if given)."""
    encoder = QueryEncoder(registry, index, attention)
    try:
        return encoder(query)
    finally:
        encoder.close()
