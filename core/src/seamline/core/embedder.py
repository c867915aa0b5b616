"""Texts in, vectors out, in this process: ``Embedder(...).encode(texts)``.

An :class:`Embedder` is a pipeline's model side (:class:`~seamline.core.encoder.
Encoder`) kept warm: the model loaded once, the attention negotiated, verified and
compiled per batch shape, exactly as ``seamline run`` does it, through the same
seams (spans, monitors) and trust rules. ``encode`` runs texts through the same
host work as a run — ``prepare``, packing into the pipeline's token-budget batches,
``collate`` — so a text embeds to the same vector either way.

Several threads may call :meth:`Embedder.encode` at once. Their texts are batched
together: a caller queues its texts and takes the engine when it is free; whoever
holds it embeds the texts queued so far, its own and the others', a few batches'
worth a pass (a large call's texts a part at a time, oldest caller first:
:data:`PASS_BATCHES`), and hands each caller its rows. No background thread is kept,
and a caller alone pays nothing.
A server instead submits each request (:meth:`Embedder.submit`, which returns at
once with a :class:`Pending`), keeps one thread leading passes
(:meth:`Embedder.drain`), may let a leader wait ``max_wait`` seconds for more
requests before it takes the queue, and cancels a request whose client went away
(:mod:`seamline.core.embed_queue`).

Tracing: each request is a ``seamline.embed.request`` span (a child of the caller's
current span); each pass a leader makes is a ``seamline.embed.pass`` span, the root
of a trace of its own, whose children are the ``seamline.model.prepare`` spans and
one ``seamline.embed.batch`` span per batch (with the ``seamline.model.apply`` span,
the attention and the compiled shape, below it). A batch span links to the request
spans it holds rows of, and each request span links to the batch spans that served
it: a slow request leads to its batch and its kernel. Each batch is also a
``BatchDone`` event to the embedder's monitors, as a run's batches are.

Texts longer than the model's window (``long_text``):

* ``"truncate"`` (the default): the first window only, the text cut at the model's
  ``max_length`` tokens, as sentence-transformers' ``encode`` does (same vector);
* ``"mean"``: every window, averaged; when the model's vectors have unit length (a
  model that normalises), the mean is scaled back to unit length;
* ``"windows"``: every window's vector, one ``[windows, dim]`` array per text.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Literal,
    NoReturn,
    ParamSpec,
    TypeVar,
    cast,
    overload,
)

import numpy as np
import numpy.typing as npt
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from seamline.contracts import (
    BatchDone,
    Document,
    Example,
    Model,
    Monitor,
    MonitorLike,
    UserError,
)
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import a_type
from seamline.core.attention.candidates import build_candidates
from seamline.core.attention.steps import Launched
from seamline.core.config import (
    ResolvedEncoder,
    TelemetrySettings,
    build_model,
    load_pipeline,
    load_trusted,
    prepare_data,
    resolve_encoder,
    trusted_registry,
)
from seamline.core.config.redact import span_hidden
from seamline.core.embed_queue import Cancelled, EmbedQueue, LongText, Part, Request
from seamline.core.encoder import Encoder
from seamline.core.forking import refuse_after_fork
from seamline.core.given_texts import MISSING_FIX, dimensions_problem, missing_kind
from seamline.core.host import Collated, SetAside, documents_as_loaded
from seamline.core.in_flight import InFlight
from seamline.core.monitor_arguments import check_monitors
from seamline.core.monitor_hub import MonitorHub
from seamline.core.precision.negotiate import encoder_side
from seamline.core.registry import Registry
from seamline.core.seams import Seam, clipped
from seamline.core.stops import is_interrupt, raise_kept_stop, stops_kept
from seamline.core.telemetry import (
    BATCH_LENGTH,
    BATCH_SIZE,
    span_event,
    tracer,
    warn_unread_telemetry,
)

__all__ = [
    "LONG_TEXT",
    "Cancelled",
    "Embedder",
    "LongText",
    "Pending",
    "Unembeddable",
    "Vectors",
]

LONG_TEXT: tuple[LongText, ...] = ("truncate", "mean", "windows")

BatchPolicy = Literal["fitted", "longest"]
"""How an embedder shapes its batches (:meth:`Embedder.from_resolved`)."""
BATCH_POLICIES: tuple[BatchPolicy, ...] = ("fitted", "longest")

Vectors = npt.NDArray[np.float32]
"""What ``encode`` returns: float32 vectors, one row per text (``[dim]`` for one str)."""

Texts = str | Sequence[str] | Iterator[str]
"""What ``encode`` and ``submit`` take: one str, a sequence of them, or an iterator (a
generator, read at once). Not ``Iterable[str]``: a set or a dict's keys would type-check,
and a set is refused at run time (its order is nobody's, and the rows come back in the
order of the texts)."""

log = get_logger("seamline.core")

if TYPE_CHECKING:  # the default is for type checkers only (PEP 696); a plain one at runtime
    from typing_extensions import TypeVar as _DefaultingTypeVar

    _V = _DefaultingTypeVar("_V", default=Vectors)
else:
    _V = TypeVar("_V")
"""What a :class:`Pending`'s ``result()`` gives: ``Vectors``, or ``list[Vectors]`` for
``long_text="windows"``; a bare ``Pending`` annotation means ``Pending[Vectors]``."""


_P = ParamSpec("_P")
_R = TypeVar("_R")

_SENTENCE_TRANSFORMERS = {
    "batch_size": "batch_tokens=N, a budget of tokens per batch, not a count of texts",
    "normalize_embeddings": "normalize=True",
    "convert_to_numpy": "none: the result is always a NumPy float32 array",
    "convert_to_tensor": "none: the result is always a NumPy float32 array",
    "output_value": "none: the result is always a NumPy float32 array",
    "show_progress_bar": "none in the library (seamline run shows one for a corpus)",
    "prompt": (
        "a prompt is the model's setting, model.with.prefix.document (before every text) "
        "or model.with.prefix.query (before the texts of encode(..., queries=True)), "
        "docs/models.md"
    ),
    "prompt_name": (
        "queries=True for the checkpoint's own 'query' prompt, where it has one; any "
        "other prompt as model.with.prefix.query (with queries=True) or "
        "model.with.prefix.document (every text), docs/models.md"
    ),
    "device": "none: the device is JAX's (JAX_PLATFORMS)",
    "precision": (
        "none: sentence-transformers' precision= quantizes the output vectors (int8, "
        "uint8, binary, ubinary), where the pipeline's precision: section is the precision "
        "the model computes in; encode returns float32 vectors: quantize them, "
        "np.packbits(vectors > 0, axis=-1) for ubinary, or sentence-transformers' "
        "quantize_embeddings(vectors, precision='int8') on the array"
    ),
}
"""``SentenceTransformer.encode``'s keywords that ``encode`` has no place for, with where
each one's job is done (docs/python.md's table): Python's own "unexpected keyword
argument" left a migrating user to find the replacement."""


