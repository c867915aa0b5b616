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
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from seamline.contracts.attention import AttentionFn
from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import Document
from seamline.contracts.versions import Kind

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax

Params = Any
"""A pytree of arrays; its structure is the model's own business."""

FLOAT32 = "float32"
"""The precision every model computes in, and the one lower precisions are checked against."""


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
    """Examples laid out in one shape: every array is ``[batch_size, length, ...]``.

    Unpacked (the default), example ``i`` is row ``i`` and ``apply`` returns one
    output per row; rows past ``len(examples)`` are padding and their outputs are
    discarded. Packed (model contract 1.2, see :meth:`Model.packing`), one row
    holds several examples and ``apply`` returns ``outputs`` rows, of which row
    ``output_rows[i]`` belongs to example ``i``; the others are discarded.
    """

    examples: tuple[Example, ...]
    arrays: Mapping[str, npt.NDArray[Any]]
    batch_size: int
    length: int
    outputs: int | None = None
    """Leading size of ``apply``'s output (since 1.2); None: ``batch_size``."""
    output_rows: tuple[int, ...] | None = None
    """The output row of each example (since 1.2); None: example ``i`` is row ``i``."""

    @property
    def tokens(self) -> int:
        """Real (unpadded) positions in this batch."""
        return sum(example.length for example in self.examples)

    @property
    def output_size(self) -> int:
        """How many rows ``apply`` returns for this batch."""
        return self.batch_size if self.outputs is None else self.outputs

    @property
    def example_rows(self) -> tuple[int, ...]:
        """Which output row holds each example's output."""
        if self.output_rows is None:
            return tuple(range(len(self.examples)))
        return self.output_rows


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
    def collate(
        self,
        examples: Sequence[Example],
        batch_size: int,
        length: int,
        rows: Sequence[int] | None = None,
    ) -> Batch:
        """Lay ``examples`` out in a ``[batch_size, length]`` batch.

        Without ``rows``: example ``i`` in row ``i`` (at most ``batch_size`` examples,
        each at most ``length`` long), padded. With ``rows`` (only for a model whose
        :meth:`packing` allows more than one example per row): example ``i`` goes
        into row ``rows[i]``, after the examples before it in that row; the host
        guarantees that a row's examples fit in ``length`` together and are no more
        than ``packing(length)``. A packed batch sets ``outputs`` and ``output_rows``.
        """

    def packing(self, length: int) -> int:
        """How many examples one row of ``length`` positions may hold (since 1.2).

        1 (the default) means no packing: the host never passes ``rows`` to
        :meth:`collate`. A model that can keep examples apart within a row (position
        ids restarting per example, attention confined by segment ids, pooling per
        segment) returns more, and the host packs short examples together instead
        of padding each to a row of its own: fewer positions computed for the same
        outputs. The outputs must not depend on the packing (the conformance suite
        checks it).
        """
        return 1

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

    def precisions(self) -> Sequence[str]:
        """The compute precisions ``apply`` can run in, float32 first (since 1.3).

        Names are dtype names (``"float32"``, ``"bfloat16"``). The pipeline's
        ``precision`` setting negotiates among them: the host asks whether the hardware
        runs each natively and checks a lower precision's outputs against float32's
        before it trusts it, so a model only says what it *can* do. The default,
        float32 alone, is what every model before 1.3 did.
        """
        return (FLOAT32,)

    def with_precision(self, precision: str) -> Model[ModelConfigT]:
        """This model computing in ``precision`` (one of :meth:`precisions`) (since 1.3).

        A new instance (or ``self`` for the precision it already has): the host keeps
        the float32 model beside a lower-precision one to compare them. What runs in
        the lower precision is the model's choice (the first-party encoder keeps layer
        norms, softmax statistics, pooling and the output in float32); ``apply``'s
        output stays :meth:`output_dtype`. Raises ``ValueError`` for a precision not in
        :meth:`precisions`.
        """
        if precision == FLOAT32:
            return self
        raise ValueError(
            f"model {self.name!r} computes in {', '.join(self.precisions())} only, not {precision}"
        )

    def pinned_config(self) -> ModelConfigT:
        """This model's configuration with what identifies its weights filled in (since 1.4).

        A configuration may name weights by where they are (a folder, an installed
        package) without saying which they are; the files there can change (a package
        upgraded, a folder copied over) and the vectors with them. The host asks for
        this once per run, before any shard starts: every worker builds the model from
        it, a resume compares it with the checkpoint's, and the output's manifest
        records it, so a worker, a resumed run or a search whose weights are not the
        run's is refused instead of mixing two models' vectors. A model pins by filling
        settings its configuration left unset or null (the first-party encoder fills
        ``sha256`` with the digest of ``model.safetensors``, which ``load`` then checks);
        it never changes a value the configuration gives. The default, the configuration as
        given, is what every model before 1.4 did: nothing pinned.
        """
        return self.config

    def for_queries(self) -> Model[ModelConfigT]:
        """This model as it embeds search queries rather than documents (since 1.3).

        A retrieval model may be trained to see queries and documents differently: e5
        wants ``"query: "`` before a query and ``"passage: "`` before a document, bge an
        instruction before queries alone. ``prepare`` embeds documents; the host calls
        this once to embed the query of a search (``seamline search``, the search API,
        the server's ``/v1/search``) and uses what it returns exactly as the model
        itself (the same params from :meth:`load`, the same ``collate`` and ``apply``;
        only ``prepare`` may differ). The default, ``self``, treats a query as any
        other text, as every model before 1.3 did.
        """
        return self


def pin_problem(name: str, given: ComponentConfig, pinned: object) -> str | None:
    """What is wrong with ``pinned`` as model ``name``'s pin of ``given`` (model contract
    1.4), or None: it must be a configuration of the same type that keeps every value
    ``given`` sets (a setting left unset or null may be filled). The host refuses such a
    pin (a ``ContractViolation``); :class:`~seamline.contracts.testing.ModelContract`
    fails on it."""
    if type(pinned) is not type(given):
        return (
            f"model {name!r}: pinned_config() returned a {type(pinned).__name__}, not its "
            f"{type(given).__name__} (model contract 1.4)"
        )
    changed = sorted(
        field
        for field in given.model_fields_set
        if getattr(given, field) is not None and getattr(pinned, field) != getattr(given, field)
    )
    if changed:
        return (
            f"model {name!r}: pinned_config() changed {', '.join(changed)}, which the pipeline "
            "sets; a model may only fill settings left unset or null (model contract 1.4)"
        )
    return None
