"""A driver on the ``ray`` executor stops on SIGTERM as a local run does, not as Ray would.

``ray.init`` used to take the driver's SIGTERM over (a ``sys.exit(15)`` and a C++ handler
printing "*** SIGTERM received ..." with a stack): a ``seamline run`` a scheduler stopped
printed Ray's crash lines and exited 1. A real driver (it starts a Ray of its own) gets
SIGTERM after an actor's first commit: exit code 143, the ``interrupted (SIGTERM)`` line,
none of Ray's crash lines, nothing published; ``--resume`` then publishes what a local
run does, each record once. About half a minute on two cores.

Both drivers start a Ray of their own, so their stderr is also where
``tests/scaling/test_ray_quiet.py``'s promise is checked: neither JAX's fork warning nor
Ray's "token authentication is enabled" note, which ``ray.init`` caused, is printed
(``RAY_AUTH_MODE`` unset, so that Ray would print its note).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from tests.readback import read_records
from tests.scaling.conftest import plugin_environment
from tests.scaling.test_ray_executor import (
    assert_same_output,
    pipeline_text,
    ray_executor,
    run,
)

if TYPE_CHECKING:
    from pathlib import Path

    from seamline.core.registry import Registry

START_S = 240
"""Longest wait for the driver to start Ray and its actor to commit (a loaded 2-CPU machine)."""


def test_a_ray_driver_stopped_by_sigterm_stops_cleanly_and_resumes(
    scale_registry: Registry, tmp_path: Path
) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    reference = tmp_path / "local"
    reference.mkdir()
    run(scale_registry, reference)
    out = tmp_path / "ray"
    out.mkdir()
    slow = {"use": "faults", "with": {"sleep": 0.25}}
    executor = ray_executor(actors=1, shards=2, retries=0)  # no address: it starts Ray
    pipeline = out / "p.yaml"
    pipeline.write_text(pipeline_text(out, executor=executor, monitors=[slow]), encoding="utf-8")
    env = {**plugin_environment(), "RAY_ADDRESS": "127.0.0.1:9"}  # never a cluster found
    env.pop("RAY_AUTH_MODE", None)  # Ray's default: it would print its token note
    command = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(pipeline)]
    command += ["--no-compile-cache", "--log-level", "warning"]
    driver = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + START_S
        while not any(out.glob(".emb.jsonl.shards/*/part-*/.emb.jsonl.checkpoint")):
            assert driver.poll() is None, f"the driver ended on its own: {driver.communicate()}"
            assert time.monotonic() < deadline, "no actor committed in time"
            time.sleep(0.1)
        driver.send_signal(signal.SIGTERM)
        _, stderr = driver.communicate(timeout=120)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(30)

    assert driver.returncode == 143, stderr
    assert "interrupted (SIGTERM): nothing was published" in " ".join(stderr.split()), stderr
    assert "SIGTERM received" not in stderr, "Ray's crash lines"
    assert "Traceback" not in stderr, stderr
    assert read_records(out / "emb.jsonl") is None, "a stopped run published"
    assert_quiet(stderr)

    resumed = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert_quiet(resumed.stderr)
    assert_same_output(out, reference)


def assert_quiet(stderr: str) -> None:
    """Neither of the two lines ``ray.init`` caused (see test_ray_quiet.py)."""
    assert "os.fork() was called" not in stderr, stderr
    assert "Token authentication is enabled" not in stderr, stderr
