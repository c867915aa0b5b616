"""What a user is told about a run split into shards, and what it leaves behind.

In one process, with the in-process executor of ``test_job`` (no Ray): the summary and
``--format json`` name the errors files a sharded ``jsonl`` run really published (each
part's, as the manifest lists them), a resumed run counts what finished parts set aside,
a fresh sharded run warns of no resume, and a whole run's checkpoint is neither resumed
by shards nor left beside their published output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.contracts import ResumeRefused, ShardFailed
from seamline.contracts.manifest import manifest_path
from seamline.core.config import parse_pipeline
from seamline.core.job import PipelineJob
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.readback import read_errors
from tests.scaling.test_job import registry_with
from tests.scaling.test_ray_executor import SINK_FILES, pipeline_text

SHARDED = "{use: in-process, with: {shards: 3}}"
FAILS_ONCE = {"raise_at": "d20", "raise_times": 1}
"""The loader raises at d20 once (after commits: checkpoint_every is 2), then reads on."""


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, scale_registry: Registry) -> CliRunner:
    """The CLI with the test components and the in-process executor, logging left alone."""
    registry = registry_with(scale_registry)
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: registry))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    return CliRunner()


def invoke(cli: CliRunner, tmp_path: Path, *args: str) -> tuple[int, str]:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(pipeline_text(tmp_path, executor=SHARDED), encoding="utf-8")
    result = cli.invoke(app, ["run", str(pipeline), *args], env={"COLUMNS": "2000"})
    return result.exit_code, " ".join(result.output.split())


def run(
    registry: Registry,
    out: Path,
    executor: str,
    *,
    resume: bool = False,
    restart: bool = False,
    **extra: Any,
) -> Any:
    registry = registry_with(registry)
    text = pipeline_text(out, executor=executor, **extra)
    resolved = parse_pipeline(text, str(out / "p.yaml"), registry)
    return Pipeline(resolved, registry).run(resume=resume, restart=restart)


def whole_run_interrupted(registry: Registry, out: Path) -> dict[str, Any]:
    """A local run that failed after committing (its checkpoint and partial files left);
    the loader settings that resume it."""
    loader = {**FAILS_ONCE, "tries": str(out / "tries")}
    with pytest.raises(ShardFailed):
        run(registry, out, "{use: local}", loader=loader)
    assert (out / ".emb.jsonl.checkpoint").is_file()
    return loader


def leftovers(out: Path) -> list[str]:
    """A whole run's working files at the destination (checkpoint, partial files, lock)."""
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".emb.") and p.is_file())


def finish_the_first_two_parts(scale_registry: Registry, tmp_path: Path) -> None:
    """Shards 0 and 1 of a three-shard run finished, as by a driver that then died."""
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor=SHARDED)
    job = PipelineJob(parse_pipeline(text, str(tmp_path / "p.yaml"), registry), registry)
    worker = job.worker()
    try:
        for task in job.plan(3)[:2]:
            worker.run(task)
    finally:
        worker.close()
    job.close()


def test_the_summary_names_the_errors_files_each_part_published(
    cli: CliRunner, tmp_path: Path
) -> None:
    """A sharded jsonl run publishes no emb.errors.jsonl: the summary named it anyway."""
    code, output = invoke(cli, tmp_path, "--no-compile-cache")
    assert code == 0, output
    assert not (tmp_path / "emb.errors.jsonl").exists()
    assert f"in {tmp_path / 'emb.errors.jsonl'}" not in output
    assert f"the errors files of the output's 3 parts, as {tmp_path / 'emb.manifest.json'}" in (
        output
    )
    assert "seamline.contracts.readback.read_errors reads them all" in output
    named = [w.strip("(),;") for w in output.split() if w.strip("(),;").endswith(".errors.jsonl")]
    assert len(named) == 3, output
    assert all(Path(p).is_file() for p in named), named


