"""A stop that comes after ``seamline run`` published its output says so, and never --resume.

A SIGTERM or Ctrl-C after the sink published (the components closing, telemetry shut
down, the summary printing) was told as one before it: "nothing was published; ... run
again with --resume to go on from it", though the output was complete and its checkpoint
gone; into a LanceDB table with ``mode: append`` that advice added every row again. One
during the summary, or while Python ran its exit handlers after it, met the signal's
default action (the handler was put back before the summary): killed, no line. A real
``seamline run`` subprocess sends itself the signal at each of those moments (a hook
wrapped around the step, so the moment is exact) and must end with the stop's exit code
and the line that the output is complete, nothing to resume. One more moment falls
inside the publication, between the errors file's rename and the records' (the manifest
goes last): the stop there waits for the last rename (it left the manifest beside no
records file when the manifest went first).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.faults.component_scenarios import published
from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import DOCUMENTS, in_process_cli, run_in_process, write_pipeline

if TYPE_CHECKING:
    from pathlib import Path

DRIVER = """
import os, signal, sys
from seamline.adapters.cli import main as cli

def stopped_at(owner, name, after=True, when=lambda *args, **kwargs: True):
    real = getattr(owner, name)
    def step(*args, **kwargs):
        if not after and when(*args, **kwargs):
            os.kill(os.getpid(), signal.{signal})  # its handler runs before the next line
        done = real(*args, **kwargs)
        if after and when(*args, **kwargs):
            os.kill(os.getpid(), signal.{signal})
        return done
    setattr(owner, name, step)

moment = "{moment}"
if moment in ("published", "publishing"):  # the sink's close(complete=True): after, before
    from seamline.contracts.sink_kit import PublishingSink
    complete = lambda self, complete=True: complete
    stopped_at(PublishingSink, "close", moment == "published", complete)
elif moment == "renaming":  # between the publication's renames: the errors file's, the rest
    from seamline.contracts.sink_kit import AtomicFile
    stopped_at(AtomicFile, "publish", True, lambda self, **_: "errors" in self.destination.name)
elif moment == "telemetry":  # the run returned; telemetry shut down
    from seamline.adapters import telemetry_setup
    stopped_at(telemetry_setup, "shutdown_telemetry")
elif moment == "summary":  # the summary printed
    from seamline.adapters.cli.render import run as render
    stopped_at(render, "run_summary")

try:
    cli.main(["run", "pipeline.yaml", "--log-level", "warning", *{flags}])
finally:
    if moment == "exit":  # the command returned; Python's exit comes next
        os.kill(os.getpid(), signal.{signal})
"""


def run_stopped(
    pipeline: Path, sent: signal.Signals, moment: str, *flags: str, joined: bool = True
) -> tuple[int, str]:
    """``seamline run pipeline.yaml *flags`` from its folder, sent ``sent`` at ``moment``:
    its exit code and its stderr on one line (as it is where not ``joined``)."""
    driver = DRIVER.format(signal=sent.name, moment=moment, flags=list(flags))
    ended = subprocess.run(
        [sys.executable, "-c", driver],
        cwd=pipeline.parent,
        env=fault_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in ended.stderr, ended.stderr
    return ended.returncode, " ".join(ended.stderr.split()) if joined else ended.stderr


@pytest.mark.parametrize(
    ("moment", "sent", "code"),
    [
        *[
            (moment, sent, code)
            for moment in ("published", "telemetry", "summary")
            for sent, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130))
        ],
        # Between the renames that publish the output (the errors file's done, the records'
        # not): the stop waits for the last one. It left the manifest beside no records.
        ("renaming", signal.SIGTERM, 143),
        ("renaming", signal.SIGINT, 130),
        ("renaming", signal.SIGHUP, 129),
        # Python's exit after a finished run met the signal's default action: killed, no
        # line. Ctrl-C there is Python's own.
        ("exit", signal.SIGTERM, 143),
        ("exit", signal.SIGHUP, 129),
    ],
)
def test_a_stop_after_the_output_was_published_says_it_is_complete(
    tmp_path: Path, moment: str, sent: signal.Signals, code: int
) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    returncode, line = run_stopped(pipeline, sent, moment)
    assert returncode == code, (returncode, line)
    label = "interrupted" if sent == signal.SIGINT else f"interrupted ({sent.name})"
    assert (
        f"{label} after the output was published: out/emb.jsonl is complete; there is "
        "nothing to resume"
    ) in line, line
    assert "nothing was published" not in line, line
    assert "run again with --resume" not in line, line
    records = published(tmp_path / "out")
    assert records is not None, "the output was not published"
    ids = sorted(record["id"] for record in records)
    assert ids == sorted(f"d{i}" for i in range(DOCUMENTS))
    manifest = json.loads((tmp_path / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["outputs"]["lines"] == {"emb.jsonl": len(records)}  # these very files
    assert not list((tmp_path / "out").glob(".*")), "a partial file or checkpoint was left"


def test_a_stop_before_publishing_over_an_earlier_output_still_offers_resume(
    tmp_path: Path,
) -> None:
    """The manifest an earlier run published at the destination is not this run's (the
    earlier run is made in this process: only the stopped one is about a process)."""
    pipeline = write_pipeline(tmp_path, "relative")
    with in_process_cli() as cli:
        first = run_in_process(cli, pipeline)
    assert first.exit_code == 0, first.stderr
    returncode, line = run_stopped(pipeline, signal.SIGTERM, "publishing")
    assert returncode == 143, (returncode, line)
    assert "interrupted (SIGTERM): nothing was published" in line, line
    assert "run again with --resume" in line, line
    assert "after the output was published" not in line, line


def test_under_json_logs_a_stop_while_python_exits_is_a_record_too(tmp_path: Path) -> None:
    """``--log-format json``: the line said while Python exits after the run is a JSON
    record like every other line on stderr (``jq`` failed on it as text)."""
    pipeline = write_pipeline(tmp_path, "relative")
    returncode, stderr = run_stopped(
        pipeline, signal.SIGTERM, "exit", "--log-format", "json", joined=False
    )
    assert returncode == 143, (returncode, stderr)
    stop = [json.loads(line) for line in stderr.splitlines() if line.strip()][-1]
    assert (stop["event"], stop["signal"], stop["exit_code"]) == ("interrupted", "SIGTERM", 143)
    assert stop["when"] == "after the output was published", stop
    assert stop["kept"].startswith("out/emb.jsonl is complete; there is nothing to resume"), stop
