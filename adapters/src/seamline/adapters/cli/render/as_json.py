"""What ``components`` and ``search`` print with ``--format json``: one JSON document each.

For scripts and pipes (``jq``), as ``pip list --format json`` and Ray's state CLI do.
Each document carries its schema's name and version (``"schema": "seamline.search/1"``);
a field may be added in a later version of the same number, never renamed or removed.
Values from package metadata or from an output are data, written as JSON strings
(strict JSON: a NaN in stored metadata becomes null).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from seamline.adapters.cli.availability import listed
from seamline.adapters.cli.render.console import json_line
from seamline.contracts.json_safe import json_safe

if TYPE_CHECKING:
    from seamline.adapters.search import Found
    from seamline.core import ComponentInfo, ListedConformance

COMPONENTS_SCHEMA = "seamline.components/1"
SEARCH_SCHEMA = "seamline.search/1"


def components(
    infos: Iterable[ComponentInfo],
    trusted: str | None,
    stray: Sequence[tuple[str, str, str]] = (),
    suites: Sequence[ListedConformance] = (),
) -> None:
    """Every component as one object; ``trusted``: the allowlist when trust restricts it;
    ``stray``: the entry points in groups seamline does not read (``not_read``);
    ``suites``: the ``seamline.conformance`` entry points (``conformance``)."""
    _print(
        {
            "schema": COMPONENTS_SCHEMA,
            "trusted": trusted,
            "not_read": [
                {"group": group, "name": name, "distribution": distribution}
                for group, name, distribution in stray
            ],
            "components": [
                {
                    "kind": info.kind,
                    "name": info.name,
                    "distribution": info.distribution,
                    "version": info.version,
                    "contract": info.contract_version,
                    "status": status,
                    "reason": reason,
                    "file": info.module_file,
                }
                for info in infos
                for status, reason in [listed(info)]
            ],
            "conformance": [
                {
                    "name": suite.entry.key,
                    "distribution": suite.entry.distribution,
                    "version": suite.entry.version,
                    "target": suite.entry.target,
                    "status": suite.status,
                    "reason": suite.reason,
                    "file": suite.entry.module_file or None,
                }
                for suite in suites
            ],
        }
    )


def search_hits(query: str, found: Found) -> None:
    """The nearest records, best first, each whole: its text as stored, not a snippet."""
    _print(
        {
            "schema": SEARCH_SCHEMA,
            "query": query,
            "how": found.how,
            "hits": [
                {
                    "score": hit.score,
                    "id": hit.doc_id,
                    "window": hit.window,
                    "span": list(hit.span),
                    "text": hit.text,
                    "metadata": hit.metadata,
                }
                for hit in found.hits
            ],
        }
    )


def _print(document: dict[str, Any]) -> None:
    json_line(json_safe(document))
