"""An integer option given what is not a whole number is refused in the CLI's own words.

typer's check answered in pydantic's (``Input should be a valid integer, unable to parse
string as an integer``, ``Input should be greater than or equal to 1``) and read
``-k 5.0`` as 5.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app

K = "-k must be a whole number from 1 to 10,000"
PORT = "--port must be a whole number from 0 to 65535 (0: any free port)"
INPUTS = "--max-inputs must be a whole number"
EXAMPLES = "--max-examples must be a whole number of 1 or more"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["search", "out.jsonl", "q", "-k", "abc"], f"{K}, not 'abc'"),
        (["search", "out.jsonl", "q", "-k", "5.0"], f"{K}, not '5.0'"),
        (["serve", "p.yaml", "--port", "abc"], f"{PORT}, not 'abc'"),
        (["serve", "p.yaml", "--max-inputs", "1e3"], f"{INPUTS}, not '1e3'"),
        (["check", "attention:native", "--max-examples", "abc"], f"{EXAMPLES}, not 'abc'"),
        (["check", "attention:native", "--max-examples", "0"], f"{EXAMPLES}, not '0'"),
    ],
)  # fmt: skip
def test_an_integer_option_refuses_what_is_not_a_whole_number(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert f"error: {says}" in result.output, result.output
    assert "Input should" not in result.output
    assert "Traceback" not in result.output
