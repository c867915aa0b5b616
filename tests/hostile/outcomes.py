"""Regenerate the table of hostile documents and their outcomes in docs/reliability.md.

Runs the hostile corpus (:mod:`tests.hostile.corpus`) through both loaders exactly
as the tests do and renders what became of each kind, read back from the output
and the errors file — so the table says what the code does, not what someone
believes it does. ``tests/hostile/test_hostile_corpus.py`` checks that the page
holds the table this renders.

    flock /tmp/seamline-cpu.lock .venv/bin/python -m tests.hostile.outcomes --write
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from tests.hostile.corpus import NOT_READ, Corpus, build
from tests.hostile.run import run

if TYPE_CHECKING:
    from collections.abc import Mapping

    from tests.hostile.run import Result

PAGE = Path(__file__).parents[2] / "docs" / "reliability.md"
BEGIN = "<!-- hostile-outcomes:begin (generated: python -m tests.hostile.outcomes --write) -->"
END = "<!-- hostile-outcomes:end -->"
LOADERS = ("text-files", "jsonl")
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
            rows.append(f"| {loader} | {ROOT_ONLY} | (not run: running as root) | |")
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


def replace_block(page: str, table: str) -> str:
    """``page`` with the text between the markers replaced by ``table``."""
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return f"{page[:start]}\n{table}\n{page[end:]}"


def block(page: str) -> str:
    """The generated table the page holds now."""
    return page[page.index(BEGIN) + len(BEGIN) : page.index(END)].strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the table in {PAGE}")
    args = parser.parse_args(argv)
    level = structlog.make_filtering_bound_logger(logging.WARNING)  # not a line per commit
    structlog.configure(wrapper_class=level)
    table = generate()
    if args.write:
        PAGE.write_text(replace_block(PAGE.read_text(encoding="utf-8"), table), encoding="utf-8")
        print(f"wrote the table into {PAGE}")
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
