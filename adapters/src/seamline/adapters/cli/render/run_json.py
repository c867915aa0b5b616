"""What ``run --format json`` prints when the run is over: one JSON document on stdout.

Schema ``seamline.run/1``, in the style of :mod:`.as_json` (``components`` and
``search``): the document names its schema and version, a field may be added in a
later version of the same number, never renamed or removed; strict JSON. Logs and the
progress bar stay on stderr, so ``seamline run p.yaml --format json | jq`` reads the
summary alone. docs/cli.md describes every field.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from seamline.adapters.cli.render.console import json_line
from seamline.adapters.cli.render.run import docs_per_second
from seamline.contracts.json_safe import json_safe

if TYPE_CHECKING:
    from seamline.adapters.cli.outputs import OutputPlace
    from seamline.contracts import RunCounts
    from seamline.core import RunSummary

RUN_SCHEMA = "seamline.run/1"


def run_document(summary: RunSummary, place: OutputPlace) -> dict[str, Any]:
    """The summary as plain data: the counts of the output, this run's work, where it is."""
    return {
        "schema": RUN_SCHEMA,
        "pipeline": summary.pipeline,
        "run_id": summary.run_id,
        "documents": summary.output.documents,
        "outputs": summary.output.examples,
        "set_aside": {
            "failed": summary.output.failed_documents,
            "skipped": summary.output.skipped_documents,
        },
        "seconds": round(summary.seconds, 3),
        "docs_per_second": round(docs_per_second(summary), 3),
        "tokens_per_second": round(summary.tokens_per_second, 1),
        "first_output_seconds": _rounded(summary.first_output_seconds),
        "counts": _counts(summary.output),
        "this_run": _counts(summary.counts),
        "committed_before": _counts(summary.committed_before),
        "compilations": summary.compilations,
        "resumed_from": summary.resumed_from,
        "executor": summary.executor,
        "shards": summary.shard_count,
        "workers": summary.workers,
        "finished_before": list(summary.finished_before),
        "output": {
            "sink": place.sink,
            "path": place.path,
            # One file: errors_path. Parts of a sharded jsonl/npy run: one file each, so
            # errors_path is null (no such file) and errors_paths lists them, shard order.
            "errors_path": place.errors_path if not isinstance(place.errors_path, tuple) else None,
            "errors_paths": _errors_paths(place.errors_path),
            "search": place.search_command,
        },
        "changes": dict(summary.changes) if summary.changes else None,
        "older_versions": _older(summary),
        "attention": dict(summary.attention),
        "precision": dict(summary.precision),
        "provenance": dict(summary.provenance),
    }


def run_summary_json(summary: RunSummary, place: OutputPlace) -> None:
    """Print :func:`run_document` as one line of strict JSON on stdout."""
    document = json_safe(run_document(summary, place))
    json_line(document)


def _counts(counts: RunCounts | None) -> dict[str, int] | None:
    return None if counts is None else dataclasses.asdict(counts)


def _older(summary: RunSummary) -> dict[str, int] | None:
    """The older versions the output keeps, the bytes only they use, and whether those are
    a lower bound of what pruning frees (null: none, or the sink does not measure them)."""
    older = summary.older_versions
    if older is None:
        return None
    return {"kept": older.kept, "bytes": older.bytes, "at_least": older.at_least}


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def _errors_paths(errors: str | tuple[str, ...] | None) -> list[str]:
    """Every errors file of the output: the one file, each part's, or none known."""
    if errors is None:
        return []
    return [errors] if isinstance(errors, str) else list(errors)
