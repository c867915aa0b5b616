"""The table of hostile documents and their outcomes in docs/reliability.md.

Runs the hostile corpus (:mod:`tests.hostile.corpus`) through every loader exactly
as the tests do and renders what became of each kind, read back from the output
and the errors file — so the table says what the code does, not what someone
believes it does. ``tests/hostile/test_hostile_corpus.py`` checks that the page
holds the table this renders from its own run; regenerate it with

    flock /tmp/seamline-cpu.lock .venv/bin/python -m tests.outcomes --write --only hostile-documents
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tests.hostile.corpus import NOT_READ, Corpus, build
from tests.hostile.run import LOADERS, run
from tests.outcome_tables import NOT_RUN_AS_ROOT

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tests.hostile.run import Result

NAME = "hostile-documents"
ROOT_ONLY = "an unreadable file"
"""The kind a run as root cannot show (root reads any file): rendered as left out."""


def render(corpus: Corpus, results: Mapping[str, Result], base: Path) -> str:
    """The markdown table: one row per hostile kind, its outcome as the run left it."""
    rows = [
        "| loader | hostile input | outcome | recorded reason |",
        "|---|---|---|---|",
    ]
    for loader in LOADERS:
        result = results[loader]
        written = {line["id"] for line in result.records}
        errors = {line["id"]: line for line in result.errors}
        kinds = [case.kind for case in corpus.of(loader)]
        if loader == "text-files" and ROOT_ONLY not in kinds:
            rows.append(f"| {loader} | {ROOT_ONLY} | {NOT_RUN_AS_ROOT} | |")
        for case in corpus.of(loader):
            if case.outcome == NOT_READ:
                outcome, reason = "not an item (not counted as read)", ""
            elif all(doc_id in written for doc_id in case.ids):
                outcome, reason = "written", ""
                if len(case.ids) > 1:
                    outcome = f"all {len(case.ids)} written"
            else:
                first = errors.get(case.ids[0])
                if first is None:
                    outcome, reason = "**missing: neither written nor recorded**", ""
                else:
                    stage = first["stage"]
                    outcome = "skipped by rule" if stage == "skip" else "dead-lettered"
                    outcome = f"{outcome} (stage `{stage}`)"
                    reason = first["reason"]
            rows.append(f"| {loader} | {case.kind} | {outcome} | {_cell(reason, base)} |")
    return "\n".join(rows)


def _cell(text: str, base: Path) -> str:
    """A reason as a table cell: the corpus's temporary directory shown as ``<corpus>``."""
    text = text.replace(str(base.resolve()), "<corpus>").replace(str(base), "<corpus>")
    text = re.sub(r"\s+", " ", text).replace("|", "\\|")
    return f"`{text}`" if text else ""


def generate() -> str:
    """Build the corpus in a temporary directory, run it, and render the table."""
    with tempfile.TemporaryDirectory(prefix="seamline-hostile-") as name:
        base = Path(name)
        corpus = build(base / "corpus")
        results = {loader: run(corpus, loader, base / loader) for loader in LOADERS}
        return render(corpus, results, base / "corpus")
