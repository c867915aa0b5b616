"""The failure of an out-of-date outcome table gives a command that runs as it is written."""

from __future__ import annotations

from tests.outcome_tables import out_of_date


def test_the_out_of_date_message_runs_the_environment_s_python() -> None:
    """It said 'python -m tests.outcomes --write --only NAME': no ``python`` may be on PATH,
    or another one without seamline; docs/reliability.md writes ``.venv/bin/python``."""
    assert "'.venv/bin/python -m tests.outcomes --write --only faults'" in out_of_date("faults")
