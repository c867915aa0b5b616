"""Sides in processes of their own: the protocol, and peak memory that is the worker's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.common.workers import Worker, WorkerError

SIDE = """
from benchmarks.common.workers import serve


class Side:
    info = {"implementation": "test"}

    def __init__(self):
        self.calls = 0
        self.held = None

    def run_once(self):
        self.calls += 1
        self.held = bytearray(64 << 20)  # the worker's own 64 MiB, touched
        self.held[::4096] = b"\\x01" * len(self.held[::4096])
        print("a stray line on stdout must not reach the driver")
        return {"seconds": 0.5, "calls": self.calls}


serve(Side)
"""


def test_a_worker_answers_each_request_with_one_json_line(tmp_path: Path) -> None:
    worker = Worker("test", [sys.executable, "-c", SIDE], tmp_path / "test.log")
    try:
        ready = worker.receive()
        assert ready["event"] == "ready"
        assert ready["implementation"] == "test"
        assert worker.request("run") == {"seconds": 0.5, "calls": 1}
        assert worker.request("run") == {"seconds": 0.5, "calls": 2}
        assert worker.request("nonsense") == {"error": "unknown command 'nonsense'"}
        done = worker.request("quit")
        assert done["event"] == "done"
    finally:
        worker.close()
    assert "a stray line on stdout" in (tmp_path / "test.log").read_text()


def test_a_workers_peak_is_its_own_not_its_drivers(tmp_path: Path) -> None:
    # ru_maxrss survives exec: a worker started by a driver that holds a model (the
    # embed_throughput driver loads one to cut the windows) reported the driver's
    # peak. Here the driver holds 400 MiB; the worker grows by its own 64 MiB.
    held = bytearray(400 << 20)
    held[::4096] = b"\x01" * len(held[::4096])
    worker = Worker("test", [sys.executable, "-c", SIDE], tmp_path / "test.log")
    try:
        ready = worker.receive()
        worker.request("run")
        done = worker.request("quit")
    finally:
        worker.close()
    del held
    mib = 1024
    assert ready["rss_after_setup_kib"] < 300 * mib, ready
    assert ready["rss_after_setup_kib"] + 60 * mib < done["peak_rss_kib"] < 300 * mib, done


def test_a_worker_that_dies_says_so_with_its_log(tmp_path: Path) -> None:
    code = "import sys; print('the side failed to load', file=sys.stderr); sys.exit(3)"
    worker = Worker("broken", [sys.executable, "-c", code], tmp_path / "broken.log")
    try:
        with pytest.raises(WorkerError, match="exited with code 3") as raised:
            worker.receive()
    finally:
        worker.close()
    assert "the side failed to load" in str(raised.value)
