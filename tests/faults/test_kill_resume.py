"""Crash-proven resume: real ``seamline run`` processes killed at seeded points, then resumed.

Each interrupted run is a subprocess (``seamline run``) that dies by SIGKILL at one
point: before a write, before a commit, in the middle of a commit (the new checkpoint
written, not yet renamed into place), just after a commit, before each rename while
publishing (the ``fault-jsonl`` sink's ``SEAMLINE_FAULT_KILL`` hook, so the pipeline
file is the same for the resume), and at seeded random moments; once by SIGTERM.
The runs killed at a moment are slowed down (``SEAMLINE_FAULT_SLOW``: a sleep before
each write), so that the moment falls inside the run on a fast machine too.
Each is then resumed with ``seamline run --resume`` (in this process, to keep the
harness quick), and the published output must equal an uninterrupted run's: every
document exactly once, identical embeddings, nothing hidden left behind.

Select it with ``-m kill``; it takes about a minute on two cores.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.core.registry import Registry
from tests.faults.conftest import PLUGIN, SCALE_PLUGIN, fault_environment

DOCUMENTS = 48
SEED = 11
PIPELINE = """\
pipeline: kill-resume
loader: {{use: fault-loader, with: {{documents: {documents}}}}}
model: {{use: tiny}}
attention: {{use: native}}
sink: {{use: fault-jsonl, with: {{path: {path}}}}}
run: {{batch_size: 4, buckets: [8, 16], checkpoint_every: 6}}
"""
COMMITS = DOCUMENTS // 6
SLOW_S = 1.0
"""Sleep before each write of a run killed at a moment: 12 writes or more (48 documents in
batches of 4) outlast the latest moment, 6 s, on any machine."""


def kill_points(seed: int = SEED) -> list[str]:
    """The seeded kill points: every hook kind, at seeded positions, and seeded moments."""
    rng = random.Random(seed)
    points = [f"write:{n}" for n in sorted(rng.sample(range(1, 13), 4))]
    points += [f"commit:{n}" for n in sorted(rng.sample(range(1, COMMITS), 3))]
    points += [f"mid-commit:{n}" for n in sorted(rng.sample(range(1, COMMITS), 4))]
    points += [f"after-commit:{n}" for n in sorted(rng.sample(range(1, COMMITS), 3))]
    points += ["publish:1", "publish:2", "publish:3"]  # manifest, errors file, records file
    points += [f"after:{rng.uniform(2.0, 6.0):.2f}" for _ in range(3)]  # seconds after start
    return points


POINTS = kill_points()


@pytest.fixture(scope="module")
def discovered() -> Registry:
    """Discovery as the subprocesses see it: the installed components and the fixtures."""
    sys.path[:0] = [str(PLUGIN), str(SCALE_PLUGIN)]
    try:
        return Registry.discover()
    finally:
        del sys.path[:2]


@pytest.fixture
def cli(discovered: Registry, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """``seamline run`` in this process, seeing the fixtures, leaving global telemetry alone."""
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls: discovered))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    monkeypatch.delenv("SEAMLINE_FAULT_KILL", raising=False)
    return CliRunner()


def write_pipeline(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / "out" / "emb.jsonl"
    pipeline = directory / "pipeline.yaml"
    text = PIPELINE.format(documents=DOCUMENTS, path=json.dumps(str(out)))
    pipeline.write_text(text, encoding="utf-8")
    return pipeline


def run_in_process(cli: CliRunner, pipeline: Path, *flags: str) -> None:
    result = cli.invoke(app, ["run", str(pipeline), "--no-compile-cache", *flags])
    assert result.exit_code == 0, result.output


def interrupted(pipeline: Path, point: str, cache: Path) -> int:
    """Run ``seamline run`` in a subprocess until it dies at ``point``; its return code."""
    env = fault_environment(SEAMLINE_CACHE_DIR=str(cache))
    seamline = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(pipeline)]
    if point.startswith(("after:", "term:")):
        kind, _, delay = point.partition(":")
        env["SEAMLINE_FAULT_SLOW"] = str(SLOW_S)
        process = subprocess.Popen(
            [*seamline, "--log-level", "warning"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(float(delay))
        sent = signal.SIGTERM if kind == "term" else signal.SIGKILL
        process.send_signal(sent)
        code = process.wait(timeout=120)
        assert code == -sent, (point, code, "the run ended before the signal")
        return code
    env["SEAMLINE_FAULT_KILL"] = point
    done = subprocess.run(
        [*seamline, "--log-level", "warning"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, (point, done.returncode, done.stderr[-2000:])
    return done.returncode


def published(directory: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The published records, and every file left in the output folder."""
    out = directory / "out"
    lines = (out / "emb.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines], sorted(p.name for p in out.iterdir())


@pytest.mark.kill
def test_every_kill_point_resumes_to_the_uninterrupted_output(
    cli: CliRunner, tmp_path: Path
) -> None:
    assert len(POINTS) >= 20
    reference_dir = tmp_path / "reference"
    run_in_process(cli, write_pipeline(reference_dir))
    expected, files = published(reference_dir)
    assert len({(r["id"], r["window"]) for r in expected}) == len(expected) == DOCUMENTS
    points = [*POINTS, f"term:{random.Random(SEED + 1).uniform(2.0, 6.0):.2f}"]
    cache = tmp_path / "jax-cache"  # shared: only the first subprocess compiles
    runs = {point: write_pipeline(tmp_path / point.replace(":", "-")) for point in points}
    with ThreadPoolExecutor(max_workers=2) as pool:  # two cores: two runs at a time
        ended = pool.map(lambda point: interrupted(runs[point], point, cache), runs)
        codes = dict(zip(runs, ended, strict=True))
    for point, pipeline in runs.items():
        run_in_process(cli, pipeline, "--resume")
        got, left = published(pipeline.parent)
        assert got == expected, f"killed at {point} (rc {codes[point]}): output differs"
        assert left == files, f"killed at {point}: {left} left in the output folder"


def test_a_second_run_on_the_same_destination_refuses_and_leaves_the_first_alone(
    cli: CliRunner, tmp_path: Path
) -> None:
    reference_dir = tmp_path / "reference"
    run_in_process(cli, write_pipeline(reference_dir))
    expected, files = published(reference_dir)
    pipeline = write_pipeline(tmp_path / "shared")
    # Slow the first run down (the scaling fixtures' monitor sleeps after every batch).
    text = pipeline.read_text(encoding="utf-8")
    pipeline.write_text(
        text.replace("run:", "monitors: [{use: faults, with: {sleep: 0.2}}]\nrun:"),
        encoding="utf-8",
    )
    lock = pipeline.parent / "out" / ".emb.jsonl.lock"
    seamline = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(pipeline)]
    env = fault_environment(SEAMLINE_CACHE_DIR=str(tmp_path / "jax-cache"), COLUMNS="400")
    first = subprocess.Popen(
        [*seamline, "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not lock.exists():  # the first run holds the destination
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never took the lock"
            time.sleep(0.05)
        second = subprocess.run(seamline, env=env, capture_output=True, text=True, timeout=120)
        assert first.poll() is None, "the first run was still running during the second"
    finally:
        _, err = first.communicate(timeout=120)
    assert second.returncode == 2, second.stderr
    line = " ".join(second.stderr.split())
    assert "Traceback" not in second.stderr
    assert line.startswith(f"error: another run (pid {first.pid}) is writing to "), line
    assert str(pipeline.parent / "out" / "emb.jsonl") in line
    assert first.returncode == 0, err
    got, left = published(pipeline.parent)
    assert got == expected, "the first run was not disturbed"
    assert left == files
