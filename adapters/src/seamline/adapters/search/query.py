"""A query embedded as the index's documents were: the same model, config and attention.

The manifest names the model and its ``with:`` block, and records the run's
``attention`` section, which is negotiated again here for the query's shape (unless
the caller names an attention): an explicit choice that cannot serve on this
machine fails with its reasons, as it would in a run. :class:`QueryEncoder` loads
the model once, so a caller with many queries (the recall benchmark) pays for the
weights and each compilation once; queries are padded to a power-of-two length, as
a run buckets its windows, so that a few compilations serve any number of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

import jax
import numpy as np

from seamline.adapters.search.index import Index
from seamline.contracts import Attention, ConfigError, Document, Model
from seamline.core import (
    CheckedAttention,
    PipelineConfigError,
    Registry,
    attention_specs,
    build_candidates,
    parse_located,
    resolve_attention,
    resolve_component,
)

SMALLEST_LENGTH = 16

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


def index_attention(
    registry: Registry, index: Index, model: Model[Any], params: Any, arrays: Any, use: str | None
) -> Attention[Any]:
    """The attention the run negotiated, negotiated again here for the query's shape.

    The manifest's ``attention`` section is resolved like a pipeline's (problems are
    located in the manifest), or ``{use: <use>}`` when the caller overrides it.
    """
    located = index.located
    if use is not None:
        located = parse_located(json.dumps({"attention": {"use": use}}), "--attention")
    elif index.manifest.attention is None:  # an index from before manifests recorded it
        located = parse_located(
            json.dumps({"attention": {"use": "auto"}}), str(index.manifest_path)
        )
    candidates = build_candidates(one_problem(resolve_attention, located, registry), registry)
    decision = candidates.planner().choose(attention_specs(model, params, arrays))
    chosen = next(c for c in candidates.implementations if c.name == decision.chosen)
    for other in candidates.implementations:
        if other is not chosen:
            other.close()
    return chosen


class QueryEncoder:
    """The index's model, loaded once, turning query texts into unit vectors."""

    def __init__(self, registry: Registry, index: Index, attention: str | None = None) -> None:
        spec = index.manifest.model
        assert spec is not None  # open_index refuses a manifest without one
        self.registry = registry
        self.index = index
        self.attention = attention
        # As a pipeline's model: a registered name that trust allows, its config validated.
        choice = one_problem(
            resolve_component, index.located, registry, "model", spec.use, spec.with_, ("model",)
        )
        self.model = cast(Model[Any], registry.create("model", choice.name, choice.config))
        self.params = self.model.load()
        self._steps: dict[int, Callable[[Any, dict[str, Any]], Any]] = {}
        self.chosen: dict[int, str] = {}
        """Padded query length → the attention that serves it."""

    def __call__(self, query: str) -> np.ndarray:
        """``query``'s first window as a unit vector (float32)."""
        model = self.model
        examples = list(model.prepare(Document("query", query)))[:1]
        length = padded_length(examples[0].length, model.max_length)
        batch = model.collate(examples, 1, length)
        step = self._steps.get(length)
        if step is None:
            chosen = index_attention(
                self.registry, self.index, model, self.params, batch.arrays, self.attention
            )
            checked = CheckedAttention(chosen)
            step = self._steps[length] = jax.jit(lambda p, a: model.apply(p, a, checked))
            self.chosen[length] = chosen.name
        out = step(self.params, dict(batch.arrays))
        vector: np.ndarray = np.asarray(out)[batch.example_rows[0]].astype(np.float32)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)


def padded_length(length: int, max_length: int) -> int:
    """The power of two from 16 that holds ``length``, or ``max_length`` (a run's buckets)."""
    padded = SMALLEST_LENGTH
    while padded < length:
        padded *= 2
    return min(padded, max_length)


def embed_query(
    registry: Registry, index: Index, query: str, attention: str | None = None
) -> np.ndarray:
    """Embed ``query`` with the index's model and attention (or ``attention`` if given)."""
    return QueryEncoder(registry, index, attention)(query)
