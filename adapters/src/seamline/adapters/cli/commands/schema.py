"""``seamline schema``: the JSON Schema of pipeline files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import environment_errors, usage_error, user_errors
from seamline.adapters.cli.options import named_path
from seamline.contracts.workdir import working_folder

Output = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Write to this file instead of stdout (- is stdout).",
        metavar="FILE",
        parser=named_path("name a file to write the schema to (such as pipeline.schema.json)"),
    ),
]

KEPT = "the schema was not written (fix the path or the folder, then run again)"


def schema(output: Output = None) -> None:
    """Print the JSON Schema of pipeline files, with every installed component's config."""
    from seamline.adapters.cli.render.console import note, raw, warn
    from seamline.core import pipeline_schema

    if output is not None and output.is_dir():  # refused before any work: a user's mistake
        usage_error(
            f"-o {output}: the path is a directory; name a file to write the schema to "
            f"(such as {output / 'pipeline.schema.json'})"
        )
    if output is not None and str(output) != "-" and not output.is_absolute():
        user_errors(working_folder)  # a relative -o in a deleted folder: say so (exit 2)
    if output is not None and str(output) != "-" and not output.parent.is_dir():
        # It was exit code 1, the machine's failure, for a path the user mistyped.
        usage_error(
            f"-o {output}: {_not_a_folder(output.parent)}; name a file in a folder that exists"
        )
    text = json.dumps(pipeline_schema(loading.registry(), warn), indent=2)
    if output is not None and str(output) == "-":  # the convention for stdout: it wrote `./-`
        output = None
    if output:
        target = output
        # The machine's failures (a folder that does not exist or cannot be written, a full
        # disk): one line, exit code 1.
        environment_errors(lambda: target.write_text(text + "\n", encoding="utf-8"), KEPT)
        note(f"wrote {output}")
    else:
        raw(text + "\n")


def _not_a_folder(parent: Path) -> str:
    """Why ``parent`` cannot hold the schema, and the fix when one helps."""
    for above in (parent, *parent.parents):
        if above.exists() and not above.is_dir():
            return f"{above} is a file, not a folder"
    return f"the folder {parent} does not exist (create it first: mkdir -p {parent})"
