"""The repository's top level holds only what a reader expects to find there.

Twice a stray file from a shell redirect (`o`, then `e`: a command's stderr written in
the checkout) was committed with a docs change and shipped in every clone. A new
top-level entry has to be added here on purpose, so it is seen in review.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {
    ".ci",
    ".gitignore",
    "CONTRIBUTING.md",
    "LICENSE",
    "Makefile",
    "README.md",
    "adapters",
    "benchmarks",
    "components",
    "conftest.py",
    "constraints.txt",
    "contracts",
    "core",
    "docs",
    "examples",
    "kernels",
    "pyproject.toml",
    "tests",
}


def tracked_top_level() -> set[str]:
    """The first path component of every file git tracks in this checkout."""
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {name.split("/", 1)[0] for name in listing.split("\0") if name}


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="not a git checkout: nothing tracked to check",
)
def test_no_unexpected_file_at_the_top_level() -> None:
    unexpected = tracked_top_level() - EXPECTED
    assert not unexpected, (
        f"tracked at the repository's top level but not expected there: {sorted(unexpected)}; "
        "a stray file from a redirect? remove it with `git rm`, or add the entry to EXPECTED "
        "with a reason"
    )
