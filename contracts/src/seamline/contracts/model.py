"""The model seam: documents in, one output vector per example out.

A model turns each document into one or more *examples* (for a text encoder: the
token windows of the document), packs examples of similar length into
fixed-shape *batches*, and maps ``(params, arrays)`` to outputs with a pure,
jittable ``apply``. The attention is an argument of ``apply``: the model never
imports a kernel, so any conforming attention can serve it.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import jax
import numpy as np
import numpy.typing as npt

from seamline.contracts.attention import AttentionFn
from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import Document
from seamline.contracts.versions import Kind

Params = Any
"""A pytree of arrays; its structure is the model's own business."""


@dataclass(frozen=True, slots=True)
class Example:
    """One unit of model input made from a document.

    ``index`` numbers the examples of one document (window 0, 1, ...); ``span`` is
    the ``[start, end)`` character range of the document it covers; ``length`` is
    its size along the sequence axis, which decides its shape bucket.
    """

    doc_id: str
    index: int
    span: tuple[int, int]
    length: int
    features: Mapping[str, npt.NDArray[Any]]
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Batch:
    """Examples padded to one shape: every array is ``[batch_size, length, ...]``.

    Rows past ``len(examples)`` are padding; their outputs are discarded.
    """

    examples: tuple[Example, ...]
    arrays: Mapping[str, npt.NDArray[Any]]
    batch_size: int
    length: int

    @property
    def tokens(self) -> int:
        """Real (unpadded) positions in this batch."""
        return sum(example.length for example in self.examples)


ModelConfigT = TypeVar("ModelConfigT", bound=ComponentConfig)


class Model(Component[ModelConfigT], abc.ABC):
    """A model: weights, input preparation, and a pure ``apply``."""

    kind: ClassVar[Kind] = "model"

    @property
    @abc.abstractmethod
    def max_length(self) -> int:
        """The longest ``Example.length`` that ``prepare`` can produce."""

    @abc.abstractmethod
    def load(self) -> Params:
        """Load and return the parameters (host or device arrays)."""

    @abc.abstractmethod
    def prepare(self, document: Document) -> Sequence[Example]:
        """Turn one document into its examples, in order. Runs on the host."""

    @abc.abstractmethod
    def collate(self, examples: Sequence[Example], batch_size: int, length: int) -> Batch:
        """Pad ``examples`` (at most ``batch_size``, each at most ``length`` long) into a batch."""

    @abc.abstractmethod
    def apply(
        self, params: Params, arrays: Mapping[str, jax.Array], attention: AttentionFn
    ) -> jax.Array:
        """Map one batch to outputs ``[batch_size, ...]``; pure and jittable."""

    def abstract_params(self) -> Params | None:
        """The parameters' shapes and dtypes (``jax.ShapeDtypeStruct`` leaves), if known cheaply.

        Lets seamline plan (``seamline explain``) without reading any weights. The
        default, None, means "load them to find out". Since model contract 1.1.
        """
        return None

    def output_dtype(self) -> np.dtype[Any]:
        """The dtype of ``apply``'s output, checked at the seam."""
        return np.dtype(np.float32)
