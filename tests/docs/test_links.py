"""Every link between the docs pages leads somewhere: the file exists, and so does the
heading an anchor names (as GitHub makes a heading's anchor).

A page that moves or renames a heading breaks the links to it without a word; a reader
following "see reliability.md, Caches ..." lands on the top of the page instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(page: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """The anchors of every heading of ``page`` (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose_lines(page):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def local_links(page: Path) -> list[str]:
    links = []
    for line in prose_lines(page):
        for target in LINK.findall(line):
            if not re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                links.append(target)
    return links


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_local_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in local_links(page):
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target}: no file {os.path.relpath(linked, ROOT)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: {linked.name} has no heading with that anchor")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_slug_is_githubs() -> None:
    assert slug("Caches, records and working files") == "caches-records-and-working-files"
    assert slug("`auto` → bfloat16: the GELU formula") == "auto--bfloat16-the-gelu-formula"
    assert slug("Kills, and what a resume makes of them") == "kills-and-what-a-resume-makes-of-them"
