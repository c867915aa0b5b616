"""An interrupted ``seamline run`` still writes its whole trace, seen from the user's side.

A stopped command leaves without Python's teardown of modules (which crashed in JAX after
a Ctrl-C during a compile: ``cli.stopping.leave_after_stop``), but after its exit
handlers: the trace of a stopped run must still end with its root span, marked with the
stop (docs/observability.md), and the exit code be Ctrl-C's.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import write_pipeline
from tests.faults.test_sigterm import SLOW_S, wait_for

if TYPE_CHECKING:
    from pathlib import Path


def test_a_run_stopped_by_ctrl_c_writes_its_trace_to_the_root_span(tmp_path: Path) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    trace = tmp_path / "trace.jsonl"
    env = fault_environment(
        SEAMLINE_FAULT_SLOW=SLOW_S,
        OTEL_TRACES_EXPORTER="jsonl",
        SEAMLINE_TRACES_FILE=str(trace),
    )
    running = subprocess.Popen(
        [sys.executable, "-m", "seamline", "run", pipeline.name, "--log-level", "warning"],
        cwd=pipeline.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(tmp_path / "out" / ".emb.jsonl.checkpoint", running)
    running.send_signal(signal.SIGINT)
    _, stderr = running.communicate(timeout=120)

    assert running.returncode == 130, (running.returncode, stderr)
    assert "interrupted: nothing was published" in " ".join(stderr.split()), stderr
    spans = [json.loads(line) for line in trace.read_text().splitlines()]
    (root,) = [span for span in spans if span["name"] == "seamline.run"]
    assert root["status"]["code"] == "ERROR", root
    assert root["status"]["description"].startswith("KeyboardInterrupt"), root
    assert any(span["name"] == "seamline.sink.commit" for span in spans), "no commit's span"
