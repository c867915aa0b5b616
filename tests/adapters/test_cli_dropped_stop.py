"""A Ctrl-C or SIGTERM raised where Python drops it still stops any command.

A signal's ``KeyboardInterrupt`` that lands in JAX's garbage-collection callback is
reported by Python ("Exception ignored in: <function _xla_gc_callback ...>") and dropped:
``seamline explain`` and ``seamline search`` then finished their work and exited 0 (3 of 12
Ctrl-C's). Here a garbage-collection callback receives the signal, in a real CLI
process: the command must stop there with the ``interrupted`` line and the stop's exit
code, and Python's "Exception ignored" must not be printed.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

DROPPED = """
import gc, os, signal, time
from seamline.adapters.cli import main as cli
from seamline.adapters.cli.errors import interrupts
from seamline.adapters.cli.stopping import terminate_as_interrupt

def callback(phase, info, fired=[]):
    if fired:
        return
    fired.append(phase)
    try:
        os.kill(os.getpid(), signal.{signal})
        for _ in range(10_000):  # the handler runs here, inside the callback
            pass
    except KeyboardInterrupt:
        print("raised in the callback", flush=True)
        raise

@cli.app.command("work")
def work() -> None:
    with terminate_as_interrupt(), interrupts("kept"):
        gc.callbacks.append(callback)
        gc.collect()
        deadline = time.monotonic() + 10  # work the stop must end within milliseconds
        while time.monotonic() < deadline:
            pass
        print("the work went on", flush=True)

cli.main(["work"])
"""


@pytest.mark.parametrize(
    ("signal", "code", "line"),
    [
        ("SIGINT", 130, "interrupted: kept"),
        ("SIGTERM", 143, "interrupted (SIGTERM): kept"),
        ("SIGHUP", 129, "interrupted (SIGHUP): kept"),
    ],
)
def test_a_stop_python_drops_in_a_gc_callback_still_stops_the_command(
    signal: str, code: int, line: str
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", DROPPED.format(signal=signal)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "raised in the callback" in ended.stdout, (ended.stdout, ended.stderr)
    assert "the work went on" not in ended.stdout, ended.stderr
    assert ended.returncode == code, ended.stderr
    assert line in " ".join(ended.stderr.split()), ended.stderr
    assert "Exception ignored" not in ended.stderr, ended.stderr


def test_what_else_python_drops_is_still_reported() -> None:
    """Only a stop is raised again: any other exception a callback raised is printed."""
    code = """
import gc
from seamline.adapters.cli import main as cli

def callback(phase, info, fired=[]):
    if not fired:
        fired.append(phase)
        raise ValueError("a callback's own bug")

@cli.app.command("work")
def work() -> None:
    gc.callbacks.append(callback)
    gc.collect()
    print("the work went on", flush=True)

cli.main(["work"])
"""
    ended = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert ended.returncode == 0, ended.stderr
    assert "the work went on" in ended.stdout
    assert "Exception ignored" in ended.stderr
    assert "a callback's own bug" in ended.stderr
