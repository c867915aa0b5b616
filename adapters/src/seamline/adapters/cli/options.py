"""The arguments and options several commands share, declared once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli.errors import usage_error


def named_path(fix: str) -> Callable[[str], Path]:
    """A parser for a path argument or option that refuses an empty one, saying ``fix``.

    ``Path("")`` is ``.``: unrefused, ``''`` (an unset shell variable, say) would be read as
    the working directory, a path the user did not name, and the message about it would
    name ``.``.
    """

    def parse(text: str) -> Path:
        if not text:
            raise typer.BadParameter(f"the path is empty: {fix}")
        return Path(text)

    return parse


pipeline_path = named_path("name the pipeline YAML file")
"""The pipeline argument as a path; an empty one is refused."""


PipelineArg = Annotated[
    Path,
    typer.Argument(
        help="The pipeline YAML file.",
        metavar="PIPELINE",
        show_default=False,
        parser=pipeline_path,
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        help="Override a value: --set model.with.max_length=128 (repeatable).",
        metavar="PATH=VALUE",
    ),
]
FORMATS = ("text", "json")
"""What ``--format`` takes, on every command that has it: one meaning everywhere."""
FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        help="text (for people) or json (one document on stdout for scripts; schemas in "
        "docs/cli.md).",
        metavar="[text|json]",
    ),
]


def output_format(value: str) -> str:
    """``--format``'s value, checked: ``text`` or ``json`` (exit code 2 for anything else).

    ``table``, its name on ``components`` and ``search`` before every command that prints
    took ``--format``, is still read as ``text``, so that scripts written then keep working.
    """
    if value == "table":
        return "text"
    if value not in FORMATS:
        usage_error(f"--format must be text or json, not {value!r}")
    return value
