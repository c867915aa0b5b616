"""The same pipeline file on one process and on a Ray actor pool: one exactly-once output.

Every test compares against the output of the ``local`` executor on the same
corpus, record for record (id, window, span, metadata) and vector for vector, read
back through the manifest as any reader would. The ray runs share the session's
cluster (two CPUs); the faults are real: an actor process killed with ``os._exit``
mid-shard, a driver process killed with SIGKILL, a loader that raises every time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.adapters.search import search
from seamline.adapters.telemetry_setup import configure_telemetry, shutdown_telemetry
from seamline.contracts import ShardFailed, UserError
from seamline.core.config import parse_pipeline
from seamline.core.config.user import user_trust
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.readback import read_errors, read_records
from tests.scaling.conftest import plugin_environment

pytestmark = pytest.mark.usefixtures("ray_cluster")

# 30 documents of 1 to 7 words (buckets 4 and 8), two unreadable: several batches per
# shard, and set-aside documents in more than one shard.
TEXTS = [" ".join(f"w{i}x{j}" for j in range(1 + i % 7)) for i in range(30)]
TEXTS[4] = "!unreadable"
TEXTS[21] = "!unreadable"


SINK_FILES = {
    "jsonl": "emb.jsonl",
    "npy": "emb.npy",
    "parquet": "emb.parquet",
    "lancedb": "emb.lance",
}
"""Where each sink writes under a test's folder (its ``path``)."""


def pipeline_text(
    out: Path, *, executor: str = "{use: local}", sink: str = "jsonl", **extra: Any
) -> str:
    loader = {"texts": TEXTS, **extra.pop("loader", {})}
    monitors = extra.pop("monitors", [])
    telemetry = extra.pop("telemetry", None)
    text = (
        "pipeline: scaling\n"
        f"loader: {{use: lines, with: {json.dumps(loader)}}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        f"monitors: {json.dumps(monitors)}\n"
        f"sink: {{use: {sink}, with: {{path: {json.dumps(str(out / SINK_FILES[sink]))}}}}}\n"
        f"run: {{batch_size: 2, buckets: [4, 8], checkpoint_every: 2, executor: {executor}}}\n"
    )
    if telemetry:
        text += f"telemetry: {json.dumps(telemetry)}\n"
    return text


def run(registry: Registry, out: Path, **kwargs: Any) -> Any:
    resolved = parse_pipeline(pipeline_text(out, **kwargs), str(out / "p.yaml"), registry)
    return Pipeline(resolved, registry).run()


