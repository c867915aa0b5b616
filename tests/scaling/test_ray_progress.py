"""On Ray, the application's monitors see every shard move while the run goes on.

The shards run in actors, the monitor given to ``Pipeline.run`` in this process: before
executor contract 1.2 it saw nothing until the end. The model sleeps in each
``collate`` so that each shard takes seconds, several of the driver's questions long.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from seamline.contracts import BatchDone, RunFinished, RunStarted, ShardProgress
from seamline.core.config import parse_pipeline
from seamline.core.job import PipelineJob
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.scaling.test_driver_progress import Recording, assert_ends_on_the_summary
from tests.scaling.test_ray_executor import pipeline_text, ray_executor

pytestmark = pytest.mark.usefixtures("ray_cluster")


def test_the_applications_monitor_sees_the_ray_shards_move_before_the_run_ends(
    scale_registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forwarded: list[tuple[float, ShardProgress]] = []
    recording = Recording()
    original = PipelineJob.progress

    def spied(job: PipelineJob, progress: ShardProgress) -> None:
        forwarded.append((time.monotonic(), progress))
        original(job, progress)

    monkeypatch.setattr(PipelineJob, "progress", spied)
    text = pipeline_text(tmp_path, executor=ray_executor(actors=2, shards=2)).replace(
        "{use: tiny}", "{use: tiny, with: {collate_seconds: 0.25}}"
    )
    resolved = parse_pipeline(text, str(tmp_path / "p.yaml"), scale_registry)
    summary = Pipeline(resolved, scale_registry).run([recording])

    (ended,) = [at for at, event in recording.events if isinstance(event, RunFinished)]
    finals = {s.shard.index: s.counts.read for s in summary.shards}
    # Both shards reported counts part-way through, before the run finished.
    midway = {p.shard.index for at, p in forwarded if 0 < p.counts.read < finals[p.shard.index]}
    assert midway == {0, 1}, forwarded
    assert all(at < ended for at, _ in forwarded)
    # The monitor saw one run whose count grew over several events before it ended.
    assert len(recording.of(RunStarted)) == 1
    shown = [event.documents for event in recording.of(BatchDone)]
    assert len({n for n in shown if 0 < n < summary.counts.read}) >= 2, shown
    assert_ends_on_the_summary(recording, summary)
