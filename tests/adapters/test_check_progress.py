"""``seamline check`` shows its progress on a terminal, and nowhere else.

The report came only at the suite's end: a six-minute check of an interpreted kernel
left the terminal blank, a slow check looking like a hung one.
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from seamline.adapters.cli import loading
from seamline.adapters.cli.check import contract_class
from seamline.adapters.cli.render.check_progress import CheckProgress, shown
from seamline.contracts.testing.results import check_name
from seamline.contracts.testing.runner import run

SEAMLINE = str(Path(sys.executable).with_name("seamline"))
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_the_bar_counts_every_check_and_changes_no_result() -> None:
    checked = contract_class(loading.registry(), "monitor", "log", {})
    screen = io.StringIO()
    progress = CheckProgress("monitor:log", Console(file=screen, force_terminal=True))
    with progress.bar:
        watched = run(checked, plugins=[progress])
    task = progress.bar.tasks[0]
    assert task.total == task.completed == len(watched.results) > 0
    bare = run(checked)
    assert [(r.check, r.outcome) for r in watched.results] == [
        (r.check, r.outcome) for r in bare.results
    ]
    assert watched.passed
    assert bare.passed


def test_a_check_is_named_as_the_report_names_it() -> None:
    assert check_name("t.py::TestConformance::test_feature_case[causal]") == "feature_case[causal]"


def test_no_bar_off_a_terminal_on_a_dumb_one_or_under_verbose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with shown("monitor:log", io.StringIO(), verbose=False) as progress:
        assert progress is None
    leader, follower = pty.openpty()
    try:
        with open(follower, "w", closefd=False) as terminal:
            with shown("monitor:log", terminal, verbose=True) as progress:
                assert progress is None  # pytest's own lines instead
            with shown("monitor:log", terminal, verbose=False) as progress:
                assert progress is not None
            monkeypatch.setenv("TERM", "dumb")  # a blank line before the report, no bar
            with shown("monitor:log", terminal, verbose=False) as progress:
                assert progress is None
    finally:
        os.close(leader)
        os.close(follower)


def test_a_terminal_sees_the_bar_and_then_the_report_alone(tmp_path: Path) -> None:
    """stderr a terminal, stdout piped (``seamline check ... | less``): the bar is drawn on
    the terminal and erased; stdout holds the report as a pipe alone gets it."""
    leader, follower = pty.openpty()
    command = [SEAMLINE, "check", "monitor:log"]
    try:
        with subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=follower, text=True
        ) as child:
            os.close(follower)
            drawn = _read_all(leader)
            report = child.stdout.read() if child.stdout else ""
            assert child.wait(timeout=300) == 0, report + drawn
    finally:
        os.close(leader)
    piped = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert piped.stderr == "", "a bar (or anything) on a stderr that is no terminal"
    assert report == piped.stdout
    assert "monitor:log conforms" in report
    assert not ESCAPES.search(report)
    shown_text = ESCAPES.sub("", drawn)
    assert "checking monitor:log" in shown_text
    assert re.search(r"\b10/10\b", shown_text), shown_text[-500:]
    assert drawn.endswith("\x1b[1A\x1b[2K"), repr(drawn[-80:])  # erased once done


def _read_all(leader: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed: Linux says EIO
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")
