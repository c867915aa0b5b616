"""A loader or sink failing midway, a changed input on resume, and the machine failing around a run.

Each ends ``seamline run`` with one line (exit 1 for a failure, 2 for a refusal), no
traceback, nothing published and the last commit intact; the failing component is
named with its distribution. Each scenario runs once per session
(:mod:`tests.faults.component_scenarios`, through the ``fault_outcomes`` fixture);
these tests assert on what it did, and the faults table of docs/reliability.md shows it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults import component_scenarios
from tests.faults.component_scenarios import DOCUMENTS, FILES, MIDWAY, Ran
from tests.faults.outcomes import FaultOutcomes


def one_line(output: str) -> str:
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


def interrupted_first(ran: Ran, checkpoint: bytes | None) -> None:
    """The text-files run the resume scenarios start from failed after a commit."""
    assert ran.exit_code == 1, ran.said
    assert checkpoint is not None


@pytest.mark.parametrize(("fault", "component"), list(MIDWAY.items()))
def test_a_component_failing_midway_stops_cleanly_and_the_resume_finishes(
    fault_outcomes: FaultOutcomes, fault: str, component: str
) -> None:
    reference, expected = fault_outcomes.cli_reference
    assert reference.exit_code == 0, reference.said
    run = fault_outcomes[fault]
    assert run.failed.exit_code == 1, run.failed.said
    line = " ".join(one_line(run.failed.said).split())
    assert f"failed: the run failed in {component}: RuntimeError: injected" in line
    assert "nothing was published" in line
    assert "run again with --resume" in line
    assert not run.published
    assert not run.manifest
    assert run.checkpoint
    assert run.cursor is not None, "the last commit stands"
    assert run.resumed.exit_code == 0, run.resumed.said
    assert run.resumed_output == expected


def test_a_resume_refuses_an_input_that_changed_and_restart_starts_over(
    fault_outcomes: FaultOutcomes,
) -> None:
    run = fault_outcomes["input-changed"]
    interrupted_first(run.first.failed, run.first.checkpoint)
    assert run.resumed.exit_code == 2, run.resumed.said
    line = " ".join(one_line(run.resumed.said).split())
    assert f"the input files under {str(run.first.corpus)!r}" in line
    edited = str(run.first.corpus / "doc03.txt")
    assert f"12 now; newer than that: {edited!r})" in line, "the file edited, by name"
    assert "changed since that checkpoint" in line
    assert "--restart" in line
    assert run.checkpoint_untouched
    assert run.restarted is not None
    assert run.restarted.exit_code == 0, run.restarted.said
    assert run.output is not None
    assert len(run.output) == FILES, "started over: every document once"


def test_a_resume_refuses_a_pipeline_file_that_changed(fault_outcomes: FaultOutcomes) -> None:
    run = fault_outcomes["pipeline-changed"]
    interrupted_first(run.first.failed, run.first.checkpoint)
    assert run.resumed.exit_code == 2, run.resumed.said
    said = " ".join(run.resumed.said.split())
    assert "the pipeline's setting loader.with.glob (in the file or a --set) changed" in said


@pytest.mark.parametrize("scenario", ["input-unchanged", "input-stray-files"])
def test_an_input_that_did_not_change_resumes(fault_outcomes: FaultOutcomes, scenario: str) -> None:
    """``input-stray-files``: a swap file and a log that the loader's ``glob`` does not
    match, written under its ``root``. The input's fingerprint covered every file under
    ``root``, so they refused ``--resume``, and only ``--restart`` (the whole run again)
    went on."""
    run = fault_outcomes[scenario]
    interrupted_first(run.first.failed, run.first.checkpoint)
    assert run.resumed.exit_code == 0, run.resumed.said
    assert "resumed after cursor" in run.resumed.said
    assert run.output is not None
    assert len(run.output) == FILES


def test_a_missing_output_directory_is_created(fault_outcomes: FaultOutcomes) -> None:
    run = fault_outcomes["missing-folder"]
    assert run.ran.exit_code == 0, run.ran.said
    assert run.output is not None
    assert len(run.output) == DOCUMENTS


def test_an_output_under_a_file_is_refused_before_any_work(fault_outcomes: FaultOutcomes) -> None:
    # It failed at the run's end as "File exists ... run again with --resume", which
    # could never help: the file in the way is named while the pipeline is validated.
    run = fault_outcomes["under-a-file"]
    assert run.ran.exit_code == 2, run.ran.said
    line = " ".join(one_line(run.ran.said).split())
    assert line.startswith("error: ")
    assert f"{str(run.out.parent)!r} is a file, not a folder" in line  # the file in the way
    assert "--resume" not in line
    assert not run.out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a read-only directory anyway")
def test_an_output_that_is_not_writable_is_one_line(fault_outcomes: FaultOutcomes) -> None:
    run = fault_outcomes["read-only"]
    assert run.ran.exit_code == 1, run.ran.said
    assert "error: Permission denied" in one_line(run.ran.said)


def test_a_full_disk_is_one_line(fault_outcomes: FaultOutcomes) -> None:
    # A real full disk: a 16 KiB tmpfs, mounted in a user and mount namespace of the run's own.
    run = fault_outcomes["full-disk"]
    if run.not_run is not None:
        pytest.skip(run.not_run)
    assert run.ran.exit_code == 1, run.ran.stderr[-3000:]
    line = " ".join(one_line(run.ran.stderr).split())
    assert line.startswith("error: No space left on device"), line
    assert "was not published" in line
    # 16 KiB fill before the first commit: --resume was offered, with nothing to go on from.
    assert "nothing was committed, so a run again starts from the beginning" in line, line
    assert "--resume is not needed" in line


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("init:1", "FileNotFoundError: [Errno 2] No such file or directory"),
        ("init:2", "RuntimeError: injected constructor fault"),
    ],
    ids=["oserror", "runtime-error"],
)
def test_a_component_whose_constructor_fails_is_named_in_one_line(
    tmp_path: Path, fault: str, says: str
) -> None:
    """A plugin's loader whose ``__init__`` raised: a RuntimeError was a traceback of a
    hundred lines, and an OSError (a file it could not open) read as the machine's failure
    ("No such file or directory (...): the output was not published, and what the sink
    last committed is kept: ... run again with --resume"), naming no component."""
    path = component_scenarios.pipeline(tmp_path)
    with component_scenarios.in_process_cli() as cli:
        ran = component_scenarios.seamline(cli, path, SEAMLINE_FAULT_RAISE=fault)
    assert ran.exit_code == 1, ran.said
    line = " ".join(one_line(ran.said).split())
    assert (
        "the run failed in loader 'fault-loader' (build, from seamline-fixture-faults 0.1.0): "
        f"{says}"
    ) in line, line
    assert "nothing was published" in line
    assert not (tmp_path / "out" / "emb.jsonl").exists()