@pytest.fixture(scope="module")
def local_output(scale_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    summary = run(scale_registry, out)
    assert summary.counts.documents == len(TEXTS) - 2
    return out


def keyed(out: Path, sink: str = "jsonl") -> dict[tuple[str, int], Any]:
    records = read_records(out / SINK_FILES[sink])
    assert records is not None, f"nothing published in {out}"
    keys = [(r.doc_id, r.index) for r in records]
    assert len(set(keys)) == len(keys), "a record was published more than once"
    return {(r.doc_id, r.index): r for r in records}


def assert_same_output(out: Path, reference: Path, sink: str = "jsonl") -> None:
    """The same records, each exactly once (vectors within 1e-6), and the same errors."""
    got, expected = keyed(out, sink), keyed(reference, sink)
    assert sorted(got) == sorted(expected)
    for key, record in expected.items():
        assert tuple(got[key].span) == tuple(record.span)
        np.testing.assert_allclose(got[key].vector, record.vector, atol=1e-6, rtol=0)
    name = SINK_FILES[sink]
    errors = sorted(e["id"] for e in read_errors(out / name) or [])
    assert errors == sorted(e["id"] for e in read_errors(reference / name) or [])


def ray_executor(**settings: Any) -> str:
    return "{use: ray, with: " + json.dumps({"cpus_per_actor": 1, **settings}) + "}"


def test_ray_gives_the_records_local_gives(
    scale_registry: Registry, local_output: Path, tmp_path: Path
) -> None:
    traces = tmp_path / "trace.jsonl"
    settings = {"traces": ["jsonl"], "traces_file": str(traces)}
    from seamline.core.config import TelemetrySettings

    configure_telemetry(TelemetrySettings.model_validate(settings))
    try:
        summary = run(
            scale_registry,
            tmp_path,
            executor=ray_executor(actors=2, shards=3),
            telemetry=settings,
        )
    finally:
        shutdown_telemetry()
    assert_same_output(tmp_path, local_output)
    # One summary over every actor.
    assert summary.executor == "ray"
    assert [s.shard.index for s in summary.shards] == [0, 1, 2]
    assert summary.workers == 2
    assert summary.counts.documents == len(TEXTS) - 2
    assert summary.counts.failed_documents == 2
    assert summary.counts.examples == len(keyed(tmp_path))
    # Each actor compiled each of the two bucket shapes once, whatever its number of shards.
    assert summary.compilations == 2 * 2
    # Published as one manifest naming the three parts; nothing else is visible.
    manifest = json.loads((tmp_path / "emb.manifest.json").read_text())
    assert [part["shard"] for part in manifest["outputs"]["parts"]] == [[0, 3], [1, 3], [2, 3]]
    assert manifest["run_id"] == summary.run_id
    visible = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert visible == ["emb.manifest.json", "trace.jsonl"]
    # Every actor's spans are in the run's trace, under the driver's run span.
    spans = [json.loads(line) for line in traces.read_text().splitlines()]
    (root,) = [s for s in spans if s["name"] == "seamline.run"]
    shards = [s for s in spans if s["name"] == "seamline.shard"]
    assert sorted(s["attributes"]["seamline.shard.index"] for s in shards) == [0, 1, 2]
    assert {s["trace_id"] for s in spans} == {root["trace_id"]}
    assert {s["parent_span_id"] for s in shards} == {root["span_id"]}
    assert len({s["attributes"]["seamline.worker"] for s in shards}) == 2
    assert any(s["name"] == "seamline.model.apply" for s in spans)
    # `seamline search` reads every part through the manifest: the same hits as local's.
    query = TEXTS[29]  # d29: shard 2's
    hits = search(scale_registry, tmp_path / "emb.jsonl", query, k=3)
    expected = search(scale_registry, local_output / "emb.jsonl", query, k=3)
    assert [h.doc_id for h in hits] == [h.doc_id for h in expected]
    assert hits[0].doc_id == "d29"
    np.testing.assert_allclose([h.score for h in hits], [h.score for h in expected], atol=1e-6)


@pytest.mark.parametrize("sink", ["lancedb", "parquet"])
def test_the_columnar_sinks_stage_on_ray_into_the_output_a_local_run_writes(
    scale_registry: Registry, tmp_path: Path, sink: str
) -> None:
    local, sharded = tmp_path / "local", tmp_path / "ray"
    run(scale_registry, local, sink=sink)
    summary = run(scale_registry, sharded, sink=sink, executor=ray_executor(actors=2))
    assert [s.shard.index for s in summary.shards] == [0, 1]
    assert summary.workers == 2
    assert_same_output(sharded, local, sink)
    # One ordinary output at the configured path, named by the manifest with the run.
    name = SINK_FILES[sink]
    visible = sorted(p.name for p in sharded.iterdir() if not p.name.startswith("."))
    assert visible == sorted(["emb.errors.jsonl", "emb.manifest.json", name])
    assert not (sharded / f".{name}.shards").exists(), "the staging area was deleted"
    manifest = json.loads((sharded / "emb.manifest.json").read_text())
    assert manifest["outputs"]["run_id"] == summary.run_id
    assert manifest["outputs"]["files"][{"lancedb": "table", "parquet": "parquet"}[sink]] == name
    if sink == "lancedb":
        import lancedb

        table = lancedb.connect(str(sharded)).open_table("emb")
        assert len(table.list_versions()) == 1, "the parts' rows went in as one version"
    # `seamline search` finds the same neighbours in both.
    for document in (29, 6):  # shard 1's, shard 0's
        hits = search(scale_registry, sharded / name, TEXTS[document], k=3)
        expected = search(scale_registry, local / name, TEXTS[document], k=3)
        assert hits[0].doc_id == f"d{document}"
        assert [h.doc_id for h in hits] == [h.doc_id for h in expected]
        np.testing.assert_allclose([h.score for h in hits], [h.score for h in expected], atol=1e-5)


def test_an_npy_output_with_more_shards_than_documents_reads_back(
    scale_registry: Registry, tmp_path: Path
) -> None:
    """A shard with no rows wrote a (0, 0) part: every read of the output failed ("a
    vector of 0 values where the index's model makes ..."), after a run that exited 0."""
    texts = TEXTS[:2]
    summary = run(
        scale_registry,
        tmp_path,
        sink="npy",
        loader={"texts": texts},
        executor=ray_executor(actors=1, shards=3),
    )
    assert summary.counts.documents == 2
    records = keyed(tmp_path, "npy")
    assert sorted(doc for doc, _ in records) == ["d0", "d1"]
    hits = search(scale_registry, tmp_path / "emb.npy", texts[1], k=2)
    assert hits[0].doc_id == "d1"


def test_an_actor_killed_mid_shard_resumes_from_its_last_commit(
    scale_registry: Registry, local_output: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    faults = {"use": "faults", "with": {"exit_at_batch": 3, "marker": str(marker)}}
    summary = run(
        scale_registry,
        tmp_path,
        executor=ray_executor(actors=1, shards=2, max_restarts=2, retries=0),
        monitors=[faults],
    )
    assert marker.exists(), "the actor was never killed: the test tested nothing"
    assert_same_output(tmp_path, local_output)
    # The retried shard continued after its last commit instead of starting over.
    assert any(s.resumed_from is not None for s in summary.shards), summary.shards
    # The summary counts what is published, the killed attempt's commits included.
    published = summary.published
    assert published is not None
    assert (published.read, published.documents, published.failed_documents) == (30, 28, 2)
    assert published.examples == len(keyed(tmp_path))
    assert summary.counts.documents < published.documents, "the kill lost no committed work?"


def test_a_shard_that_fails_for_good_stops_the_run_and_publishes_nothing(
    scale_registry: Registry, tmp_path: Path
) -> None:
    tries = tmp_path / "tries"
    with pytest.raises(ShardFailed) as caught:
        run(
            scale_registry,
            tmp_path,
            executor=ray_executor(actors=2, shards=2, retries=1),
            loader={"raise_at": "d5", "tries": str(tries)},
        )
    # The first try and exactly `retries` more: not one fewer, not one more.
    assert len(tries.read_text().splitlines()) == 2
    failure = caught.value
    assert (failure.index, failure.count) == (1, 2)  # d5 is shard 1's (5 % 2)
    assert failure.component == "loader 'lines' (read, from seamline-fixture-scale 0.1.0)"
    assert "OSError: cannot read d5" in failure.reason
    assert "nothing was published" in str(failure)
    # d1 and d3 were committed (checkpoint_every: 2) before d5 failed, and the retry resumed
    # that commit: the actor's process says so, and the message may promise it.
    assert failure.committed is True
    assert "continue from the shards' last commits" in str(failure)
    assert not (tmp_path / "emb.manifest.json").exists()
    assert read_records(tmp_path / "emb.jsonl") is None


def test_a_shard_that_fails_before_its_first_commit_is_not_promised_one(
    scale_registry: Registry, tmp_path: Path
) -> None:
    with pytest.raises(ShardFailed) as caught:
        run(
            scale_registry,
            tmp_path,
            executor=ray_executor(actors=1, shards=2, retries=0),
            loader={"raise_at": "d1"},  # shard 1's first document
        )
    failure = caught.value
    assert (failure.index, failure.committed) == (1, False)
    assert "shard 1 committed nothing" in str(failure)
    assert "shard 1 starts from its beginning" in str(failure)


def test_a_component_that_fails_as_the_actor_builds_it_is_one_clear_failure(
    scale_registry: Registry, tmp_path: Path
) -> None:
    # Raised in the actor's constructor, it killed the actor in its creation task: Ray's
    # tracebacks, "died more often than max_restarts (3) allows", and exit code 1 even for
    # a user's mistake, whose cause was only in Ray's output.
    with pytest.raises(UserError) as mistake:
        run(
            scale_registry,
            tmp_path / "user",
            executor=ray_executor(actors=2, shards=2),
            monitors=[{"use": "faults", "with": {"fail_at_build": "user"}}],
        )
    assert str(mistake.value) == "faults: /etc/faults.key is missing; create it"
    with pytest.raises(ShardFailed) as crashed:
        run(
            scale_registry,
            tmp_path / "crash",
            executor=ray_executor(actors=1, shards=2, retries=2),
            monitors=[{"use": "faults", "with": {"fail_at_build": "crash"}}],
        )
    failure = crashed.value
    assert (failure.index, failure.count) == (0, 2)  # the shard it was given, not "0 of 1"
    assert failure.component.startswith("monitor 'faults' (build"), failure.component
    assert failure.reason == "RuntimeError: faults: cannot open its device"
    assert "max_restarts" not in str(failure)
    assert not (tmp_path / "crash" / "emb.manifest.json").exists()


@pytest.mark.parametrize("retries", [1, 2])
def test_a_shard_that_fails_as_often_as_it_may_be_retried_still_finishes(
    scale_registry: Registry, local_output: Path, tmp_path: Path, retries: int
) -> None:
    # Shard 1 fails `retries` times (once, then twice), then reads on: the run must finish.
    tries = tmp_path / "tries"
    summary = run(
        scale_registry,
        tmp_path,
        executor=ray_executor(actors=1, shards=2, retries=retries),
        loader={"raise_at": "d5", "raise_times": retries, "tries": str(tries)},
    )
    assert len(tries.read_text().splitlines()) == retries, "the shard failed as often as meant"
    assert_same_output(tmp_path, local_output)
    assert [s.shard.index for s in summary.shards] == [0, 1]


PROBE = '''
"""A monitor found only on the driver's PYTHONPATH: it records the process it ran in."""
import os
from pathlib import Path
from typing import ClassVar

from seamline.contracts import ComponentConfig, Monitor


class ProbeConfig(ComponentConfig):
    folder: str


class Probe(Monitor[ProbeConfig]):
    name: ClassVar[str] = "probe"
    contract_version: ClassVar[str] = "1.0"
    Config = ProbeConfig

    def __init__(self, config: ProbeConfig) -> None:
        super().__init__(config)
        Path(config.folder, str(os.getpid())).touch()

    def observe(self, event: object) -> None:
        pass
'''


def probe_distribution(folder: Path) -> Path:
    """A distribution of one monitor, ``probe``, in ``folder`` (to put on PYTHONPATH)."""
    folder.mkdir()
    (folder / "seamline_fixture_probe.py").write_text(PROBE)
    info = folder / "seamline_fixture_probe-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seamline-fixture-probe\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[seamline.monitor]\nprobe = seamline_fixture_probe:Probe\n"
    )
    (info / "RECORD").write_text(
        "seamline_fixture_probe.py,,\n"
        + "".join(f"{info.name}/{name},,\n" for name in ("METADATA", "entry_points.txt", "RECORD"))
    )
    return folder


def test_the_drivers_pythonpath_joins_the_clusters_instead_of_replacing_it(
    scale_registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cluster's workers find the `lines` loader and the `tiny` model on the cluster's
    # own path (the session cluster's PYTHONPATH); the user sets PYTHONPATH to a folder of
    # their own with the `probe` monitor. The actors must find all three.
    plugins = probe_distribution(tmp_path / "plugins")
    (tmp_path / "ran").mkdir()
    monkeypatch.setenv("PYTHONPATH", str(plugins))
    monkeypatch.syspath_prepend(str(plugins))
    registry = Registry.discover(user_trust())
    probe = {"use": "probe", "with": {"folder": str(tmp_path / "ran")}}
    summary = run(registry, tmp_path, executor=ray_executor(actors=1, shards=2), monitors=[probe])
    assert summary.counts.documents == len(TEXTS) - 2
    actors = {int(p.name) for p in (tmp_path / "ran").iterdir()} - {os.getpid()}
    assert actors, "the probe never ran in an actor"


def _seamline(*args: str) -> list[str]:
    return [sys.executable, "-m", "seamline.adapters.cli.main", *args]


def _wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_a_driver_killed_after_commits_resumes_without_redoing_finished_shards(
    ray_cluster: str, local_output: Path, tmp_path: Path
) -> None:
    slow = {"use": "faults", "with": {"sleep": 0.25}}
    pipeline = tmp_path / "p.yaml"
    executor = ray_executor(address=ray_cluster, actors=1, shards=3, retries=0)
    pipeline.write_text(pipeline_text(tmp_path, executor=executor, monitors=[slow]))
    env = {**plugin_environment(), "SEAMLINE_CACHE_DIR": str(tmp_path / "cache")}
    command = _seamline("run", str(pipeline), "--log-format", "json", "--no-compile-cache")
    driver = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    staging = tmp_path / ".emb.jsonl.shards"
    try:

        def first_done_second_committed() -> bool:
            finished = list(staging.glob("*/part-00000-of-00003/emb.jsonl"))
            committed = list(staging.glob("*/part-00001-of-00003/.emb.jsonl.checkpoint"))
            if driver.poll() is not None:
                pytest.fail(f"the driver ended early: {driver.stdout.read()!r}")  # type: ignore[union-attr]
            return bool(finished and committed)

        _wait_for(first_done_second_committed, 240, "shard 0 finished and shard 1 committed")
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert not (tmp_path / "emb.manifest.json").exists(), "published before every shard finished"
    (finished,) = staging.glob("*/part-00000-of-00003/emb.jsonl")
    before = finished.stat()

    resumed = subprocess.run(
        [*command, "--resume", "-v"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    said = " ".join(resumed.stdout.split())
    assert "3 shards, 2 run on 1 workers; shards [0] were finished before and not redone" in said
    assert "the counts are this run's work only" in said  # shard 0's are not known here
    after = finished.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert_same_output(tmp_path, local_output)
