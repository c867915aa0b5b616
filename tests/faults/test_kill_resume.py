"""Crash-proven resume: real ``seamline run`` processes killed at seeded points, then resumed.

The harness (:mod:`tests.faults.kill_points`) kills a subprocess at each of 21
seeded points and once by SIGTERM, resumes each with ``seamline run --resume``, and
records what happened; it runs once per module (the ``kill_results`` fixture). The
published output must equal an uninterrupted run's: every document exactly once,
identical embeddings, nothing hidden left behind. docs/reliability.md shows the
table of these same results.

Select it with ``-m kill``; it takes about a minute on two cores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.faults.kill_points import (
    DOCUMENTS,
    NAME,
    POINTS,
    TERM,
    KillResults,
    expected_end,
    render,
    run_harness,
)
from tests.outcome_tables import comparable, out_of_date, page_block

if TYPE_CHECKING:
    from tests.faults.outcomes import FaultOutcomes


@pytest.fixture(scope="module")
def kill_results(tmp_path_factory: pytest.TempPathFactory) -> KillResults:
    """Every kill point, killed and resumed once for the tests of this module."""
    return run_harness(tmp_path_factory.mktemp("kill"))


@pytest.mark.kill
def test_every_kill_point_resumes_to_the_uninterrupted_output(kill_results: KillResults) -> None:
    assert len(POINTS) >= 20
    assert kill_results.reference.exit_code == 0, kill_results.reference.stdout
    expected = kill_results.expected
    assert expected is not None
    assert len({(r["id"], r["window"]) for r in expected}) == len(expected) == DOCUMENTS
    assert [k.point for k in kill_results.killed] == [*POINTS, TERM]
    for killed in kill_results.killed:
        point, code = killed.point, killed.ended.returncode
        # A hook dies by SIGKILL; a moment lands inside the run (slowed to outlast it); the
        # SIGTERM stops it as Ctrl-C does (exit code 143).
        assert code == expected_end(point), (point, code, killed.ended.stderr)
        assert killed.resumed.exit_code == 0, (point, killed.resumed.stdout)
        assert killed.output == expected, f"killed at {point} (rc {code}): output differs"
        assert killed.files == kill_results.files, f"killed at {point}: {killed.files} left"


@pytest.mark.kill
def test_the_docs_table_is_what_these_kills_did(kill_results: KillResults) -> None:
    """Regenerate it with ``python -m tests.outcomes --write --only kill-points``."""
    assert comparable(page_block(NAME)) == comparable(render(kill_results)), out_of_date(NAME)


def test_a_second_run_on_the_same_destination_refuses_and_leaves_the_first_alone(
    fault_outcomes: FaultOutcomes,
) -> None:
    run = fault_outcomes["second-run"]  # the first run held before its first write
    assert run.first_running, "the first run was still running during the second"
    assert run.second.exit_code == 2, run.second.stderr
    line = " ".join(run.second.stderr.split())
    assert "Traceback" not in run.second.stderr
    assert line.startswith(f"error: another run (pid {run.first_pid}) is writing to "), line
    assert str(run.pipeline.parent / "out" / "emb.jsonl") in line
    assert run.first.exit_code == 0, run.first.stderr
    assert run.output == run.expected, "the first run was not disturbed"
    assert run.files == run.expected_files
