"""``mode: sync`` of the ``lancedb`` sink over a run split into shards, as ``Pipeline.run`` does it.

The union of the shards' parts is published, then what none of them wrote is deleted,
in one commit; documents a shard set aside keep their rows; and the run's summary
carries the counts measured from the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamline.core.config import parse_pipeline
from seamline.core.pipeline import Pipeline
from tests.scaling.test_job import registry_with
from tests.scaling.test_ray_executor import TEXTS, pipeline_text

if TYPE_CHECKING:
    from pathlib import Path

    from seamline.core.orchestrator import RunSummary
    from seamline.core.registry import Registry


def sync(registry: Registry, out: Path, texts: list[str], executor: str) -> RunSummary:
    text = pipeline_text(out, executor=executor, sink="lancedb", loader={"texts": texts})
    text = text.replace("with: {path:", "with: {mode: sync, path:")
    found = registry_with(registry)
    return Pipeline(parse_pipeline(text, str(out / "p.yaml"), found), found).run()


def table_rows(out: Path) -> dict[tuple[str, int], list[float]]:
    import lancedb

    rows = lancedb.connect(str(out)).open_table("emb").search().limit(None).to_list()
    return {(r["id"], r["window_index"]): list(r["embedding"]) for r in rows}


def test_a_sharded_sync_publishes_the_union_then_deletes_and_keeps_what_failed(
    scale_registry: Registry, tmp_path: Path
) -> None:
    readable = [t.lstrip("!") for t in TEXTS]  # d4 and d21 readable the first time
    first = sync(scale_registry, tmp_path, readable, "{use: local}")
    assert first.changes == {"added": 30, "deleted": 0, "kept": 0, "replaced": 0, "unchanged": 0}
    before = table_rows(tmp_path)

    # d25..d29 are gone, d0 changed, d4 and d21 cannot be read this time: three shards.
    texts = ["something else", *TEXTS[1:25]]
    second = sync(scale_registry, tmp_path, texts, "{use: in-process, with: {shards: 3}}")
    assert second.shard_count == 3
    assert second.changes == {
        "added": 0,
        "deleted": 5,
        "kept": 2,
        "replaced": 1,
        "unchanged": 22,
    }
    after = table_rows(tmp_path)
    assert {doc for doc, _ in after} == {f"d{i}" for i in range(25)}
    for doc in ("d4", "d21"):  # set aside by a failure: the rows of the first run, kept
        kept = {key: vector for key, vector in before.items() if key[0] == doc}
        assert kept
        assert {k: v for k, v in after.items() if k[0] == doc} == kept
