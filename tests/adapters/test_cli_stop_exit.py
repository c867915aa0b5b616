"""A command a stop ended leaves without Python's teardown of modules, its exit handlers run.

A Ctrl-C during ``seamline run``'s first compile left XLA compiling in a thread of JAX's;
Python's exit then tore the modules down, JAX's client among them, under that compile,
and the process died of a segmentation fault after its ``interrupted`` line (exit code
139, and a core file of some 300 MB in the user's folder). That crash depends on timing;
what prevents it does not: ``seamline``'s entry point ends a stopped command with
``os._exit`` once its exit handlers have run. Seen here in a subprocess: an object held
by a module says when the teardown of modules drops it (it must not), an exit handler
says that it ran (it must: OpenTelemetry writes a trace's last spans in one), and the
exit code is the stop's.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

STOPPED = """
import atexit, os, sys
import typer
from seamline.adapters.cli import main as cli
from seamline.adapters.cli.errors import interrupts
from seamline.adapters.cli.stopping import Terminated

class Held:
    # Held by a module: only the teardown of modules drops it.
    def __del__(self, write=os.write):
        write(1, b"teardown ran\\n")

typer.held_by_a_module = Held()
atexit.register(lambda: os.write(1, b"exit handler ran\\n"))
print("buffered, not yet flushed", end="")

@cli.app.command("stop-me")
def stop_me() -> None:
    with interrupts("kept"):
        raise {stop}

cli.main(["stop-me"])
"""


@pytest.mark.parametrize(
    ("stop", "code", "line"),
    [
        ("KeyboardInterrupt", 130, "interrupted: kept"),
        ("Terminated", 143, "interrupted (SIGTERM): kept"),
    ],
)
def test_a_stopped_command_runs_its_exit_handlers_and_skips_the_teardown(
    stop: str, code: int, line: str
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", STOPPED.format(stop=stop)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ended.returncode == code, ended.stderr
    assert line in " ".join(ended.stderr.split()), ended.stderr
    assert "exit handler ran" in ended.stdout, ended.stdout
    assert "buffered, not yet flushed" in ended.stdout, "stdout was not flushed"
    assert "teardown ran" not in ended.stdout, "the modules were torn down after the stop"


def test_an_ordinary_exit_is_left_to_python() -> None:
    """Only a stop leaves early: a command's other exits end as Python ends them."""
    ended = subprocess.run(
        [sys.executable, "-c", STOPPED.format(stop="typer.Exit(3)")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ended.returncode == 3, ended.stderr
    assert "exit handler ran" in ended.stdout, ended.stdout
    assert "teardown ran" in ended.stdout, ended.stdout
