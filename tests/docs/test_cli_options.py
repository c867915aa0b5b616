"""docs/cli.md has a section for every command, and it names every option of that command.

The sections are written by hand, and options were added without a word there
(``serve --set``, ``check --verbose``; ``bench attention`` had no section at all): a user
reading the page could not learn them. This walks the commands as click builds them and
looks for each option's long name (or its short one where it has no long one) in the
text of the command's section. What an option does is the page's to say; that it is
named is checked here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.main import get_command

from seamline.adapters.cli.main import app
from tests.docs.workdir import ROOT

CLI = ROOT / "docs" / "cli.md"
SECTION = re.compile(r"^## `seamline ([^`]+)`")


def leaf_commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """``("search", command)``, ``("trace summarize", command)``: every command that runs."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield " ".join(path), command
        return
    for name, sub in sorted(subcommands.items()):
        yield from leaf_commands(sub, (*path, name))


def sections() -> dict[str, str]:
    """The text of each ``## `seamline COMMAND` `` section of cli.md, by command."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in CLI.read_text(encoding="utf-8").splitlines():
        match = SECTION.match(line)
        if match:
            current = found.setdefault(match.group(1), [])
        elif line.startswith("## "):
            current = None
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def option_names(command: Any) -> list[str]:
    """How each option is named on the page: its first long name, else its first name."""
    names = []
    for param in command.params:
        spellings = [*param.opts, *getattr(param, "secondary_opts", [])]
        if not spellings[0].startswith("-") or "--help" in spellings:
            continue  # an argument, or --help
        long = [s for s in spellings if s.startswith("--")]
        names.append(long[0] if long else spellings[0])
    return names


COMMANDS = dict(leaf_commands(get_command(app)))


def test_the_walk_finds_the_commands() -> None:
    assert {"run", "serve", "search", "check", "bench attention"} <= set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_command_s_section_names_each_of_its_options(name: str) -> None:
    text = sections().get(name)
    assert text is not None, f"docs/cli.md has no section '## `seamline {name}`'"
    if not COMMANDS[name].params:  # a command handing its argv to another parser
        return
    missing = [o for o in option_names(COMMANDS[name]) if not re.search(rf"{o}(?![\w-])", text)]
    assert not missing, f"docs/cli.md, '## `seamline {name}`' never names {missing}"
