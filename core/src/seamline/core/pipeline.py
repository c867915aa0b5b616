"""seamline as a library: ``Pipeline.from_yaml(path).run()``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from seamline.contracts import Monitor
from seamline.core.config import ResolvedPipeline, load_pipeline
from seamline.core.orchestrator import Orchestrator, RunSummary
from seamline.core.registry import Registry


class Pipeline:
    """A validated pipeline, ready to run."""

    def __init__(self, resolved: ResolvedPipeline, registry: Registry) -> None:
        self.resolved = resolved
        self.registry = registry

    @classmethod
    def from_yaml(
        cls,
        path: str | os.PathLike[str],
        overrides: Sequence[str] = (),
        *,
        registry: Registry | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Pipeline:
        """Load and validate a pipeline file; raises a located ``ConfigError`` if it is invalid."""
        registry = registry or Registry.discover()
        return cls(load_pipeline(path, registry, overrides, environ), registry)

    def run(
        self, extra_monitors: Sequence[Monitor[Any]] = (), *, resume: bool = False
    ) -> RunSummary:
        """Run to completion and return the summary.

        ``extra_monitors`` are observers the embedding application adds without
        registering them as components (the CLI's progress bar is one). ``resume``
        continues an interrupted run from the sink's last checkpoint (a sink that
        is not resumable raises ``UserError``).
        """
        return Orchestrator(self.resolved, self.registry, extra_monitors).run(resume=resume)
