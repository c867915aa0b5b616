"""The arguments and options several commands share, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def pipeline_path(text: str) -> Path:
    """The pipeline argument as a path; an empty one is refused (``Path("")`` is ``.``)."""
    if not text:
        raise typer.BadParameter("the path is empty: name the pipeline YAML file")
    return Path(text)


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
FORMATS = ("table", "json")
FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        help="table (for people) or json (one document for scripts; see docs/cli.md).",
        metavar="[table|json]",
    ),
]
