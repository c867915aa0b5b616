"""Every sink refuses a non-finite vector the same way; NaN metadata is written as null.

A kernel that returns NaN under ``verify: false`` once published an all-NaN ``npy``
matrix with exit 0 while the ``jsonl`` sink refused. Now each first-party sink
raises the same ContractViolation before it writes anything of the batch, and the
rows written before stay, so a failed run still publishes nothing half-made.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import ContractViolation, DocumentError, OutputRecord, Sink
from tests.readback import read_records

if TYPE_CHECKING:
    from pathlib import Path

MANIFEST = {"pipeline": "p", "model": {"use": "bert-encoder", "with": {"weights": "w"}}}


def make(kind: str, out: Path) -> Sink[Any]:
    if kind == "jsonl":
        return JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl"))
    if kind == "npy":
        return NpySink(NpySinkConfig(path=out / "emb.npy"))
    if kind == "parquet":
        return ParquetSink(ParquetSinkConfig(path=out / "emb.parquet"))
    return LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance"))


def ids_written(kind: str, out: Path) -> list[str]:
    if kind in ("jsonl", "npy"):
        records = read_records(out / f"emb.{kind}")
        assert records is not None
        return [record.doc_id for record in records]
    if kind == "parquet":
        import pyarrow.parquet as pq

        return [str(i) for i in pq.read_table(out / "emb.parquet").column("id").to_pylist()]
    import lancedb

    table = lancedb.connect(str(out)).open_table("emb")
    return [row["id"] for row in table.search().select(["id"]).limit(None).to_list()]


def record(doc_id: str, *values: float) -> OutputRecord:
    return OutputRecord(doc_id, 0, (0, 1), np.asarray(values, np.float32), {"path": "p"})


@pytest.mark.parametrize("kind", ["jsonl", "npy", "parquet", "lancedb"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_every_sink_refuses_a_non_finite_vector_before_writing_its_batch(
    tmp_path: Path, kind: str, bad: float
) -> None:
    sink = make(kind, tmp_path)
    sink.start(MANIFEST)
    sink.write([record("good", 1.0, 2.0)])
    with pytest.raises(ContractViolation, match=r"'poisoned' window 0: the vector holds NaN"):
        sink.write([record("same-batch", 3.0, 4.0), record("poisoned", 1.0, bad)])
    sink.close(complete=True)  # what came before the refused batch is intact
    assert ids_written(kind, tmp_path) == ["good"]


@pytest.mark.parametrize("kind", ["jsonl", "npy"])
def test_non_finite_metadata_is_written_as_null_not_bare_nan(tmp_path: Path, kind: str) -> None:
    sink = make(kind, tmp_path)
    sink.start(MANIFEST)
    metadata = {"score": float("nan"), "up": np.float64("inf"), "deep": [{"x": -np.inf}]}
    sink.write([OutputRecord("d", 0, (0, 1), np.ones(2, np.float32), metadata)])
    sink.write_error(DocumentError("e", "why", {"weight": float("nan")}))
    sink.close()
    lines = tmp_path / ("emb.jsonl" if kind == "jsonl" else "emb.index.jsonl")
    (line,) = strict(lines)
    assert line["metadata"] == {"score": None, "up": None, "deep": [{"x": None}]}
    (error,) = strict(tmp_path / "emb.errors.jsonl")
    assert error == {"id": "e", "stage": "load", "reason": "why", "metadata": {"weight": None}}


def test_ids_and_metadata_that_are_not_utf8_are_escaped_not_fatal(tmp_path: Path) -> None:
    """A file name with a byte that is not UTF-8 reaches the sink as a lone surrogate."""
    sink = make("jsonl", tmp_path)
    sink.start(MANIFEST)
    odd = "odd-\udcff.txt"
    sink.write([OutputRecord(odd, 0, (0, 1), np.ones(2, np.float32), {"path": f"/r/{odd}"})])
    sink.write_error(DocumentError(odd, f"reason about {odd}", {"path": f"/r/{odd}"}))
    sink.close()
    (line,) = strict(tmp_path / "emb.jsonl")
    assert (line["id"], line["metadata"]["path"]) == ("odd-\\udcff.txt", "/r/odd-\\udcff.txt")
    (error,) = strict(tmp_path / "emb.errors.jsonl")
    assert error["id"] == "odd-\\udcff.txt"
    assert error["reason"] == "reason about odd-\\udcff.txt"


def strict(path: Path) -> list[dict[str, Any]]:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    text = path.read_bytes().decode("utf-8")
    return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]
