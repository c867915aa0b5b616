"""One meaning per flag across the whole command line, and help that names what to type.

``-k`` was ``--kind`` in ``components``, a pytest expression in ``check`` and the number
of results in ``search``; ``-o`` was ``--output`` in ``schema`` and ``--out`` in
``profile``. Help wrote ``{PIPELINE}`` and ``<str>``. These walk every command, as
click builds them, and every command's help as a user reads it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command

from seamline.adapters.cli.conventions import GROUP_ONLY, RENAMED
from seamline.adapters.cli.main import app
from tests.adapters.test_cli_conventions import SEAMLINE, piped

TYPER_LABEL = re.compile(
    r"<(?:str|int|float|bool|path|Path|datetime|list\[[^\]]*\]|int range|float range)>"
)
"""What typer writes for an option or argument without a metavar: Python's type."""
BRACED = re.compile(r"\{[A-Za-z_:.-]+\}")
"""``{PIPELINE}``, ``{pipeline}``, ``{KIND:NAME}``: a name in braces where it belongs plain."""


def commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command and group under ``command``, with the words that reach it."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from commands(sub, (*path, name))


COMMANDS = [path for path, _ in commands(get_command(app))]


def test_each_short_flag_has_one_meaning_across_the_cli() -> None:
    """Every short flag has a long name, and the same long name on every command."""
    meanings: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    where: dict[str, list[str]] = defaultdict(list)
    for path, command in commands(get_command(app)):
        for param in getattr(command, "params", []):
            names = [*param.opts, *param.secondary_opts]
            longs = tuple(sorted(name for name in names if name.startswith("--")))
            for short in (n for n in names if len(n) == 2 and n[0] == "-" and n[1] != "-"):
                meanings[short].add(longs)
                where[short].append(f"{' '.join(path)} {'/'.join(longs) or '(no long name)'}")
    assert meanings, "no short flags found: the walk is broken"
    ambiguous = {
        short: where[short] for short, longs in meanings.items() if len(longs) > 1 or () in longs
    }
    assert not ambiguous, f"short flags with more than one meaning, or none named: {ambiguous}"


@pytest.mark.parametrize(("command", "old"), sorted(RENAMED))
def test_an_old_spelling_is_refused_with_the_new_one(command: str, old: str) -> None:
    arguments = {"check": ["sink:jsonl"]}.get(command, [])
    done = piped(command, *arguments, old, "x")
    assert done.returncode == 2
    assert f"No such option: {old}. {RENAMED[command, old]}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("flag", sorted(GROUP_ONLY))
def test_the_groups_version_flag_given_to_a_command_points_at_the_group(flag: str) -> None:
    # click said "Possible options: --verbose" for `seamline run --version`.
    done = piped("run", "x.yaml", flag)
    assert done.returncode == 2
    assert f"No such option: {flag}. It is seamline's own option" in done.stderr
    assert "seamline --version" in done.stderr
    assert "--verbose" not in done.stderr


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "seamline")
def test_help_names_what_to_type(path: tuple[str, ...]) -> None:
    """No typer type labels (``<str>``), no braced names (``{PIPELINE}``) in any help."""
    environ = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(
        [str(SEAMLINE), *path, "-h"], capture_output=True, text=True, env=environ, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
    assert not TYPER_LABEL.findall(done.stdout), done.stdout
    assert not BRACED.findall(done.stdout), done.stdout


def test_help_writes_arguments_and_choices_as_typed() -> None:
    assert "Usage: seamline run [OPTIONS] PIPELINE\n" in piped("run", "-h").stdout
    assert "Usage: seamline search [OPTIONS] INDEX [QUERY]\n" in piped("search", "-h").stdout
    check = piped("check", "-h").stdout
    assert "KIND:NAME  KIND:NAME, e.g." in check
    assert "--select EXPR" in check
    serve = piped("serve", "-h").stdout
    assert "--port PORT" in serve
    assert "--max-inputs N" in serve
    for command in ("validate", "explain", "components", "search"):
        assert "--format [text|json]" in piped(command, "-h").stdout, command
