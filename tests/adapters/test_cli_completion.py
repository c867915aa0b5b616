"""Shell completion: ``--install-completion`` was "No such option"; typer's completion now
runs through seamline's own command classes (:mod:`seamline.adapters.cli.conventions`),
and completes what docs/cli.md says it does."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from tests.adapters.test_cli_conventions import SEAMLINE


def completed(words: str) -> list[str]:
    """What bash would be offered for the last word of ``words``."""
    environ = {
        **os.environ,
        "_SEAMLINE_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    done = subprocess.run(
        [str(SEAMLINE)], capture_output=True, text=True, env=environ, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_command_completes() -> None:
    assert completed("seamline ru") == ["run"]


def test_a_commands_options_complete() -> None:
    assert completed("seamline run --re") == ["--resume", "--restart"]


@pytest.mark.parametrize("flag", ["--install-completion", "--show-completion"])
def test_the_completion_options_are_offered(flag: str) -> None:
    done = subprocess.run(
        [str(SEAMLINE), "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert flag in done.stdout


def test_the_bash_script_is_shown() -> None:
    """From bash, as a user types it. typer takes the shell from the process's ancestors
    (``--show-completion`` takes no value: a ``bash`` after it was ignored), so the command
    runs as a child of bash: ``bash -c`` would otherwise exec it in bash's place, and under
    a ``make`` started from no shell (``setsid make test``) no ancestor was one ("Shell
    not supported")."""
    done = subprocess.run(
        ["bash", "-c", f"{shlex.quote(str(SEAMLINE))} --show-completion; exit $?"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "_SEAMLINE_COMPLETE=complete_bash" in done.stdout


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        ("seamline run --format j", ["json"]),
        ("seamline validate --format t", ["text"]),
        ("seamline components --kind m", ["model", "monitor"]),
        ("seamline run --log-format c", ["console"]),
        ("seamline serve --log-level w", ["warning"]),
        ("seamline serve --long-text m", ["mean"]),
    ],
)
def test_an_options_values_complete(words: str, offered: list[str]) -> None:
    # They offered nothing: each option is a plain str, checked by its command.
    assert completed(words) == offered


def test_building_the_commands_warns_of_nothing_deprecated() -> None:
    """Each command's value completion is typer's ``autocompletion``: click's
    ``shell_complete`` made typer 0.29 warn (DeprecationWarning) wherever the CLI was built,
    253 times in one test file."""
    done = subprocess.run(
        [
            str(SEAMLINE.parent / "python"),
            "-W",
            "error::DeprecationWarning",
            "-c",
            "from typer.main import get_command\n"
            "from seamline.adapters.cli.main import app\n"
            "get_command(app)\n",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
