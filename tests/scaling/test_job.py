"""The host's side of the executor seam, in one process: staging, publication, resume checks.

These executors are the tests' own (they run tasks here through ``job.worker()``),
so the exactly-once bookkeeping of :class:`~seamline.core.job.PipelineJob` is
checked without Ray: an executor that loses a shard gets nothing published, a
finished part is not redone, and a sharded run in this process gives the records
a one-shard run gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.contracts import (
    ComponentConfig,
    ContractViolation,
    ExecutionReport,
    Executor,
    Job,
    Shard,
    ShardTask,
    UserError,
)
from seamline.contracts.manifest import validate_manifest
from seamline.core.config import parse_pipeline
from seamline.core.job import PipelineJob
from seamline.core.pipeline import Pipeline
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.seams import failed_at
from tests.readback import read_records
from tests.scaling.test_ray_executor import TEXTS, assert_same_output, pipeline_text


class InProcessConfig(ComponentConfig):
    shards: int = 3
    drop: int | None = None
    """A shard to run but leave out of the report (a broken executor)."""


class InProcessExecutor(Executor[InProcessConfig]):
    """Every shard in this process, one after the other."""

    name: ClassVar[str] = "in-process"
    contract_version: ClassVar[str] = "1.0"
    Config = InProcessConfig

    def execute(self, job: Job) -> ExecutionReport:
        tasks = job.plan(self.config.shards)
        worker = job.worker()
        try:
            reports = [worker.run(task) for task in tasks]
        finally:
            worker.close()
        kept = tuple(r for r in reports if r.shard.index != self.config.drop)
        return ExecutionReport(self.name, kept, 1, 0.0)


def registry_with(registry: Registry) -> Registry:
    info = ComponentInfo(
        "executor", "in-process", f"{__name__}:InProcessExecutor", "tests", "0", "ok", "",
        InProcessExecutor, "1.0",
    )  # fmt: skip
    return Registry([*registry.entries(), info])


def run(registry: Registry, out: Path, executor: str, *, resume: bool = False) -> Any:
    text = pipeline_text(out, executor=executor)
    resolved = parse_pipeline(text, str(out / "p.yaml"), registry_with(registry))
    return Pipeline(resolved, registry_with(registry)).run(resume=resume)


@pytest.fixture(scope="module")
def local_output(scale_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    run(scale_registry, out, "{use: local}")
    return out


def test_shards_in_one_process_give_the_one_shard_records(
    scale_registry: Registry, local_output: Path, tmp_path: Path
) -> None:
    summary = run(scale_registry, tmp_path, "{use: in-process, with: {shards: 3}}")
    assert summary.shard_count == 3
    assert summary.counts.documents == len(TEXTS) - 2
    # One worker ran all three shards: each shape was compiled once, not once per shard.
    assert summary.compilations == 2
    assert_same_output(tmp_path, local_output)


def test_an_executor_that_loses_a_shard_gets_nothing_published(
    scale_registry: Registry, tmp_path: Path
) -> None:
    with pytest.raises(
        ContractViolation, match=r"reported shards \[0, 2\] for tasks \[0, 1, 2\]"
    ) as broke:
        run(scale_registry, tmp_path, "{use: in-process, with: {shards: 3, drop: 1}}")
    assert not (tmp_path / "emb.manifest.json").exists()
    assert read_records(tmp_path / "emb.jsonl") is None
    # It named nobody, so the command line printed 80 lines of the host's frames; it now
    # names the executor and its distribution (one line), and says what a run again does.
    assert failed_at(broke.value) == "executor 'in-process' (execute, from tests 0)"
    assert "what the shards committed is kept" in str(broke.value)
    assert "run again with --resume" in str(broke.value)


def test_a_finished_part_is_reported_and_not_redone(
    scale_registry: Registry, tmp_path: Path
) -> None:
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor="{use: in-process}")
    job = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    (first, *_) = job.plan(2)
    worker = job.worker()
    try:
        done = worker.run(first)
        (part,) = tmp_path.glob(".emb.jsonl.shards/*/part-00000-of-00002/emb.jsonl")
        before = part.stat()
        again = worker.run(first)  # a retry of a task whose shard had finished
    finally:
        worker.close()
    assert done.counts.documents > 0
    assert not done.finished_before
    assert again.finished_before
    assert again.counts.documents == 0
    assert again.published is None  # what an earlier try finished is not known here
    assert (part.stat().st_ino, part.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def first_of_three_finished(
    scale_registry: Registry, tmp_path: Path
) -> tuple[Registry, str, PipelineJob]:
    """A run staged in three shards whose first one finished (as a killed driver leaves it):
    the registry, the pipeline's text and the job."""
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor="{use: in-process}")
    job = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    first, _, _ = job.plan(3)
    worker = job.worker()
    try:
        worker.run(first)
    finally:
        worker.close()
    job.close()  # the killed driver's hold on the destination died with it
    return registry, text, job


