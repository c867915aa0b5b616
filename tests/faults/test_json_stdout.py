"""``seamline run --format json`` keeps stdout for its one document, at the descriptor too.

What a component printed while the run ran was moved off stdout for Python's ``print``
only: a C library writing to descriptor 1 (here the fixture sink's ``os.write(1, ...)``
at each write) went into the middle of the document a script parses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import DOCUMENTS, write_pipeline

if TYPE_CHECKING:
    from pathlib import Path

SEAMLINE = (sys.executable, "-m", "seamline.adapters.cli.main")


def test_what_a_component_writes_to_descriptor_1_stays_off_the_json_document(
    tmp_path: Path,
) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    done = subprocess.run(
        [*SEAMLINE, "run", pipeline.name, "--format", "json"],
        cwd=tmp_path,
        env=fault_environment(SEAMLINE_FAULT_WRITE_FD1="1"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # one document, nothing around it
    assert document["counts"]["documents"] == DOCUMENTS, document
    assert "fault-jsonl wrote to descriptor 1" in done.stderr
