"""docs/reliability.md's table of injected faults is what this session's scenarios did.

The scenarios ran (once) for the tests of ``test_call_faults.py``,
``test_component_faults.py``, ``test_kill_resume.py`` and ``tests/core/test_monitor_hub.py``,
which share them through the ``fault_outcomes`` fixture; run alone, this test runs them all.
"""

from __future__ import annotations

from tests.faults.outcomes import MACHINE_DEPENDENT, NAME, FaultOutcomes, render
from tests.outcome_tables import comparable, out_of_date, page_block


def test_the_docs_table_is_what_these_faults_did(fault_outcomes: FaultOutcomes) -> None:
    """Regenerate it with ``python -m tests.outcomes --write --only faults``."""
    rendered = render(fault_outcomes)
    page = comparable(page_block(NAME), MACHINE_DEPENDENT)
    assert page == comparable(rendered, MACHINE_DEPENDENT), out_of_date(NAME)