def _hinted_for_sentence_transformers(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """``method``, whose refusal of one of sentence-transformers' keywords names seamline's
    equivalent: the same ``TypeError`` words as Python's, with the hint after them. A
    wrapper, not a ``**kwargs`` of the method's own, so that its signature (``help()``,
    an editor's) stays the keywords it takes."""
    accepted = frozenset(inspect.signature(method).parameters)

    @functools.wraps(method)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        for name in kwargs:
            instead = _SENTENCE_TRANSFORMERS.get(name)
            if instead is not None and name not in accepted:
                raise TypeError(
                    f"Embedder.{method.__name__}() got an unexpected keyword argument "
                    f"'{name}' (sentence-transformers'; in seamline: {instead}; see "
                    "docs/python.md)"
                )
        return method(*args, **kwargs)

    return checked


class Embedder:
    """A pipeline's model and attention, built once, embedding texts on demand."""

    def __init__(
        self,
        model: Mapping[str, Any],
        attention: str | Sequence[str] | Mapping[str, Any] = "auto",
        run: Mapping[str, Any] | None = None,
        *,
        trust: Mapping[str, Any] | None = None,
        registry: Registry | None = None,
        environ: Mapping[str, str] | None = None,
        monitors: Sequence[Monitor[Any] | MonitorLike] = (),
        long_text: LongText = "truncate",
        max_wait: float = 0.0,
        queries: bool = False,
    ) -> None:
        """An embedder of ``model`` (``{"use": NAME, "with": {...}}``, as in a pipeline).

        ``attention`` is a name, a preference list, or a whole ``attention`` section;
        ``run`` and ``trust`` are those sections of a pipeline. They are validated as a
        pipeline file's are: a problem is a located ``ConfigError`` whose place is the
        key path (``Embedder(...)['model']['with']['max_lenght']``). Without a
        ``registry``, components are discovered under the trust given and the user's.
        ``max_wait``: seconds a pass waits for more callers before it starts (see
        :mod:`seamline.core.embed_queue`; 0, the default, never waits). ``queries``:
        embed texts as search queries by default, with the model's ``for_queries()`` (the
        query prefix of a model such as e5); ``encode(..., queries=...)`` chooses per call.
        """
        _check_settings(queries, max_wait, monitors)
        data = _keyword_sections(model, attention, run, trust)
        located = prepare_data(data, "Embedder(...)", (), environ)
        if registry is None:
            registry = trusted_registry(located, environ)
        resolved = replace(resolve_encoder(located, registry, environ=environ), queries=queries)
        self._start(resolved, registry, monitors, long_text, max_wait)

    @classmethod
    def from_resolved(
        cls,
        resolved: ResolvedEncoder,
        registry: Registry,
        *,
        monitors: Sequence[Monitor[Any] | MonitorLike] = (),
        long_text: LongText = "truncate",
        max_wait: float = 0.0,
        shapes: BatchPolicy = "fitted",
    ) -> Embedder:
        """An embedder of a model side already resolved (a pipeline's, a manifest's).

        ``shapes``: ``"fitted"`` (the default) gives a partly filled batch the fewest rows
        that hold it, since requests are mostly a few texts; ``"longest"`` computes every
        batch in the run's longest shape with full rows (:meth:`BatchShapes.longest_only`),
        which is how the precision gate embeds its sample, so that its compilations are
        the ones the run goes on to use.
        """
        check_monitors(monitors, "monitors")
        refuse_after_fork("an Embedder")
        embedder = cls.__new__(cls)
        embedder._start(resolved, registry, monitors, long_text, max_wait, shapes)
        return embedder

    def _start(
        self,
        resolved: ResolvedEncoder,
        registry: Registry,
        monitors: Sequence[MonitorLike],
        long_text: LongText,
        max_wait: float,
        shapes: BatchPolicy = "fitted",
    ) -> None:
        _check_long_text(long_text)
        if shapes not in BATCH_POLICIES:
            raise ValueError(f"shapes must be one of {', '.join(BATCH_POLICIES)}, not {shapes!r}")
        self.long_text: LongText = long_text
        self._shape_policy: BatchPolicy = shapes
        self.source = resolved.source
        self.queries = resolved.queries
        """Whether texts are embedded as search queries when a call does not say."""
        self.precision: str = resolved.precision
        """The precision the model computes in (a pipeline's negotiated one, float32 else)."""
        self.monitors = MonitorHub(monitors)
        created = _model_of(resolved, registry)
        self._sides = ModelSides(created)
        hidden = span_hidden(resolved.model.filled, registry.trust.network_variables)
        seam = Seam(created, registry.info_of(created), self.monitors, hidden)
        candidates = build_candidates(resolved.attention, registry)
        self.encoder = Encoder(created, seam, candidates, resolved.run, _reporter(self.monitors))
        self.queue = EmbedQueue(functools.partial(_run_pass, self), max_wait)
        self._batches = 0
        self._texts_done = 0
        self._dimension: int | None = None
        self._abandoned = threading.Event()

    @classmethod
    def from_pipeline(
        cls,
        path: str | os.PathLike[str],
        overrides: Sequence[str] = (),
        *,
        registry: Registry | None = None,
        environ: Mapping[str, str] | None = None,
        monitors: Sequence[Monitor[Any] | MonitorLike] = (),
        long_text: LongText = "truncate",
        max_wait: float = 0.0,
        queries: bool = False,
    ) -> Embedder:
        """The model, attention, ``precision`` and ``run`` settings of the file at ``path``.

        The file is validated whole, as ``seamline run`` validates it (a located
        ``ConfigError`` if it is not valid); its sink is not used, and its loader only when
        the pipeline asks for a precision below float32 that no run of it has checked yet
        (the gate embeds the loader's first documents, as a run would). Without a
        ``registry``, components are discovered under the pipeline's and the user's trust.
        ``queries``: embed texts as search queries (see :class:`Embedder`).
        """
        _check_settings(queries, max_wait, monitors)
        if registry is None:
            resolved, registry = load_trusted(path, overrides, environ)
        else:
            resolved = load_pipeline(path, registry, overrides, environ)
        side = replace(encoder_side(resolved, registry, str(path)), queries=queries)
        spec = resolved.spec
        warn_unread_telemetry(
            spec.pipeline, spec.telemetry, TelemetrySettings(), "Embedder.from_pipeline()"
        )
        return cls.from_resolved(
            side, registry, monitors=monitors, long_text=long_text, max_wait=max_wait
        )

    # -- embedding ---------------------------------------------------------------------------

    @overload
    def encode(
        self,
        texts: Texts,
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: Literal["windows"],
        queries: bool | None = None,
    ) -> list[Vectors]: ...
    @overload
    def encode(
        self,
        texts: Texts,
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: Literal["truncate", "mean"] | None = None,
        queries: bool | None = None,
    ) -> Vectors: ...
    @_hinted_for_sentence_transformers
    def encode(
        self,
        texts: Texts,
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: LongText | None = None,
        queries: bool | None = None,
    ) -> Vectors | list[Vectors]:
        """One float32 row per text, in input order (``[len(texts), dim]``).

        Typed by overloads: an array (``[dim]`` for a str, ``[len(texts), dim]`` else),
        or with ``long_text="windows"`` a list of arrays. An embedder made with
        ``long_text="windows"`` returns lists from every call: pass ``long_text="windows"``
        to each call too, for its type to say so (without it, it says an array).

        A single string gives one vector (``[dim]``). ``batch_tokens`` overrides the
        pipeline's token budget per batch; ``normalize=True`` scales every vector to
        unit length (``None``, the default: as the model makes them); ``long_text``
        overrides the embedder's policy for texts longer than the model's window (see
        the module's documentation). With ``long_text="windows"`` the result is a list
        of ``[windows, dim]`` arrays, one per text. ``queries=True`` embeds the texts as
        search queries (the model's query prefix, if it has one), ``False`` as documents;
        ``None``, the default, as the embedder was made to (``Embedder(queries=...)``).
        """
        self.queue.check_open()
        policy, _ = _checked_options(self.long_text, long_text, batch_tokens, normalize, queries)
        # Checked here, not only by submit: a refusal's traceback then shows one frame of
        # the keyword hint's wrapper (submit has its own), not two.
        batch = texts if isinstance(texts, str) else _listed_texts(texts)
        if not isinstance(batch, str) and not batch:  # "" is a text (one vector), [] is none
            empty = np.zeros((0, self.dimension), np.float32)
            return [] if policy == "windows" else empty
        options: dict[str, Any] = {"long_text": long_text, "queries": queries}  # either overload
        pending = self.submit(batch, batch_tokens=batch_tokens, normalize=normalize, **options)
        vectors: Vectors | list[Vectors] = pending.result()
        return vectors

    @overload
    def submit(
        self,
        texts: Texts,
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: Literal["windows"],
        queries: bool | None = None,
    ) -> Pending[list[Vectors]]: ...
    @overload
    def submit(
        self,
        texts: Texts,
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: Literal["truncate", "mean"] | None = None,
        queries: bool | None = None,
    ) -> Pending[Vectors]: ...
    @_hinted_for_sentence_transformers
    def submit(
        self,
        texts: Texts,
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: LongText | None = None,
        queries: bool | None = None,
    ) -> Pending[Any]:
        """Queue ``texts`` and return at once; :meth:`Pending.result` gives what
        :meth:`encode` would have (the arguments are the same, and checked now), typed
        alike by overloads: ``Pending[Vectors]``, ``Pending[list[Vectors]]`` for windows.

        Someone must lead a pass for the texts to be embedded: ``result()`` does when
        the engine is free, or a thread that calls :meth:`drain`. At least one text.
        """
        policy, batch_tokens = _checked_options(
            self.long_text, long_text, batch_tokens, normalize, queries
        )
        batch = _checked_texts(texts)
        self.queue.check_open()
        as_queries = self.queries if queries is None else bool(queries)
        span = tracer().start_span(
            "seamline.embed.request", attributes={_TEXTS: len(batch), _QUERIES: as_queries}
        )
        shares = _pass_shares(self.encoder, batch, policy, batch_tokens)
        request = Request(batch, policy, batch_tokens, span, queries=as_queries, shares=shares)
        self.queue.put(request)
        return Pending[Any](self.queue, request, isinstance(texts, str), bool(normalize))

    def drain(self, timeout: float) -> int:
        """Embed what is queued, waiting up to ``timeout`` seconds for a first request.

        For a thread that leads every pass (a server's); returns the texts embedded.
        """
        return self.queue.drain(timeout)

    @property
    def dimension(self) -> int:
        """The length of the vectors this embedder makes (one text is embedded to learn it)."""
        self.queue.check_open()
        if self._dimension is None:
            self._dimension = int(np.shape(self.encode([""]))[-1])
        return self._dimension

    # -- the end -----------------------------------------------------------------------------

    def abandon(self) -> None:
        """Stop the pass under way at its next batch, and later ones at their first (their
        requests end with :data:`Cancelled`): :meth:`close` then waits one batch at most,
        not a whole pass of many long texts (a stopping server's)."""
        self._abandoned.set()

    def close(self) -> None:
        """Release the model, its weights and compiled steps, and the attention (once).

        A pass under way ends first; texts submitted and not yet taken by a pass are not
        embedded: their ``result()`` raises the "this Embedder is closed" RuntimeError, as
        every later call of the embedder does (a second ``close`` does nothing)."""
        with self.queue.engine():
            if self.queue.closed:
                return
            self.queue.close()
            self.monitors.close()
            self.encoder.close(release=True)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (or the ``with`` block ended): every call then
        raises the "this Embedder is closed" ``RuntimeError``; a long-lived process checks
        this rather than catching it."""
        return self.queue.closed

    def __enter__(self) -> Embedder:
        self.queue.check_open()  # a closed one refuses now, not at the first encode inside
        return self

    def __reduce__(self) -> NoReturn:
        """Refused with the fix: pickle's own error named a ``_thread.lock``, not why."""
        raise TypeError(f"an Embedder cannot be pickled: {_BUILD_ONE_PER_PROCESS}")

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        """Short, for a notebook's ``Out[]``: the model, precision, state (not ``at 0x…``)."""
        return _embedder_repr(self)


def _embedder_repr(embedder: Embedder) -> str:
    model = clipped(str(getattr(embedder._sides(False), "name", "?")), 60)
    _, texts = embedder.queue.waiting()
    queued = f"open, {texts} text{'' if texts == 1 else 's'} queued" if texts else "open"
    state = "closed" if embedder.closed else queued
    return f"<Embedder {model} {embedder.precision}, long_text={embedder.long_text}, {state}>"


def _reporter(monitors: MonitorHub) -> Callable[[Any], None]:
    """What the model's compiled steps report to: the pass's span and ``monitors``.

    Not a method of the Embedder: its encoder held it (a bound method, so the embedder
    itself), and a closed, dropped Embedder stayed in that reference cycle until the
    cyclic collector ran."""

    def report(event: Any) -> None:
        span_event(event)
        monitors.emit(event)

    return report


def _run_pass(embedder: Embedder, parts: list[Part]) -> None:
    """Embed the texts of ``parts`` together for ``embedder`` (one pass per window policy
    and budget): its queue's ``run``, outside the class, which is long enough without it.
    A request is finished once its last part is embedded, or at once if a text of it
    cannot be (its later parts are then not taken).

    The pass is a span of its own trace (it serves many callers), linked to theirs.
    """
    links = [trace.Link(p.request.span.get_span_context()) for p in parts]
    attributes = {_REQUESTS: len(parts), _TEXTS: sum(len(p.indexes) for p in parts)}
    with tracer().start_as_current_span(
        "seamline.embed.pass",
        context=otel_context.Context(),
        links=links,
        attributes=attributes,
    ):
        for (first_only, batch_tokens, queries), group in _passes(parts).items():
            try:
                refused = _embed_pass(embedder, group, first_only, batch_tokens, queries)
            except BaseException as err:  # a Rust panic too: it fails these requests
                if is_interrupt(err):  # the leader's alone (EmbedQueue)
                    raise
                for part in group:
                    part.request.finish(err)
            else:
                for part in group:
                    error = refused.get(id(part.request))
                    if error is not None or part.last:
                        part.request.finish(error)


def _embed_pass(
    embedder: Embedder,
    parts: list[Part],
    first_only: bool,
    batch_tokens: int | None,
    queries: bool,
) -> dict[int, Unembeddable]:
    """Embed the parts' texts in shared batches for ``embedder`` (:func:`_run_pass`); the
    requests refused, by ``id``. Outside the class, which is long enough without it.

    A text the model cannot embed fails its own request only, never the others
    batched with it. The partly filled batches of the parts that are not their
    requests' last are held back, their texts put back for the next pass
    (:func:`_put_back`): a large request alone is batched as one pass would batch it.
    """
    refused: dict[int, Unembeddable] = {}
    owners, documents = _pass_documents(parts)
    embedder._texts_done += len(owners)
    encoder = embedder.encoder
    shapes = encoder.shapes_for(batch_tokens)
    if embedder._shape_policy == "longest":
        shapes = shapes.longest_only()
    else:
        shapes = replace(shapes, fit_partial=True)
    host = encoder.host_work(
        shapes=shapes, max_windows=1 if first_only else None, side=embedder._sides(queries)
    )
    batches = _PassBatches(
        encoder, embedder.monitors, owners, embedder._batches, embedder._texts_done
    )
    ending = {id(part.request) for part in parts if part.last}

    def hold(examples: Sequence[Example]) -> bool:
        return all(id(owners[int(e.doc_id)][0]) not in ending for e in examples)

    try:
        for item in host.batches(documents_as_loaded(documents), hold):
            raise_kept_stop()  # a Ctrl-C Python dropped (core.stops) stops the pass here
            if embedder._abandoned.is_set():
                raise Cancelled("the embedder stopped before embedding this (abandon())")
            if isinstance(item, SetAside):
                request, index = owners[int(item.error.id)]
                refused.setdefault(id(request), Unembeddable(index, item.error.reason))
            if isinstance(item, Collated):
                batches.add(item)
        batches.finish()
        embedder._texts_done -= _put_back(host.held, owners)
    finally:
        batches.abandon()
        embedder._batches = batches.index
    return refused


def _put_back(held: Sequence[Example], owners: Sequence[tuple[Request, int]]) -> int:
    """Give each request the texts of its examples that a pass held back
    (``Request.held``, in text order: the next pass takes them first, and its batches
    of each length then hold the texts one pass would have put in them); how many.

    Every window of such a text is embedded again by that pass, those already embedded
    too (a text's rows are its windows', from one pass)."""
    texts: dict[int, tuple[Request, set[int]]] = {}
    for example in held:
        request, index = owners[int(example.doc_id)]
        texts.setdefault(id(request), (request, set()))[1].add(index)
    for request, indexes in texts.values():
        request.held = tuple(sorted(indexes))
    return sum(len(indexes) for _, indexes in texts.values())


@dataclass(frozen=True, slots=True)
class _EmbedBatch:
    """A batch of a pass launched on the model, its outputs not yet handed to requests."""

    launched: Launched
    span: trace.Span
    """Its ``seamline.embed.batch`` span, ended when the outputs are in."""
    index: int
    started: float


class _PassBatches:
    """One pass's batches through the model, each in a span linked both ways to the requests
    it holds rows of; ``run.in_flight`` of them launched before the oldest one's rows are
    handed over, so the host prepares the next batch while the device computes one."""

    def __init__(
        self,
        encoder: Encoder,
        monitors: MonitorHub,
        owners: Sequence[tuple[Request, int]],
        index: int,
        texts_done: int,
    ) -> None:
        self.encoder = encoder
        self.monitors = monitors
        self.owners = owners
        """The request and text of each document id of the pass."""
        self.index = index
        """The embedder's batches so far (each batch's index in its span and event)."""
        self.texts_done = texts_done
        self.in_flight: InFlight[_EmbedBatch] = InFlight(encoder.run.in_flight, self._finish)

    def add(self, item: Collated) -> None:
        compiles = not self.encoder.steps.compiled(item.batch)
        self.in_flight.launch(functools.partial(self._launch, item), compiles=compiles)

    def finish(self) -> None:
        """Hand over every batch launched so far."""
        self.in_flight.drain()

    def abandon(self) -> None:
        """End the spans of batches a failed pass left launched."""
        for flight in self.in_flight.abandon():
            flight.span.set_status(Status(StatusCode.ERROR, "the pass failed first"))
            flight.span.end()

    def _launch(self, item: Collated) -> _EmbedBatch:
        batch = item.batch
        started = time.perf_counter()
        served: dict[int, tuple[Request, int]] = {}
        for example in batch.examples:
            request, _ = self.owners[int(example.doc_id)]
            tokens = served.get(id(request), (request, 0))[1]
            served[id(request)] = (request, tokens + example.length)
        self.index += 1
        attributes = {
            BATCH_SIZE: batch.batch_size,
            BATCH_LENGTH: batch.length,
            _BATCH_INDEX: self.index,
            _BATCH_TOKENS: batch.tokens,
            _REQUESTS: len(served),
        }
        links = [trace.Link(r.span.get_span_context()) for r, _ in served.values()]
        span = tracer().start_span("seamline.embed.batch", links=links, attributes=attributes)
        try:
            with trace.use_span(span, end_on_exit=False):  # records an escaping error
                launched = self.encoder.launch(batch)
        except BaseException:
            span.end()
            raise
        link = trace.Link(span.get_span_context(), {_BATCH_INDEX: self.index})
        for request, tokens in served.values():
            request.count_batch(tokens, link)
        return _EmbedBatch(launched, span, self.index, started)

    def _finish(self, flight: _EmbedBatch) -> None:
        """Wait for a launched batch and hand each request its rows."""
        batch = flight.launched.batch
        with trace.use_span(flight.span, end_on_exit=True):
            outputs = self.encoder.finish(flight.launched)
        for row, example in zip(batch.example_rows, batch.examples, strict=True):
            request, index = self.owners[int(example.doc_id)]
            request.windows[index][example.index] = outputs[row]
        seconds = self.in_flight.added(flight.started)
        counts = (len(batch.examples), batch.tokens, seconds, self.texts_done)
        self.monitors.emit(BatchDone(flight.index, batch.length, *counts))


class ModelSides:
    """A model's document side, and its query side (``for_queries()``) made on first use."""

    def __init__(self, documents: Model[Any]) -> None:
        self._sides = {False: documents}

    def __call__(self, queries: bool) -> Model[Any]:
        """The side whose ``prepare`` makes the windows of texts embedded as ``queries``."""
        if queries not in self._sides:
            self._sides[queries] = self._sides[False].for_queries()
        return self._sides[queries]


def _pass_documents(
    parts: Sequence[Part],
) -> tuple[list[tuple[Request, int]], list[Document]]:
    """A pass's texts as documents, each id the index of its ``(request, text)`` owner; the
    windows of each part's texts emptied for the pass to fill (each text's rows are kept by
    its index, whichever pass of a request taken in parts embeds it)."""
    owners: list[tuple[Request, int]] = []
    documents = []
    for part in parts:
        request = part.request
        if len(request.windows) != len(request.texts):
            request.windows = [{} for _ in request.texts]
        for index in part.indexes:
            request.windows[index] = {}
            documents.append(Document(str(len(owners)), request.texts[index]))
            owners.append((request, index))
    return owners, documents


PASS_BATCHES = 8
"""How much one pass of the queue takes: texts of about this many of the largest batches'
positions (a request's token budget, or ``batch_size`` rows of the longest window). A
request that arrives while a large one is embedded waits for the pass under way and its
own, not for all of the large one's texts (0.6 s a pass of MiniLM's 512-token batches on
2 CPUs); the large one pays a few milliseconds a pass (measured: the same throughput as
one pass, within noise). Its batches are those of one pass: a part's partly filled
batches are put back for the next pass (:func:`_put_back`), not compiled for each."""

CHARS_PER_TOKEN = 3
"""What a text's tokens are estimated from, before a pass tokenizes it: a character count
over this (English is about 4 characters a token; under-counting only makes a pass
shorter), plus the two special tokens."""


def _pass_shares(
    encoder: Encoder, texts: Sequence[str], policy: LongText, batch_tokens: int | None
) -> list[float]:
    """Each text's estimated share of a pass (:data:`PASS_BATCHES`): its tokens, at most one
    window's when only the first window is kept, over the positions of a pass."""
    shapes = encoder.shapes_for(batch_tokens)
    positions = PASS_BATCHES * max(shapes.rows(length) * length for length in shapes.buckets)
    window = shapes.buckets[-1] if policy == "truncate" else None
    shares = []
    for text in texts:
        tokens = len(text) // CHARS_PER_TOKEN + 2
        shares.append((tokens if window is None else min(tokens, window)) / positions)
    return shares


_BUILD_ONE_PER_PROCESS = (
    "it holds device arrays and compiled programs of this process; build one in each worker "
    "process (Embedder.from_pipeline(...) in the worker's initializer) and send texts and "
    "vectors between processes, not the Embedder"
)


def _passes(parts: Sequence[Part]) -> dict[tuple[bool, int | None, bool], list[Part]]:
    """The parts that share a pass: the same window policy, token budget and side."""
    groups: dict[tuple[bool, int | None, bool], list[Part]] = {}
    for part in parts:
        request = part.request
        key = (request.long_text == "truncate", request.batch_tokens, request.queries)
        groups.setdefault(key, []).append(part)
    return groups


def _keyword_sections(
    model: object, attention: object, run: object, trust: object
) -> dict[str, Any]:
    """``Embedder``'s keywords as the sections of a pipeline, for its validation to check.

    A value that is not a mapping is handed on as it is (never ``dict()`` of it, whose
    error named no keyword), so that the validator refuses it as it refuses that section
    of a file: a ``ConfigError`` placed at ``Embedder(...)['model']``, saying it must be
    a mapping. ``None`` for ``run`` or ``trust`` leaves the section out.
    """
    section = dict(attention) if isinstance(attention, Mapping) else {"use": attention}
    names = section.get("use")
    if isinstance(names, tuple | list):
        section["use"] = list(names)
    data: dict[str, Any] = {"model": _as_section(model), "attention": section}
    for name, value in (("run", run), ("trust", trust)):
        if value is not None:
            data[name] = _as_section(value)
    return data


def _as_section(value: object) -> object:
    """A mapping as a plain dict; anything else as it is, for the validator to place."""
    return dict(value) if isinstance(value, Mapping) else value


def _checked_options(
    default: LongText,
    long_text: LongText | None,
    batch_tokens: object,
    normalize: object,
    queries: object,
) -> tuple[LongText, int | None]:
    """A call's window policy and token budget, its flags checked: refused now, by the
    caller's own call, not deep in a pass that other callers share."""
    policy = default if long_text is None else long_text
    _check_long_text(policy)
    budget = _checked_budget(batch_tokens)
    _check_flags(normalize=normalize, queries=queries)
    return policy, budget


def _check_container(texts: object) -> None:
    """Refuse a mapping, set or bytes where texts go: ``list()`` of a dict is its keys, of a
    set an order nobody chose, of bytes integers; each embedded without a word once. So is
    a table or an array of other than one dimension (:func:`dimensions_problem`): a
    DataFrame's texts were its column names. What is not iterable at all (``None``, a
    number) is named, not left to ``list()``'s error."""
    if not isinstance(texts, str | Iterable):
        raise TypeError(f"texts must be a str or a sequence of str, not {type(texts).__name__}")
    if isinstance(texts, Mapping | set | frozenset | bytes | bytearray):
        raise TypeError(
            f"texts is {a_type(texts)}: give a str or a sequence of str (a list), "
            "whose order is the order of the vectors"
        )
    problem = dimensions_problem(texts, "texts", _ONE_DIMENSION)
    if problem is not None:
        raise TypeError(problem)


_ONE_DIMENSION = "a str, or a sequence of str (a list, or an array of one dimension)"
"""What ``encode`` takes instead of an array of more (or fewer) dimensions."""


def _checked_texts(texts: Texts) -> list[str]:
    """``texts`` as a list, refused now if a caller passed what cannot be embedded."""
    batch = [texts] if isinstance(texts, str) else _listed_texts(texts)
    if not batch:
        raise ValueError("nothing to embed: give at least one text")
    return batch


def _listed_texts(texts: Sequence[str] | Iterator[str]) -> list[str]:
    """``texts`` as a list (empty or not), refused if any of it is not a text."""
    _check_container(texts)
    batch = list(texts)
    for index, text in enumerate(batch):
        if not isinstance(text, str):
            raise TypeError(_not_a_text(index, text))
    return batch


def _not_a_text(index: int, text: object) -> str:
    """Why ``texts[index]`` is not a text: a missing value is named as one, not as its type
    ("texts[1] is a float" sent its reader looking for a number where a Series had a gap)."""
    missing = missing_kind(text)
    if missing is not None:
        return f"texts[{index}] is missing ({missing}): {MISSING_FIX}"
    return f"texts[{index}] is {a_type(text)}, not a str"


def _checked_budget(batch_tokens: object) -> int | None:
    """``batch_tokens`` as an int (or None), refused now if it is not a whole number of at
    least 1: a str failed deep in the batching with ``'<' not supported``, and ``2.5`` or
    ``True`` were taken as budgets."""
    if batch_tokens is None:
        return None
    if isinstance(batch_tokens, bool | np.bool_) or not isinstance(batch_tokens, Integral):
        raise TypeError(
            f"batch_tokens must be an int (tokens per batch) or None, "
            f"not {type(batch_tokens).__name__}"
        )
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be at least 1, not {batch_tokens}")
    return int(batch_tokens)


def _check_settings(queries: object, max_wait: object, monitors: object) -> None:
    """Refuse an embedder's ``queries``, ``max_wait`` or ``monitors`` of the wrong type before
    the model is built: ``queries="no"`` would embed every text as a query. And refuse to
    build one in a process forked after JAX's runtime started (:mod:`seamline.core.forking`)."""
    refuse_after_fork("an Embedder")
    check_monitors(monitors, "monitors")
    if not isinstance(queries, bool | np.bool_):
        raise TypeError(f"queries must be True or False, not {type(queries).__name__}")
    if isinstance(max_wait, bool) or not isinstance(max_wait, Real):
        raise TypeError(f"max_wait must be a number of seconds, not {type(max_wait).__name__}")


def _check_flags(**flags: object) -> None:
    """Refuse a flag that is not a bool (or None: the embedder's default): ``"no"`` is true
    to Python, and would have done the opposite of what it says."""
    for name, flag in flags.items():
        if flag is not None and not isinstance(flag, bool | np.bool_):
            raise TypeError(f"{name} must be True, False or None, not {type(flag).__name__}")


def _model_of(resolved: ResolvedEncoder, registry: Registry) -> Model[Any]:
    """The resolved model in its precision: its document side (the query side is its
    ``for_queries()``, made when a call first asks for it)."""
    created = build_model(resolved.model, registry, resolved.overrides)
    created = created.with_precision(resolved.precision)
    return created


class Unembeddable(UserError, ValueError):
    """A text the model cannot embed (its ``prepare`` failed, or made nothing of it).

    The caller's input, which the caller can fix: a ``UserError`` (exported by
    ``seamline.api``), so that ``except UserError`` catches it as python.md says it
    catches every mistake the caller can fix; a text that is not valid Unicode escaped
    such a clause as a bare ``ValueError``. Still a ``ValueError``, as it always was.
    """

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"texts[{index}] cannot be embedded: {reason}")
        self.index = index
        self.reason = reason