def test_a_resumed_run_plans_only_the_unfinished_shards(
    scale_registry: Registry, tmp_path: Path
) -> None:
    registry, text, job = first_of_three_finished(scale_registry, tmp_path)
    again = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry, resume=True)
    assert [task.shard.index for task in again.plan(3)] == [1, 2]
    assert again.run_id == job.run_id  # it continues the run, under the run's id
    assert again.finished_before == frozenset({0})


def test_resuming_a_staged_run_whose_input_changed_is_refused(
    scale_registry: Registry, tmp_path: Path
) -> None:
    """Only an unfinished shard with a checkpoint compared the input: a finished shard has
    none, and a resume after the corpus changed published 60 documents twice and left 61
    out, exit 0. The staged run records the inputs; executor settings may still change."""
    registry, _, _ = first_of_three_finished(scale_registry, tmp_path)  # no checkpoint left
    changed = pipeline_text(tmp_path, executor="{use: in-process}", loader={"texts": ["new"]})
    again = PipelineJob(parse_pipeline(changed, "p.yaml", registry), registry, resume=True)
    with pytest.raises(UserError, match=r"cannot resume the run staged in .*: the pipeline's "
                       r"setting loader.with.texts \(in the file or a --set\) changed since "
                       r"it began"):  # fmt: skip
        again.plan(3)
    elsewhere = pipeline_text(tmp_path, executor="{use: in-process, with: {shards: 3}}")
    resumed = PipelineJob(parse_pipeline(elsewhere, "p.yaml", registry), registry, resume=True)
    assert [task.shard.index for task in resumed.plan(3)] == [1, 2]  # where, not what


def test_resuming_parts_another_version_staged_is_refused(
    scale_registry: Registry, tmp_path: Path
) -> None:
    """A finished part has no checkpoint to compare versions: the staged run's record
    compared the model alone, so a resume after an upgrade of JAX (or of seamline)
    published parts computed by both as one output, exit 0."""
    registry, text, _ = first_of_three_finished(scale_registry, tmp_path)
    (record_path,) = tmp_path.rglob("run.json")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    assert record["versions"]["jax"]  # what made the parts is recorded
    record["versions"]["jax"] = "0.0.1"  # as the jax of last week left it
    record_path.write_text(json.dumps(record), encoding="utf-8")
    again = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry, resume=True)
    with pytest.raises(UserError, match=r"were made by another version of what computes it "
                       r"\(jax 0\.0\.1 then, .* now\); resuming would mix vectors of two "
                       r"versions"):  # fmt: skip
        again.plan(3)
    del record["versions"]  # a record from before versions were kept: not trusted either
    record_path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(
        UserError, match=r"did not record its versions in a staged run \(from before 2026-12-06\)"
    ):
        PipelineJob(parse_pipeline(text, "p.yaml", registry), registry, resume=True).plan(3)


def test_resuming_with_another_shard_count_is_refused_with_the_place(
    scale_registry: Registry, tmp_path: Path
) -> None:
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor="{use: in-process, with: {shards: 3}}")
    job = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    job.plan(3)  # the staged run a killed driver would leave
    job.close()  # (its hold on the destination died with it)
    again = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry, resume=True)
    with pytest.raises(UserError, match=r"^p\.yaml:7:\d+: cannot resume: .* split into 3 shards"):
        again.plan(2)
    one = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry, resume=True)
    with pytest.raises(UserError, match="this executor runs one"):
        one.plan(1)


def test_a_sink_that_cannot_stage_is_refused_for_several_shards(
    scale_registry: Registry, tmp_path: Path
) -> None:
    from tests.core.toy import MemorySink

    memory = ComponentInfo(
        "sink", "memory", "tests.core.toy:MemorySink", "tests", "0", "ok", "", MemorySink, "1.0"
    )
    registry = Registry([*registry_with(scale_registry).entries(), memory])
    text = pipeline_text(tmp_path, executor="{use: in-process}").replace(
        f"{{use: jsonl, with: {{path: {json.dumps(str(tmp_path / 'emb.jsonl'))}}}}}",
        "{use: memory}",
    )
    job = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    with pytest.raises(UserError, match="sink 'memory' cannot stage parts"):
        job.plan(2)


