"""The registry and the pipeline a command works on, loaded through core's public face.

Each imports the components it discovers, and so JAX: only when a command runs, never
for ``--help``. A bad pipeline or user config file is a user error (exit code 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from seamline.adapters.cli.errors import Report, user_errors

if TYPE_CHECKING:
    from seamline.core import Registry, ResolvedPipeline


def registry() -> Registry:
    """Every installed component the user config trusts."""
    from seamline.core import Registry, user_trust

    return user_errors(lambda: Registry.discover(user_trust()))


def pipeline(
    path: Path,
    overrides: list[str] | None,
    report: Report | None = None,
) -> tuple[ResolvedPipeline, Registry]:
    """The pipeline, resolved against the components its ``trust`` (and the user's) allows.

    Discovery waits for the pipeline's trust section, so the entry points of a
    distribution it leaves out are never imported. ``report``: see
    :func:`~seamline.adapters.cli.errors.user_errors`.
    """
    from seamline.core import load_trusted

    return user_errors(lambda: load_trusted(path, overrides or ()), report)


def trusted_registry(path: Path) -> Registry:
    """The registry a run of the pipeline at ``path`` would see: discovered under its
    ``trust`` too."""
    from seamline.core import (
        Registry,
        pipeline_trust,
        prepare_located,
        read_pipeline_text,
        user_trust,
    )

    def discover() -> Registry:
        source = str(path)
        located = prepare_located(read_pipeline_text(source), source)
        return Registry.discover(pipeline_trust(located, user_trust()))

    return user_errors(discover)
