"""A digest of the seamline code that decides an output's vectors, for resume to compare.

A run resumed by another seamline splices two versions' output into one: a change to
how windows are cut (the span and stored text of a window ending in a combining mark)
gave an output whose first documents had the old text and the rest the new, published
as one, exit 0. Distribution versions do not tell the code apart (every seamline
distribution is 0.1.0 across hundreds of commits of a checkout), so the checkpoint
records this digest too: the sha256 of the Python source of ``seamline.contracts``,
``seamline.core`` and ``seamline.components`` (what reads, windows, embeds and writes),
each file named by its path in its package. The command line's code (``adapters``) is
left out: a change to how a summary is printed does not change what was written.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

PACKAGES = ("seamline.contracts", "seamline.core", "seamline.components")


@functools.cache
def code_digest() -> str:
    """The first 16 hex digits of the sha256 of those packages' ``.py`` files ("" when one
    is not found, as in a process that has only some of them)."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        if not folders:
            return ""
        for folder in folders:
            root = Path(folder)
            for path in sorted(root.rglob("*.py")):
                digest.update(f"{package}/{path.relative_to(root).as_posix()}\n".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
