"""A toy model that raises a Rust library's panic (or calls ``sys.exit()``) on given texts.

pyo3 turns a Rust panic into ``pyo3_runtime.PanicException``, a ``BaseException`` that
no ``except Exception`` takes: the ``tokenizers`` library raises one for a text its
rules fail on, inside a third party's ``prepare``. :class:`PanicException` stands in
for it (pyo3's own class cannot be made to order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from seamline.contracts import Batch, Document, Example
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import ToyModel, toy_registry


class PanicException(BaseException):
    """As pyo3's: a ``BaseException``, not an ``Exception``, of that name."""


PANIC = "`stride` must be strictly less than `max_len=63`"
"""The panic's message (the tokenizers library's, for a stride as long as the window)."""
PANIC_IN_PREPARE = "panic in prepare"
PANIC_IN_COLLATE = "panic in collate"
EXIT_IN_COLLATE = "exit in collate"
"""Texts the model fails on: ``prepare`` panics, ``collate`` panics, or calls sys.exit()."""


class PanickyToy(ToyModel):
    """The toy model, but for the texts above."""

    name: ClassVar[str] = "toy"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._failing: dict[str, str] = {}
        """Document id → the text it fails on in ``collate`` (ids are reused by passes)."""

    def prepare(self, document: Document) -> Sequence[Example]:
        if document.text == PANIC_IN_PREPARE:
            raise PanicException(PANIC)
        self._failing.pop(document.id, None)
        if document.text in (PANIC_IN_COLLATE, EXIT_IN_COLLATE):
            self._failing[document.id] = document.text
        return super().prepare(document)

    def collate(self, examples: Sequence[Example], batch_size: int, length: int) -> Batch:
        failing = {self._failing.get(example.doc_id) for example in examples}
        if PANIC_IN_COLLATE in failing:
            raise PanicException(PANIC)
        if EXIT_IN_COLLATE in failing:
            raise SystemExit(3)
        return super().collate(examples, batch_size, length)


def panicky_registry() -> Registry:
    """The toy components, with :class:`PanickyToy` as the ``toy`` model."""
    info = ComponentInfo(
        "model", "toy", f"{__name__}:PanickyToy", "acme-panicky", "0.1.0", "ok", "",
        PanickyToy, "1.0",
    )  # fmt: skip
    return Registry([*toy_registry(without=(ToyModel,)).entries(), info])
