"""The parquet and lancedb sinks under the orchestrator: a killed run, resumed, equals a whole one.

The same toy pipeline as tests/core/test_resume.py (checkpoints every 5 documents, a
crash at d13, documents set aside on both sides of it), writing through the real
sinks with small row groups and staging batches, so that rows written after the last
checkpoint really are on disk when the process "dies".
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.components.sinks.lancedb import LanceDbSink
from seamline.components.sinks.parquet import ParquetSink
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.test_resume import CRASH_AT, TEXTS
from tests.core.toy import LoaderCrash, toy_registry

# pyarrow, DuckDB and LanceDB are imported by the tests that use them, not when pytest
# collects this module: a process pytest starts later (the attention benchmark's workers)
# inherits the peak memory of the collecting process, and they would add about 100 MB.


SINKS = {
    "parquet": ("emb.parquet", {"row_group_size": 2}),
    "lancedb": ("emb.lance", {"buffer_rows": 2}),
}


def registry() -> Registry:
    sinks = [
        ComponentInfo(
            "sink", c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c,
            c.contract_version,
        )
        for c in (ParquetSink, LanceDbSink)
    ]  # fmt: skip
    return Registry([*toy_registry().entries(), *sinks])


def orchestrator(out: Path, sink: str, *, crash_at: str | None = None) -> Orchestrator:
    name, options = SINKS[sink]
    sink_with = {"path": str(out / name), **options}
    loader_with = {"texts": TEXTS}
    text = (
        "pipeline: resume\n"
        f"loader: {{use: list, with: {json.dumps(loader_with)}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}, with: {json.dumps(sink_with)}}}\n"
        "run: {batch_size: 2, buckets: [4, 8], checkpoint_every: 5}\n"
    )
    reg = registry()
    built = Orchestrator(parse_pipeline(text, "resume.yaml", reg), reg)
    if crash_at is not None:  # behind the pipeline's back: a resume refuses a changed file
        built.loader.config = built.loader.config.model_copy(update={"crash_at": crash_at})
    return built


def published(out: Path, sink: str) -> list[dict[str, Any]]:
    import lancedb
    import pyarrow.parquet as pq

    if sink == "parquet":
        return list(pq.read_table(out / "emb.parquet").to_pylist())
    return list(lancedb.connect(str(out)).open_table("emb").search().limit(None).to_list())


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The rows of a run that was never interrupted (the two sinks write the same rows)."""
    reference = tmp_path_factory.mktemp("reference")
    orchestrator(reference, "parquet").run()
    return published(reference, "parquet")


@pytest.mark.parametrize("spelling", ["absolute", "relative"])
@pytest.mark.parametrize("sink", sorted(SINKS))
def test_a_killed_run_resumed_publishes_what_a_whole_run_does(
    tmp_path: Path,
    sink: str,
    spelling: str,
    whole: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Also from a working directory of the run's own, the path relative to it (a lancedb
    run that had committed could not publish, and neither sink resumed, before)."""
    out = tmp_path / "out"
    if spelling == "relative":
        monkeypatch.chdir(tmp_path)
        out = Path("out")
    first = orchestrator(out, sink, crash_at=CRASH_AT)
    with pytest.MonkeyPatch.context() as patch:  # the chdir above stays
        patch.setattr(first.sink, "close", lambda complete=True: None)  # killed: no close
        with pytest.raises(LoaderCrash):
            first.run()
    del first
    gc.collect()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == []

    summary = orchestrator(out, sink).run(resume=True)
    assert summary.resumed_from == "9"
    got, expected = published(out, sink), whole

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return (row["id"], row["window_index"], row["span_start"], row["span_end"], row["text"])

    assert [key(r) for r in got] == [key(r) for r in expected]
    assert len({(r["id"], r["window_index"]) for r in got}) == len(got), "each row once"
    for row, reference_row in zip(got, expected, strict=True):
        np.testing.assert_allclose(row["embedding"], reference_row["embedding"], atol=1e-6)
    errors = [json.loads(line) for line in (out / "emb.errors.jsonl").read_text().splitlines()]
    assert [e["id"] for e in errors] == ["d3", "d15", "d18"]
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "no hidden state left"