_TEXTS = "seamline.texts"
_REQUESTS = "seamline.requests"
_QUERIES = "seamline.embed.queries"
_BATCH_INDEX = "seamline.batch.index"
_BATCH_TOKENS = "seamline.batch.tokens"


class Pending(Generic[_V]):
    """Texts submitted to an :class:`Embedder`: their vectors once embedded, or a cancel.

    Generic in what :meth:`result` gives (``Pending[Vectors]``, or
    ``Pending[list[Vectors]]`` for ``long_text="windows"``), so that
    ``submit(texts).result().shape`` type-checks as ``encode(texts).shape`` does."""

    def __init__(self, queue: EmbedQueue, request: Request, single: bool, normalize: bool) -> None:
        self._queue = queue
        self._request = request
        self._single = single
        self._normalize = normalize

    @property
    def texts(self) -> int:
        return len(self._request.texts)

    def __repr__(self) -> str:
        """``<Pending 3 texts, done>``: queued, being embedded, done, cancelled or failed."""
        request, count = self._request, len(self._request.texts)
        if not request.done.is_set():
            state = "being embedded" if request.taken else "queued"
        elif request.error is None:
            state = "done"
        elif isinstance(request.error, Cancelled):
            state = "cancelled"
        else:
            state = f"failed ({type(request.error).__name__})"
        return f"<Pending {count} text{'' if count == 1 else 's'}, {state}>"

    @property
    def tokens(self) -> int:
        """Tokens the model computed for these texts (each window kept, its special tokens
        included), as batched: final once :meth:`done`."""
        return self._request.tokens

    def done(self) -> bool:
        return self._request.done.is_set()

    def cancel(self) -> bool:
        """Leave the queue if no pass took these texts yet, or only some of them (True); the
        texts not taken then take no place in a batch, and :meth:`result` raises
        ``Cancelled``."""
        return self._queue.cancel(self._request)

    def cancelled(self) -> bool:
        """Whether it ended without vectors by a cancel, a Ctrl-C or ``abandon()`` (then
        :meth:`result` raises ``Cancelled``), as ``concurrent.futures.Future.cancelled``."""
        return isinstance(self._request.error, Cancelled)

    def add_done_callback(self, callback: Callable[[Pending[_V]], None]) -> None:
        """Call ``callback(self)`` when done (now, if it is): in the thread that led the pass,
        once the pass is over, so the callback may call this embedder again (``encode``,
        ``submit``, ``close``); meanwhile that thread waits for it, so a slow one hands its
        work to another thread.

        Nothing embeds by itself: the callback fires only once some thread leads a pass
        (a ``result()``, or a thread calling :meth:`Embedder.drain`). To wait without
        blocking an asyncio loop, ``await`` the pending instead."""
        self._request.add_callback(lambda: callback(self))

    def __await__(self) -> Generator[Any, None, _V]:
        """``await embedder.submit(texts)``: :meth:`result`, run in a worker thread
        (``asyncio.to_thread``) so that the loop runs on meanwhile; a task cancelled while
        it waits takes its texts out of the queue if no pass took them yet (:meth:`cancel`).

        ``add_done_callback`` bridged to a loop never resolved, as nothing led the pass."""
        return _awaited(self).__await__()

    def result(self) -> _V:
        """The vectors (as :meth:`Embedder.encode` returns them), leading a pass if need be.

        Raises what embedding them raised, or ``Cancelled``: after a cancel, or after a
        Ctrl-C stopped the pass that was embedding them (the call it interrupted raised
        ``KeyboardInterrupt``; later calls say to submit the texts again). A Ctrl-C that
        Python drops meanwhile (landing in JAX's garbage-collection callback, it is printed
        as "Exception ignored" and the call ran on for a minute) stops the call all the
        same, at the next batch (:mod:`seamline.core.stops`, scoped to this call).
        """
        request = self._request
        with stops_kept():
            self._queue.serve(request)
            raise_kept_stop()  # dropped during the last batch: the call still stops
        error = request.error
        if isinstance(error, Cancelled):  # a new one each call: the stored one holds no frame
            raise Cancelled(*error.args) from None
        if error is not None:
            raise error
        vectors = [_combine(windows, request.long_text) for windows in request.windows]
        if self._normalize:
            vectors = [_unit(v) for v in vectors]
        if request.long_text == "windows":
            return cast(_V, vectors)
        stacked = np.stack(vectors).astype(np.float32, copy=False)
        return cast(_V, stacked[0] if self._single else stacked)


async def _awaited(pending: Pending[_V]) -> _V:
    """:meth:`Pending.result` in a worker thread, the pending cancelled with its task."""
    try:
        return await asyncio.to_thread(pending.result)
    except asyncio.CancelledError:
        pending.cancel()
        raise


def _check_long_text(policy: str) -> None:
    if policy not in LONG_TEXT:
        raise ValueError(f"long_text must be one of {', '.join(LONG_TEXT)}, not {policy!r}")


def _combine(windows: Mapping[int, np.ndarray], policy: LongText) -> Vectors:
    ordered = np.stack([windows[i] for i in sorted(windows)]).astype(np.float32, copy=False)
    if policy == "windows":
        return ordered
    if policy == "truncate" or len(ordered) == 1:
        first: Vectors = ordered[0]
        return first
    mean = ordered.mean(axis=0)
    unit = bool(np.allclose(np.linalg.norm(ordered, axis=1), 1.0, atol=1e-3))
    return _unit(mean) if unit else mean.astype(np.float32)


def _unit(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    scaled: Vectors = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return scaled
