"""``FORCE_COLOR`` forces colour, not a terminal's progress bar, into a pipe.

rich takes ``FORCE_COLOR`` (and ``TTY_COMPATIBLE``) for a terminal; ``seamline run``
asked rich whether stderr was one, so a piped run under ``FORCE_COLOR=1`` (set by many
CI systems) drew its progress bar into the log (``\\r`` redraws), dropped its info lines
(the level a terminal gets by default is ``warning``) and began each JSON log line with
the escape code that clears a terminal's line, which broke ``jq``. docs/cli.md: "Into a
pipe or a file there is no bar". Per https://force-color.org the variable forces colour,
and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import write_pipeline

if TYPE_CHECKING:
    from pathlib import Path

COLOUR = r"\x1b\[(\d+;)*3[0-7]m"
"""The escape code of a foreground colour (bold or italic alone are not colour)."""


@pytest.mark.parametrize("variable", ["FORCE_COLOR", "TTY_COMPATIBLE"])
def test_a_piped_run_with_colour_forced_logs_json_lines_and_draws_no_bar(
    tmp_path: Path, variable: str
) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    with pipeline.open("a", encoding="utf-8") as adding:
        adding.write("monitors: [{use: log}]\n")  # a JSON log line for each event
    environ = {k: v for k, v in fault_environment().items() if k != "COLUMNS"}
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", "run", pipeline.name],
        cwd=tmp_path,
        env={**environ, variable: "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr, "a progress bar was drawn into the pipe"
    logged = [json.loads(line) for line in done.stderr.splitlines()]  # each line is JSON
    assert "run started" in [event["event"] for event in logged], "the info lines were lost"
    assert done.stdout.startswith(("done", "\x1b[32mdone")), done.stdout


def test_forced_colour_reaches_a_pipe_and_no_color_still_wins() -> None:
    """``FORCE_COLOR`` is for colour in a CI log: ``seamline components`` gets it; but
    ``NO_COLOR`` (https://no-color.org) takes it away again."""
    seamline = [sys.executable, "-m", "seamline.adapters.cli.main", "components"]
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    coloured = subprocess.run(
        seamline, env={**environ, "FORCE_COLOR": "1"}, capture_output=True, text=True, check=False
    )
    assert coloured.returncode == 0, coloured.stderr
    assert re.search(COLOUR, coloured.stdout), "no colour despite FORCE_COLOR"
    plain = subprocess.run(
        seamline,
        env={**environ, "FORCE_COLOR": "1", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.returncode == 0, plain.stderr
    assert not re.search(COLOUR, plain.stdout), "a colour despite NO_COLOR"
