"""Whether a stopped ``seamline run`` had already published its output: its manifest says so.

A Ctrl-C or SIGTERM that came after the sink published (while the components closed,
telemetry was shut down or the summary printed) was told as one before it: "nothing
was published; ... run again with --resume to go on from it". The output was complete
and the checkpoint gone, so that advice ran the whole input again, and into a LanceDB
table with ``mode: append`` it added every row a second time.

No flag a run sets can be set at the very instant it publishes (a stop can fall between
the two), so the command asks the output itself. The manifest a sink publishes names
the run that made it (``run_id``), and the destination's lock lets only this run
publish there while it runs: a manifest that names another run than the one there
when the run began is this run's, published. A stop never falls between the renames
of a publication: the sink kit holds it back until the last one
(:func:`~seamline.contracts.sink_kit.stops_deferred`), so a manifest out means the whole
output is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.contracts import UserError
from seamline.contracts.manifest import read_manifest_text
from seamline.contracts.sink_kit import OutputConfig

if TYPE_CHECKING:
    from seamline.core import Pipeline


class Publication:
    """The manifest a run publishes, read when the run begins and again when it is stopped."""

    def __init__(self, manifest: Path | None) -> None:
        self._manifest = manifest
        self._before = self._run_id()

    @classmethod
    def of(cls, pipeline: Pipeline) -> Publication:
        """``pipeline``'s manifest, for a sink built on the sink kit (a third party's that
        is not has none known here: its stops are told as before the publication)."""
        config = pipeline.resolved.sink.config
        return cls(config.manifest_path() if isinstance(config, OutputConfig) else None)

    def happened(self) -> bool:
        """Whether a run's manifest other than the one found at the start is published now."""
        now = self._run_id()
        return now is not None and now != self._before

    def _run_id(self) -> str | None:
        """The ``run_id`` of the published manifest (None: none, or none readable)."""
        if self._manifest is None:
            return None
        try:
            manifest = json.loads(read_manifest_text(self._manifest))
        except (OSError, ValueError, RecursionError, UserError):
            return None
        run_id = manifest.get("run_id") if isinstance(manifest, dict) else None
        return run_id if isinstance(run_id, str) and run_id else None
