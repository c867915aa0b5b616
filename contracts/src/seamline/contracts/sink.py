"""The sink seam: where outputs go, published atomically."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import DocumentError
from seamline.contracts.versions import Kind


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """The output for one example: which document, which part of it, and the vector."""

    doc_id: str
    index: int
    span: tuple[int, int]
    vector: npt.NDArray[np.floating[Any]]
    metadata: Mapping[str, Any] = field(default_factory=dict)


SinkConfigT = TypeVar("SinkConfigT", bound=ComponentConfig)


class Sink(Component[SinkConfigT], abc.ABC):
    """Receives records and errors; what it writes becomes visible all at once.

    Until ``close(complete=True)`` nothing is visible under the final name, so a
    reader never sees a half-written output. ``close(complete=False)`` (a failed
    run) must not publish.
    """

    kind: ClassVar[Kind] = "sink"

    def start(self, manifest: Mapping[str, Any]) -> None:
        """Receive the run's manifest (pipeline, model and its config, versions) before any write.

        A sink that keeps it beside its output lets readers (``seamline search``)
        rebuild the model that made the vectors. The default ignores it.
        """

    @abc.abstractmethod
    def write(self, records: Sequence[OutputRecord]) -> None:
        """Accept a batch of records, in order."""

    @abc.abstractmethod
    def write_error(self, error: DocumentError) -> None:
        """Keep the record of a document that was set aside."""

    @abc.abstractmethod
    def close(self, complete: bool = True) -> None:
        """Publish everything written (``complete``) or discard it."""
