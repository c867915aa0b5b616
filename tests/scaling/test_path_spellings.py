"""Path spellings × sinks × executors: every run publishes, every killed run resumes.

The harness (:mod:`tests.scaling.path_spellings`) runs ``seamline run`` from a working
directory of its own with the sink's path spelled each way a user spells it (absolute,
relative, with ``..``, through a linked folder), for every sink on the ``local``
executor and on ``ray`` each sink in one spelling, each spelling with one sink: a run
killed after its commits (a ``local`` process, or a ``ray`` actor), resumed, and
published. Every output must equal an uninterrupted local run's, with nothing hidden
left behind, and docs/reliability.md must hold the table of these results.
"""

from __future__ import annotations

import pytest

from tests.outcome_tables import comparable, out_of_date, page_block
from tests.scaling.path_spellings import (
    KILLED,
    NAME,
    SpellingOutcomes,
    cells,
    expected_names,
    render,
    resumed_after_a_commit,
    same_records,
)

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.fixture(scope="module")
def spellings(tmp_path_factory: pytest.TempPathFactory) -> SpellingOutcomes:
    return SpellingOutcomes(tmp_path_factory.mktemp("spellings"))


@pytest.mark.parametrize("key", cells(), ids=lambda key: key.replace(":", "-"))
def test_a_killed_run_resumes_and_publishes_whatever_the_path(
    spellings: SpellingOutcomes, key: str
) -> None:
    cell = spellings[key]
    executor, sink = cell.executor, cell.sink
    reference = spellings.reference
    assert cell.marker, "the run was not killed (the test tested nothing)"
    if executor == "local":
        assert cell.killed == KILLED, f"the killed process ended with {cell.killed}"
    said = cell.resumed.stdout + cell.resumed.stderr
    assert cell.resumed.exit_code == 0, said
    if executor == "local":
        assert resumed_after_a_commit(cell), f"started over instead of resuming: {said}"
    assert same_records(cell.output.records, reference.records or []), "output differs"
    assert cell.output.errors == reference.errors
    assert cell.output.names == expected_names(sink, executor), "left behind or missing"


def test_the_docs_table_is_what_these_runs_did(spellings: SpellingOutcomes) -> None:
    """Regenerate it with ``python -m tests.outcomes --write --only path-spellings``."""
    assert comparable(page_block(NAME)) == comparable(render(spellings)), out_of_date(NAME)