def test_tasks_carry_the_run_and_resume_from_their_part(
    scale_registry: Registry, tmp_path: Path
) -> None:
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor="{use: in-process}")
    job = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    tasks = job.plan(2)
    assert [task.shard for task in tasks] == [Shard(0, 2), Shard(1, 2)]
    assert all(isinstance(t, ShardTask) and t.run_id == job.run_id and t.resume for t in tasks)


def test_a_staged_run_holds_its_destination_from_planning_until_the_job_closes(
    scale_registry: Registry, tmp_path: Path
) -> None:
    """The parts lock only themselves: without the driver's hold, a second run staged into
    the same destination, or a whole run published over it and removed the staging area,
    while the shards wrote there (sink contract 1.6, ``hold_destination``)."""
    registry = registry_with(scale_registry)
    text = pipeline_text(tmp_path, executor="{use: in-process}")
    job = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    job.plan(3)
    (staging,) = tmp_path.glob(".emb.jsonl.shards/*")
    whole = JsonlSink(JsonlSinkConfig(path=tmp_path / "emb.jsonl"))
    with pytest.raises(
        UserError,
        match=r"another run (in this process )?\(pid \d+[^)]*\) is writing to '.*emb\.jsonl'",
    ):
        whole.start({"pipeline": "whole"})
    whole.close()
    twin = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry)
    with pytest.raises(UserError, match=r"another run in this process \(pid \d+[^)]*\) is writ"):
        twin.plan(2)
    assert staging.is_dir(), "the staged run was left alone"
    job.close()
    again = PipelineJob(parse_pipeline(text, "p.yaml", registry), registry, resume=True)
    with pytest.raises(UserError, match="split into 3 shards"):
        again.plan(2)  # refused after taking the hold: it lets go as it fails
    free = JsonlSink(JsonlSinkConfig(path=tmp_path / "emb.jsonl"))
    free.start({"pipeline": "free"})
    free.close(complete=False)


class PlansThenFails(InProcessExecutor):
    """Stages the run, then loses its cluster before any shard runs."""

    name: ClassVar[str] = "plans-then-fails"

    def execute(self, job: Job) -> ExecutionReport:
        job.plan(self.config.shards)
        raise RuntimeError("lost the cluster")


@pytest.mark.parametrize("executor", ["in-process", "plans-then-fails"])
def test_a_sharded_run_lets_go_of_its_destination_when_it_ends(
    scale_registry: Registry, tmp_path: Path, executor: str
) -> None:
    failing = ComponentInfo(
        "executor", "plans-then-fails", f"{__name__}:PlansThenFails", "tests", "0", "ok", "",
        PlansThenFails, "1.0",
    )  # fmt: skip
    registry = Registry([*registry_with(scale_registry).entries(), failing])
    text = pipeline_text(tmp_path, executor=f"{{use: {executor}}}")
    pipeline = Pipeline(parse_pipeline(text, str(tmp_path / "p.yaml"), registry), registry)
    if executor == "plans-then-fails":
        with pytest.raises(RuntimeError, match="lost the cluster"):
            pipeline.run()
        assert list(tmp_path.glob(".emb.jsonl.shards/*")), "it had staged the run"
    else:
        pipeline.run()
    assert not list(tmp_path.glob(".*.lock"))
    sink = JsonlSink(JsonlSinkConfig(path=tmp_path / "emb.jsonl"))
    sink.start({"pipeline": "next"})  # free for the next run
    sink.close(complete=False)


@pytest.mark.parametrize("executor", ["{use: local}", "{use: in-process, with: {shards: 3}}"])
def test_the_manifest_names_the_attention_that_served_each_shape(
    scale_registry: Registry, tmp_path: Path, executor: str
) -> None:
    # The manifest held the attention section as asked (use: auto, say); which
    # implementation served each shape was only in the summary and the log, though
    # reproducing the vectors bit for bit takes it.
    summary = run(scale_registry, tmp_path, executor)
    manifest = json.loads((tmp_path / "emb.manifest.json").read_text(encoding="utf-8"))
    assert summary.attention
    assert manifest["attention_served"] == dict(summary.attention)
    assert validate_manifest(manifest, "emb.manifest.json").attention_served == summary.attention
