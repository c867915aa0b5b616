"""The executor call and the sink's staging and publication calls cross a seam, like every
component call: a span each, with the component's attributes, and a failure there names
the component (``failed_at``; a shard's becomes ``ShardFailed`` naming it).

The calls are the executor's ``execute`` and ``close``, and the sink's ``staged_run``,
``begin_parts`` and ``publish_parts`` (on the driver) and ``part`` and ``finished`` (in
the worker that runs a shard). A run of three shards in this process shows them all.

The span trees docs/observability.md draws are the trees a run emits, sharded or not:
operators search traces by the names and parents the page draws. It had drifted from a
sharded run's (the driver's ``seamline.sink.start`` and ``.close``, clearing a whole run's
files before staging, were missing under ``seamline.executor.execute``, and every shard's
``seamline.sink.recover`` was drawn as ``start``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seamline.adapters.telemetry_setup import configure_telemetry, shutdown_telemetry
from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import ExecutionReport, Job, SeamCall, ShardFailed
from seamline.core.config import TelemetrySettings, parse_pipeline
from seamline.core.pipeline import Pipeline
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.seams import failed_at
from tests.core.toy import RecordingMonitor
from tests.scaling.test_job import InProcessExecutor, registry_with
from tests.scaling.test_ray_executor import pipeline_text

COMPONENTS = metadata.version("seamline-components")


class BrokenExecutor(InProcessExecutor):
    """Loses its cluster before it runs anything."""

    name: ClassVar[str] = "broken"

    def execute(self, job: Job) -> ExecutionReport:
        raise RuntimeError("lost the cluster")


def registry(scale_registry: Registry) -> Registry:
    broken = ComponentInfo(
        "executor", "broken", f"{__name__}:BrokenExecutor", "tests", "0", "ok", "",
        BrokenExecutor, "1.0",
    )  # fmt: skip
    return Registry([*registry_with(scale_registry).entries(), broken])


def pipeline(scale_registry: Registry, out: Path, executor: str) -> Pipeline:
    reg = registry(scale_registry)
    resolved = parse_pipeline(pipeline_text(out, executor=executor), str(out / "p.yaml"), reg)
    return Pipeline(resolved, reg)


@pytest.fixture
def spans(tmp_path: Path) -> Iterator[Path]:
    """Spans of the test, one JSON line each, in the file this yields (read after the test)."""
    path = tmp_path / "trace.jsonl"
    configure_telemetry(TelemetrySettings(traces=["jsonl"], traces_file=str(path)))
    try:
        yield path
    finally:
        shutdown_telemetry()


def read_spans(path: Path) -> list[dict[str, Any]]:
    shutdown_telemetry()  # flushes the exporter
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_the_driver_s_and_the_shards_sink_calls_and_the_executor_s_are_seam_spans(
    scale_registry: Registry, tmp_path: Path, spans: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)  # the run's own working directory
    RecordingMonitor.events.clear()  # an application's monitor (extra_monitors)
    recorder = RecordingMonitor(RecordingMonitor.Config())
    pipeline(scale_registry, out, "{use: in-process, with: {shards: 3}}").run([recorder])
    found = read_spans(spans)
    (root,) = [s for s in found if s["name"] == "seamline.run"]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in found:
        by_name.setdefault(span["name"], []).append(span)
    counts = {
        "seamline.executor.execute": 1,
        "seamline.executor.close": 1,
        "seamline.sink.hold_destination": 1,
        "seamline.sink.begin_parts": 1,
        "seamline.sink.part": 3,
        "seamline.sink.finished": 3,
        "seamline.sink.publish_parts": 1,
    }
    assert {name: len(by_name.get(name, [])) for name in counts} == counts
    (execute_span,) = by_name["seamline.executor.execute"]
    for name in counts:
        # The executor plans inside execute: the staging area is opened there.
        driver = {"seamline.sink.hold_destination", "seamline.sink.begin_parts"}
        parent = execute_span if name in driver else root
        for span in by_name[name]:
            attributes = span["attributes"]
            kind = name.split(".")[1]
            assert attributes["seamline.component.kind"] == kind, name
            assert span["parent_span_id"] == parent["span_id"], name  # in the run's trace
            assert span["status"]["code"] == "UNSET", name
    execute = by_name["seamline.executor.execute"][0]["attributes"]
    assert execute["seamline.component.name"] == "in-process"
    assert execute["seamline.component.distribution"] == "tests"
    assert execute["seamline.component.version"] == "0"
    assert execute["seamline.component.contract_version"] == "1.0"
    assert execute["seamline.run_id"] == root["attributes"]["seamline.run_id"]
    publish = by_name["seamline.sink.publish_parts"][0]["attributes"]
    assert publish["seamline.component.name"] == "jsonl"
    assert publish["seamline.component.distribution"] == "seamline-components"
    assert publish["seamline.component.version"] == COMPONENTS
    assert publish["seamline.shard.count"] == 3
    parts = sorted(s["attributes"]["seamline.shard.index"] for s in by_name["seamline.sink.part"])
    assert parts == [0, 1, 2]
    # The shards stay children of the run (not of execute), beside their part's calls.
    shards = [s for s in found if s["name"] == "seamline.shard"]
    assert {s["parent_span_id"] for s in shards} == {root["span_id"]}
    # The worker's calls reach its monitors, as every seam call in a shard does.
    calls = [(e.kind, e.operation) for e in RecordingMonitor.events if isinstance(e, SeamCall)]
    assert calls.count(("sink", "part")) == 3
    assert calls.count(("sink", "finished")) == 3


def test_a_resumed_run_asks_for_the_staged_run_through_its_seam(
    scale_registry: Registry, tmp_path: Path, spans: Path
) -> None:
    pipeline(scale_registry, tmp_path, "{use: in-process, with: {shards: 2}}").run(resume=True)
    (staged,) = [s for s in read_spans(spans) if s["name"] == "seamline.sink.staged_run"]
    assert staged["attributes"]["seamline.component.name"] == "jsonl"
    assert staged["attributes"]["seamline.component.distribution"] == "seamline-components"


@pytest.mark.parametrize(
    "operation", ["staged_run", "begin_parts", "publish_parts", "part", "finished"]
)
def test_a_sink_call_that_fails_names_the_sink(
    scale_registry: Registry,
    tmp_path: Path,
    spans: Path,
    monkeypatch: pytest.MonkeyPatch,
    operation: str,
) -> None:
    def fail(*_: Any, **__: Any) -> Any:
        raise RuntimeError(f"{operation} broke")

    monkeypatch.setattr(JsonlSink, operation, fail)
    where = f"sink 'jsonl' ({operation}, from seamline-components {COMPONENTS})"
    run = pipeline(scale_registry, tmp_path, "{use: in-process, with: {shards: 2}}")
    with pytest.raises((RuntimeError, ShardFailed), match=f"{operation} broke") as caught:
        run.run(resume=operation == "staged_run")
    error = caught.value
    if operation in ("part", "finished"):  # in a shard: the shard says where it failed
        assert isinstance(error, ShardFailed)
        assert error.component == where
        assert error.reason == f"RuntimeError: {operation} broke"
    else:
        assert isinstance(error, RuntimeError)
        assert failed_at(error) == where
    found = read_spans(spans)
    failed = [s for s in found if s["name"] == f"seamline.sink.{operation}"]
    assert failed, f"no span for {operation}"
    assert failed[-1]["status"]["code"] == "ERROR"
    # The run (and a failed shard) record the error once: they recorded it, and
    # OpenTelemetry's span recorded it again (two identical exception events).
    parts = [s for s in found if s["name"] in ("seamline.run", "seamline.shard")]
    failed_parts = [s for s in parts if s["status"]["code"] == "ERROR"]
    assert "seamline.run" in [s["name"] for s in failed_parts]
    for span in failed_parts:
        assert [e["name"] for e in span["events"]].count("exception") == 1, span["name"]
    assert not (tmp_path / "emb.manifest.json").exists()  # nothing was published


def test_an_executor_that_fails_is_named(
    scale_registry: Registry, tmp_path: Path, spans: Path
) -> None:
    with pytest.raises(RuntimeError, match="lost the cluster") as caught:
        pipeline(scale_registry, tmp_path, "{use: broken}").run()
    assert failed_at(caught.value) == "executor 'broken' (execute, from tests 0)"
    found = read_spans(spans)
    (execute,) = [s for s in found if s["name"] == "seamline.executor.execute"]
    assert execute["status"]["code"] == "ERROR"
    assert execute["attributes"]["seamline.component.name"] == "broken"
    assert [s["name"] for s in found].count("seamline.executor.close") == 1


PAGE = Path(__file__).parents[2] / "docs" / "observability.md"
SEAMS = "the seam spans below"
"""What the driver's tree puts under ``seamline.shard``: the bare orchestrator's tree."""


def _trees() -> list[list[str]]:
    """The page's code blocks that draw a tree rooted at ``seamline.run``: the driver's, then
    a bare orchestrator's (what each ``seamline.shard`` holds)."""
    blocks = re.findall(r"```\n(seamline\.run .*?)```", PAGE.read_text("utf-8"), re.S)
    return [block.splitlines() for block in blocks[:2]]


