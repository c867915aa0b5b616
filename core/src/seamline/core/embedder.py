"""Texts in, vectors out, in this process: ``Embedder(...).encode(texts)``.

An :class:`Embedder` is a pipeline's model side (:class:`~seamline.core.encoder.
Encoder`) kept warm: the model loaded once, the attention negotiated, verified and
compiled per batch shape, exactly as ``seamline run`` does it, through the same
seams (spans, monitors) and trust rules. ``encode`` runs texts through the same
host work as a run — ``prepare``, packing into the pipeline's token-budget batches,
``collate`` — so a text embeds to the same vector either way.

Several threads may call :meth:`Embedder.encode` at once. Their texts are batched
together: a caller queues its texts and takes the engine when it is free; whoever
holds it embeds every text queued so far, its own and the others', and hands each
caller its rows. No background thread is kept, and a caller alone pays nothing.

Texts longer than the model's window (``long_text``):

* ``"truncate"`` (the default): the first window only, the text cut at the model's
  ``max_length`` tokens, as sentence-transformers' ``encode`` does (same vector);
* ``"mean"``: every window, averaged; when the model's vectors have unit length (a
  model that normalises), the mean is scaled back to unit length;
* ``"windows"``: every window's vector, one ``[windows, dim]`` array per text.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from seamline.contracts import Document, Model, Monitor
from seamline.core.attention.candidates import build_candidates
from seamline.core.config import (
    ResolvedEncoder,
    load_pipeline,
    load_trusted,
    prepare_data,
    resolve_encoder,
    trusted_registry,
)
from seamline.core.encoder import Encoder
from seamline.core.host import Collated, SetAside, documents_as_loaded
from seamline.core.monitor_hub import MonitorHub
from seamline.core.registry import Registry
from seamline.core.seams import Seam
from seamline.core.telemetry import span_event

LongText = Literal["truncate", "mean", "windows"]
LONG_TEXT: tuple[LongText, ...] = ("truncate", "mean", "windows")

Vectors = npt.NDArray[np.float32]


@dataclass(eq=False)
class _Request:
    """One caller's texts, waiting to be embedded, and what came of them."""

    texts: Sequence[str]
    long_text: LongText
    batch_tokens: int | None
    done: threading.Event = field(default_factory=threading.Event)
    windows: list[dict[int, np.ndarray]] = field(default_factory=list)
    """Per text: window index → its vector."""
    error: BaseException | None = None


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
        monitors: Sequence[Monitor[Any]] = (),
        long_text: LongText = "truncate",
    ) -> None:
        """An embedder of ``model`` (``{"use": NAME, "with": {...}}``, as in a pipeline).

        ``attention`` is a name, a preference list, or a whole ``attention`` section;
        ``run`` and ``trust`` are those sections of a pipeline. They are validated as a
        pipeline file's are: a problem is a located ``ConfigError`` whose place is the
        key path (``Embedder(...)['model']['with']['max_lenght']``). Without a
        ``registry``, components are discovered under the trust given and the user's.
        """
        section = dict(attention) if isinstance(attention, Mapping) else {"use": attention}
        if isinstance(section.get("use"), tuple | list):
            section["use"] = list(section["use"])
        data: dict[str, Any] = {"model": dict(model), "attention": section}
        if run is not None:
            data["run"] = dict(run)
        if trust is not None:
            data["trust"] = dict(trust)
        located = prepare_data(data, "Embedder(...)", (), environ)
        if registry is None:
            registry = trusted_registry(located, environ)
        resolved = resolve_encoder(located, registry, environ=environ)
        self._start(resolved, registry, monitors, long_text)

    @classmethod
    def from_resolved(
        cls,
        resolved: ResolvedEncoder,
        registry: Registry,
        *,
        monitors: Sequence[Monitor[Any]] = (),
        long_text: LongText = "truncate",
    ) -> Embedder:
        """An embedder of a model side already resolved (a pipeline's, a manifest's)."""
        embedder = cls.__new__(cls)
        embedder._start(resolved, registry, monitors, long_text)
        return embedder

    def _start(
        self,
        resolved: ResolvedEncoder,
        registry: Registry,
        monitors: Sequence[Monitor[Any]],
        long_text: LongText,
    ) -> None:
        _check_long_text(long_text)
        self.long_text: LongText = long_text
        self.source = resolved.source
        self.monitors = MonitorHub(monitors)
        model = resolved.model
        created = cast(Model[Any], registry.create(model.kind, model.name, model.config))
        seam = Seam(created, registry.info_of(created), self.monitors)
        candidates = build_candidates(resolved.attention, registry)
        self.encoder = Encoder(created, seam, candidates, resolved.run, self._report)
        self._queue: list[_Request] = []
        self._queue_lock = threading.Lock()
        self._engine = threading.Lock()
        self._dimension: int | None = None
        self._closed = False

    @classmethod
    def from_pipeline(
        cls,
        path: str | os.PathLike[str],
        overrides: Sequence[str] = (),
        *,
        registry: Registry | None = None,
        environ: Mapping[str, str] | None = None,
        monitors: Sequence[Monitor[Any]] = (),
        long_text: LongText = "truncate",
    ) -> Embedder:
        """The model, attention and ``run`` settings of the pipeline file at ``path``.

        The file is validated whole, as ``seamline run`` validates it (a located
        ``ConfigError`` if it is not valid); its loader and sink are not used. Without a
        ``registry``, components are discovered under the pipeline's and the user's trust.
        """
        if registry is None:
            resolved, registry = load_trusted(path, overrides, environ)
        else:
            resolved = load_pipeline(path, registry, overrides, environ)
        side = ResolvedEncoder(resolved.model, resolved.attention, resolved.spec.run, str(path))
        return cls.from_resolved(side, registry, monitors=monitors, long_text=long_text)

    # -- embedding ---------------------------------------------------------------------------

    def encode(
        self,
        texts: str | Sequence[str],
        *,
        batch_tokens: int | None = None,
        normalize: bool | None = None,
        long_text: LongText | None = None,
    ) -> Vectors | list[Vectors]:
        """One float32 row per text, in input order (``[len(texts), dim]``).

        A single string gives one vector (``[dim]``). ``batch_tokens`` overrides the
        pipeline's token budget per batch; ``normalize=True`` scales every vector to
        unit length (``None``, the default: as the model makes them); ``long_text``
        overrides the embedder's policy for texts longer than the model's window (see
        the module's documentation). With ``long_text="windows"`` the result is a list
        of ``[windows, dim]`` arrays, one per text.
        """
        policy = self.long_text if long_text is None else long_text
        _check_long_text(policy)
        single = isinstance(texts, str)
        batch = [texts] if isinstance(texts, str) else list(texts)
        for index, text in enumerate(batch):
            if not isinstance(text, str):
                raise TypeError(f"texts[{index}] is a {type(text).__name__}, not a str")
        if batch_tokens is not None and batch_tokens < 1:
            raise ValueError(f"batch_tokens must be at least 1, not {batch_tokens}")
        if not batch:
            empty = np.zeros((0, self.dimension), np.float32)
            return [] if policy == "windows" else empty
        request = _Request(batch, policy, batch_tokens)
        self._embed(request)
        vectors = [_combine(windows, policy) for windows in request.windows]
        if normalize:
            vectors = [_unit(v) for v in vectors]
        if policy == "windows":
            return vectors
        stacked = np.stack(vectors).astype(np.float32, copy=False)
        return stacked[0] if single else stacked

    @property
    def dimension(self) -> int:
        """The length of the vectors this embedder makes (one text is embedded to learn it)."""
        if self._dimension is None:
            self._dimension = int(np.shape(self.encode([""]))[-1])
        return self._dimension

    def _embed(self, request: _Request) -> None:
        """Queue ``request``; embed the queue when the engine is free; wait for ours."""
        if self._closed:
            raise RuntimeError("this Embedder is closed")
        with self._queue_lock:
            self._queue.append(request)
        with self._engine:
            if not request.done.is_set():
                with self._queue_lock:
                    taken, self._queue = self._queue, []
                self._run(taken)
        if request.error is not None:
            raise request.error

    def _run(self, requests: list[_Request]) -> None:
        """Embed the texts of ``requests`` together (one pass per window policy and budget)."""
        groups: dict[tuple[bool, int | None], list[_Request]] = {}
        for request in requests:
            key = (request.long_text == "truncate", request.batch_tokens)
            groups.setdefault(key, []).append(request)
        for (first_only, batch_tokens), group in groups.items():
            try:
                self._pass(group, first_only, batch_tokens)
            except BaseException as err:
                for request in group:
                    request.error = err
            finally:
                for request in group:
                    request.done.set()

    def _pass(self, requests: list[_Request], first_only: bool, batch_tokens: int | None) -> None:
        owners: list[tuple[_Request, int]] = []
        documents = []
        for request in requests:
            request.windows = [{} for _ in request.texts]
            for index, text in enumerate(request.texts):
                documents.append(Document(str(len(owners)), text))
                owners.append((request, index))
        encoder = self.encoder
        host = encoder.host_work(
            shapes=encoder.shapes_for(batch_tokens), max_windows=1 if first_only else None
        )
        for item in host.batches(documents_as_loaded(documents)):
            if isinstance(item, SetAside):
                request, index = owners[int(item.error.id)]
                raise ValueError(f"texts[{index}] cannot be embedded: {item.error.reason}")
            if isinstance(item, Collated):
                outputs = encoder.outputs(item.batch)
                for row, example in zip(item.batch.example_rows, item.batch.examples, strict=True):
                    request, index = owners[int(example.doc_id)]
                    request.windows[index][example.index] = outputs[row]

    def _report(self, event: Any) -> None:
        span_event(event)
        self.monitors.emit(event)

    # -- the end -----------------------------------------------------------------------------

    def close(self) -> None:
        """Release the model and the attention (once; later calls do nothing)."""
        with self._engine:
            if self._closed:
                return
            self._closed = True
            self.monitors.close()
            self.encoder.close()

    def __enter__(self) -> Embedder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


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