def test_json_lists_each_parts_errors_file(cli: CliRunner, tmp_path: Path) -> None:
    code, output = invoke(cli, tmp_path, "--no-compile-cache", "--format", "json")
    assert code == 0, output
    document = json.loads(output[output.index('{"schema"') :])
    assert document["output"]["errors_path"] is None, "no one file: the schema's type kept"
    errors = document["output"]["errors_paths"]
    manifest = json.loads((tmp_path / "emb.manifest.json").read_text())
    listed = [tmp_path / part["files"]["errors"] for part in manifest["outputs"]["parts"]]
    assert errors == [str(path) for path in listed]
    # Together they hold what the reader reads: the two unreadable documents.
    lines = [json.loads(line) for path in listed for line in path.read_text().splitlines()]
    assert sorted(e["id"] for e in lines) == ["d21", "d4"]
    assert sorted(e["id"] for e in read_errors(tmp_path / "emb.jsonl") or []) == ["d21", "d4"]


def test_a_resumed_run_counts_what_finished_parts_set_aside(
    cli: CliRunner, scale_registry: Registry, tmp_path: Path
) -> None:
    """Shards 0 and 1 (holding d21 and d4, both unreadable) finished before the driver
    died; the resumed run sets nothing aside itself, and printed no ``set aside`` line."""
    finish_the_first_two_parts(scale_registry, tmp_path)
    code, output = invoke(cli, tmp_path, "--no-compile-cache", "--resume")
    assert code == 0, output
    assert "the counts are this run's work only" in output
    assert "set aside: 0 failed, 0 skipped by rule by this run, 2 in the published output" in (
        output
    )


def test_a_fresh_sharded_run_warns_of_no_resume(scale_registry: Registry, tmp_path: Path) -> None:
    """Every part recovers, so every part warned 'nothing was committed to resume from'."""
    with structlog.testing.capture_logs() as logs:
        run(scale_registry, tmp_path, SHARDED)
    assert [e["event"] for e in logs if "resume" in e["event"]] == []


def test_resuming_a_whole_run_with_shards_is_refused_naming_its_checkpoint(
    scale_registry: Registry, tmp_path: Path
) -> None:
    """It started over with a warning, recomputed every document, and left the whole run's
    checkpoint and partial files beside the published output."""
    loader = whole_run_interrupted(scale_registry, tmp_path)
    before = {name: (tmp_path / name).stat().st_size for name in leftovers(tmp_path)}
    checkpoint = tmp_path / ".emb.jsonl.checkpoint"
    with pytest.raises(ResumeRefused) as refused:
        run(scale_registry, tmp_path, SHARDED, resume=True, loader=loader)
    message = str(refused.value)
    assert f"cannot resume from the checkpoint {str(checkpoint)!r}" in message
    assert "ran as one shard, and this executor splits the run into 3" in message
    assert "--restart" in message
    assert not (tmp_path / "emb.manifest.json").exists()
    assert {name: (tmp_path / name).stat().st_size for name in leftovers(tmp_path)} == before
    # The commit is intact: the executor that made it resumes it.
    summary = run(scale_registry, tmp_path, "{use: local}", resume=True, loader=loader)
    assert summary.resumed_from is not None
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "restart"])
def test_a_sharded_run_leaves_nothing_of_an_interrupted_whole_run(
    scale_registry: Registry, tmp_path: Path, resume: bool
) -> None:
    loader = whole_run_interrupted(scale_registry, tmp_path)
    summary = run(scale_registry, tmp_path, SHARDED, resume=resume, restart=True, loader=loader)
    assert summary.shard_count == 3
    assert (tmp_path / "emb.manifest.json").is_file()
    assert leftovers(tmp_path) == []


