"""A rename failing while a staged (sharded) parquet or lancedb run is published.

The driver published the manifest first, then the errors file and the output: a rename
failing after it (a permission, an I/O error) left the new manifest beside the previous
files, which every reader refused ("Republished ... counted 5"), and ``--resume`` found
the run published and started over, computing every shard again. Now the files go out
first, the manifest last, the finished parts deleted only after it; a failed rename puts
back what the renames before it replaced. So after the failure the previous output is
read as it was, under its own manifest, and ``--resume`` publishes the staged run (its
parts as they were finished, the run id kept): what an uninterrupted run publishes.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.core.registry import Registry
from tests.readback import read_records
from tests.scaling.test_job import registry_with

PATHS = {"parquet": "out/emb.parquet", "lancedb": "out/emb.lance"}
RENAMES = {
    "parquet": ["emb.errors.jsonl", "emb.parquet", "emb.manifest.json"],
    "lancedb": ["emb.errors.jsonl", "emb.manifest.json"],
}
"""The renames of each sink's publication into ``out``, in their order."""
CASES = [(sink, name) for sink, names in RENAMES.items() for name in names]
SHARDED = "{use: in-process, with: {shards: 3}}"


def write_pipeline(folder: Path, sink: str, texts: list[str]) -> None:
    (folder / "p.yaml").write_text(
        "pipeline: staged\n"
        f"loader: {{use: lines, with: {{texts: {json.dumps(texts)}}}}}\n"
        "model: {use: tiny}\nattention: {use: native}\n"
        f"sink: {{use: {sink}, with: {{path: {PATHS[sink]}}}}}\n"
        f"run: {{batch_size: 2, buckets: [4, 8], checkpoint_every: 2, executor: {SHARDED}}}\n",
        encoding="utf-8",
    )


def run(registry: Registry, folder: Path, *flags: str, fail: str | None = None) -> Any:
    """``seamline run p.yaml`` from ``folder``; ``fail``: the rename onto ``out/<fail>``
    fails (the driver's publication, not a part's)."""
    real = os.replace

    def replace(source: Any, destination: Any) -> None:
        target = Path(destination)
        if fail is not None and target.name == fail and target.parent.name == "out":
            raise PermissionError(13, "Permission denied", str(target))
        real(source, destination)

    with contextlib.chdir(folder), pytest.MonkeyPatch.context() as patch:
        patch.setattr(Registry, "discover", classmethod(lambda cls, trust: registry))
        patch.setattr(os, "replace", replace)
        return CliRunner().invoke(app, ["run", "p.yaml", *flags], env={"COLUMNS": "2000"})


def ids(folder: Path, sink: str) -> list[str]:
    return sorted(r.doc_id for r in read_records(folder / PATHS[sink]))


@pytest.mark.parametrize(("sink", "fail"), CASES)
def test_a_failed_rename_keeps_the_previous_output_and_resume_publishes_the_run_once(
    scale_registry: Registry, tmp_path: Path, sink: str, fail: str
) -> None:
    registry = registry_with(scale_registry)
    write_pipeline(tmp_path, sink, ["alpha one", "beta two", "gamma three"])
    assert run(registry, tmp_path).exit_code == 0
    out = tmp_path / "out"
    manifest = (out / "emb.manifest.json").read_bytes()
    previous = ids(tmp_path, sink)

    write_pipeline(tmp_path, sink, ["delta four", "epsilon five", "zeta six", "eta seven"])
    failed = run(registry, tmp_path, fail=fail)
    assert failed.exit_code == 1, failed.output
    assert "Permission denied" in failed.output
    assert (out / "emb.manifest.json").read_bytes() == manifest, "the manifest goes out last"
    assert ids(tmp_path, sink) == previous, "the previous output is read as it was"
    shards = out / f".{Path(PATHS[sink]).name}.shards"
    (staged,) = [p.name for p in shards.iterdir() if not p.name.startswith(".")]
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]

    resumed = run(registry, tmp_path, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "emb.manifest.json").read_text())["run_id"] == staged
    assert ids(tmp_path, sink) == ["d0", "d1", "d2", "d3"]
    assert not shards.exists()
