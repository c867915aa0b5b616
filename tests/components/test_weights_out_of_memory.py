"""Running out of memory while reading the weights is the machine's failure, not the file's.

Under ``ulimit -v 1500000`` the safetensors library ran out of memory making a tensor's
buffer: a ``MemoryError`` was reported as a ``WeightsError`` ("could not be read as
safetensors ...; restore the file", exit code 2), and its Rust code then panicked with
pyo3's ``PanicException`` ("PyObject pointer is null"), a ``BaseException`` that passed
every handler as a traceback. Both are a ``MemoryError`` now, which ``seamline run``
reports as running out of memory (``tests/faults/test_resource_exhaustion.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from seamline.components.models import weights
from seamline.components.models.bert import BertEncoder, Config
from seamline.components.models.mpnet import MpnetEncoder

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


class PanicException(BaseException):  # pyo3's name, which the reader matches
    """Stands in for ``pyo3_runtime.PanicException``, which only a real panic creates."""


def bert() -> Any:
    return BertEncoder(Config(weights=str(GOLDEN / "family" / "plain-hf")))


def mpnet() -> Any:
    return MpnetEncoder(MpnetEncoder.Config(weights=str(GOLDEN / "mpnet_tiny")))


@pytest.mark.parametrize("encoder", [bert, mpnet])
@pytest.mark.parametrize(
    "raised", [MemoryError(), PanicException("PyObject pointer is null")], ids=["memory", "panic"]
)
def test_a_reader_out_of_memory_is_a_memory_error(
    monkeypatch: pytest.MonkeyPatch, encoder: Any, raised: BaseException
) -> None:
    def out_of_memory(path: str) -> Any:
        raise raised

    model = encoder()
    monkeypatch.setattr(weights, "load_file", out_of_memory)
    with pytest.raises(MemoryError) as caught:
        model.load()
    assert "restore the file" not in str(caught.value)


def test_another_panic_is_not_taken_for_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def panics(path: str) -> Any:
        raise PanicException("index out of bounds")

    model = bert()
    monkeypatch.setattr(weights, "load_file", panics)
    with pytest.raises(PanicException):
        model.load()
