"""What a ``console`` block in the docs asks for: the commands, and the output each shows.

The docs show commands the way a terminal does: ``$ command`` followed by what it prints.
A block without any ``$`` prompt is a list of commands whose output the page does not show
(one per line, a trailing backslash continuing a line). A block whose first line is a
comment starting ``# not run`` is illustrative: the reader sees why it is not run (a
cluster, a benchmark of minutes, the test suite itself), and the docs tests skip it.
"""

from __future__ import annotations

import dataclasses
import re

PROMPT = "$ "
NOT_RUN = re.compile(r"^#\s*not run\b(?P<reason>.*)$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Step:
    """One command and, when the page shows it, the output it prints (``None``: not shown)."""

    command: str
    shown: tuple[str, ...] | None


@dataclasses.dataclass(frozen=True)
class ConsoleBlock:
    steps: tuple[Step, ...]
    not_run_because: str | None = None


def parse_console(source: str) -> ConsoleBlock:
    """Split a console block's text into steps, or say why the page marks it not run."""
    lines = source.rstrip("\n").split("\n")
    first = next((line for line in lines if line.strip()), "")
    marker = NOT_RUN.match(first.strip())
    if marker is not None:
        return ConsoleBlock((), marker.group("reason").strip(" :-—") or "illustrative")
    if any(line.startswith(PROMPT) for line in lines):
        return ConsoleBlock(tuple(_prompted_steps(lines)))
    return ConsoleBlock(tuple(Step(command, None) for command in _joined(lines)))


def _prompted_steps(lines: list[str]) -> list[Step]:
    steps: list[Step] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith(PROMPT):
            if line.strip():
                raise ValueError(f"output before any '$ ' command: {line!r}")
            index += 1
            continue
        command = line[len(PROMPT) :]
        index += 1
        while command.endswith("\\") and index < len(lines):
            command = command[:-1] + " " + lines[index].strip()
            index += 1
        shown: list[str] = []
        while index < len(lines) and not lines[index].startswith(PROMPT):
            shown.append(lines[index])
            index += 1
        while shown and not shown[-1].strip():
            shown.pop()
        steps.append(Step(command.strip(), tuple(shown) or None))
    return steps


def _joined(lines: list[str]) -> list[str]:
    """Lines joined across trailing backslashes; blank lines dropped."""
    commands: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command:
            commands.append(command)
    if pending.strip():
        commands.append(pending.strip())
    return commands