def _pairs(lines: list[str]) -> set[tuple[str, str]]:
    """The (parent, child) pairs one tree draws: a child's name is indented past its
    parent's, after the tree's ``├──``/``└──``; notes' continuations and events are not spans."""
    pairs = set()
    stack: list[tuple[int, str]] = []
    for line in lines:
        drawn = re.match(r"^[│ ]*[├└]── ", line)
        if drawn is None:
            if line.startswith("seamline.run "):
                stack = [(0, "seamline.run")]
            continue
        depth = drawn.end()
        name = SEAMS if line[depth:].startswith(SEAMS) else line[depth:].split()[0]
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            pairs.add((stack[-1][1], name))
        stack.append((depth, name))
    return pairs


def documented() -> set[tuple[str, str]]:
    """Every (parent, child) span-name pair the page draws, a shard's seam spans included."""
    driver, bare = (_pairs(lines) for lines in _trees())
    seams = {("seamline.shard", child) for parent, child in bare if parent == "seamline.run"}
    assert ("seamline.shard", SEAMS) in driver, "the driver's tree points at the seam spans"
    return (driver | seams) - {("seamline.shard", SEAMS)}


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("resume", [False, True])
def test_every_span_is_drawn_under_its_parent(
    scale_registry: Registry,
    tmp_path: Path,
    spans: Path,
    monkeypatch: pytest.MonkeyPatch,
    shards: int,
    resume: bool,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    executor = f"{{use: in-process, with: {{shards: {shards}}}}}"
    pipeline(scale_registry, out, executor).run(resume=resume)
    found = read_spans(spans)
    names = {span["span_id"]: span["name"] for span in found}
    emitted = {(names[s["parent_span_id"]], s["name"]) for s in found if s["parent_span_id"]}
    assert emitted - documented() == set(), "spans the page does not draw where they are"
    if shards > 1:  # what the page says of a staged run's parts and of its driver
        in_shard = {child for parent, child in emitted if parent == "seamline.shard"}
        assert {"seamline.sink.recover"} <= in_shard
        assert not {"seamline.sink.start", "seamline.loader.size"} & in_shard
        in_execute = {child for parent, child in emitted if parent == "seamline.executor.execute"}
        assert {"seamline.sink.start", "seamline.sink.close"} <= in_execute