def test_a_staged_run_resumed_as_one_shard_is_refused_and_restart_starts_over(
    scale_registry: Registry, tmp_path: Path
) -> None:
    """The refusal said 'run without --resume'; --restart did not apply to it."""
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor=SHARDED)
    job = PipelineJob(parse_pipeline(text, str(tmp_path / "p.yaml"), registry), registry)
    job.plan(3)  # the staged run a killed driver leaves
    job.close()
    with pytest.raises(ResumeRefused, match=r"this executor runs one; .* --restart"):
        run(scale_registry, tmp_path, "{use: local}", resume=True)
    summary = run(scale_registry, tmp_path, "{use: local}", resume=True, restart=True)
    assert summary.shard_count == 1
    assert (tmp_path / "emb.jsonl").is_file()
    assert not (tmp_path / ".emb.jsonl.shards").exists()


@pytest.mark.parametrize("sink", ["jsonl", "parquet"])
def test_a_sharded_runs_manifest_records_its_inputs_as_a_local_runs_does(
    scale_registry: Registry, tmp_path: Path, sink: str
) -> None:
    """A run split into shards published a manifest without ``inputs``, which a local
    run's has (docs/pipelines.md: a run records its inputs in its manifest)."""
    name = SINK_FILES[sink]
    run(scale_registry, tmp_path / "local", "{use: local}", sink=sink)
    run(scale_registry, tmp_path / "sharded", SHARDED, sink=sink)
    local, sharded = (
        json.loads(manifest_path(tmp_path / where / name).read_text())
        for where in ("local", "sharded")
    )
    assert set(sharded["inputs"]) == set(local["inputs"])
    assert sharded["inputs"]["input"] == local["inputs"]["input"]
    for section in ("loader", "model", "precision"):
        assert sharded["inputs"]["pipeline"][section] == local["inputs"]["pipeline"][section]


def test_a_resumed_sharded_runs_manifest_names_what_served_its_finished_parts(
    cli: CliRunner, scale_registry: Registry, tmp_path: Path
) -> None:
    """Shards 0 and 1 finished before the driver died: the resumed run's workers reported
    only shard 2's shapes, and the published manifest's ``attention_served`` left out what
    computed the others' rows. Each part's own manifest records it; the published one now
    names the union (a shape two parts' kernels served, both)."""
    finish_the_first_two_parts(scale_registry, tmp_path)
    parts = sorted(p for p in tmp_path.glob(".*/**/emb.manifest.json"))
    assert len(parts) == 2, parts
    part = json.loads(parts[0].read_text(encoding="utf-8"))
    served = part["attention_served"]
    assert served, "a part's manifest names what served it"
    shape = sorted(served)[0]
    part["attention_served"] = {**served, "B1:only-shard-0": "blockwise", shape: "blockwise"}
    parts[0].write_text(json.dumps(part), encoding="utf-8")  # as another worker's kernels
    code, output = invoke(cli, tmp_path, "--no-compile-cache", "--resume")
    assert code == 0, output
    published = json.loads((tmp_path / "emb.manifest.json").read_text(encoding="utf-8"))
    recorded = published["attention_served"]
    assert recorded["B1:only-shard-0"] == "blockwise"
    assert recorded[shape] == sorted({"blockwise", served[shape]})


def test_a_staged_run_resumed_under_other_numerics_variables_is_refused(
    cli: CliRunner, scale_registry: Registry, tmp_path: Path
) -> None:
    """Finished parts have no checkpoint: the staged run's record (``run.json``) keeps the
    numerics variables, and a resume under others was taken, publishing parts computed
    under two as one output."""
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor=SHARDED)
    job = PipelineJob(parse_pipeline(text, str(tmp_path / "p.yaml"), registry), registry)
    worker = job.worker()
    try:
        worker.run(job.plan(3)[0])
    finally:
        worker.close()
    job.close()
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(text, encoding="utf-8")
    flags = "--xla_cpu_enable_fast_math=false"
    result = cli.invoke(
        app, ["run", str(pipeline), "--no-compile-cache", "--resume"], env={"XLA_FLAGS": flags}
    )
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"XLA_FLAGS unset then, '{flags}' now" in said
    assert "--restart" in said
