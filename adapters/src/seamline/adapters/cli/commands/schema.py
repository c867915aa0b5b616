"""``seamline schema``: the JSON Schema of pipeline files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli import loading

Output = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Write to this file instead of stdout.", metavar="FILE"),
]


def schema(output: Output = None) -> None:
    """Print the JSON Schema of pipeline files, with every installed component's config."""
    from seamline.adapters.cli.render.console import note, raw
    from seamline.core import pipeline_schema

    text = json.dumps(pipeline_schema(loading.registry()), indent=2)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
        note(f"wrote {output}")
    else:
        raw(text + "\n")
