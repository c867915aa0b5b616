"""JAX's warnings about compile cache entries: one log line, and a broken entry removed.

An entry cut short (a full disk while JAX wrote it: JAX writes in place) is never
repaired: JAX does not overwrite an entry that exists, so every later run warned
``Error -5 while decompressing data: incomplete or truncated stream`` and compiled
again, and JAX's raw ``UserWarning`` (two lines, a source path) went to stderr among
the JSON log lines. Here such a warning becomes one seamline log line, and the entries
of that program in the cache seamline chose (checked private: every entry is this
user's) are removed, so the next run writes them whole. JAX names only the program
(``jit_seamline_step``), not the entry, so all of that program's entries go: a
removed entry costs one compile, never a wrong result.
"""

from __future__ import annotations

import glob
import re
import warnings
from pathlib import Path
from typing import Any

from seamline.contracts.logs import get_logger

log = get_logger("seamline.adapters.compile_cache")

JAX_SAID = re.compile(
    r"Error (reading|writing) persistent compilation cache entry for '([^'/]+)': (.*)", re.S
)
_cache: list[Path] = []  # the directory seamline pointed JAX at, once it passed the check


def route_cache_warnings(directory: Path) -> None:
    """Turn JAX's warnings about ``directory``'s entries into log lines (and repairs)."""
    _cache[:] = [directory]
    if not getattr(warnings.showwarning, "seamline_cache", False):
        warnings.showwarning = _shown_by(warnings.showwarning)


def _shown_by(shown: Any) -> Any:
    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        said = JAX_SAID.match(str(message))
        if said is None or not _cache:
            shown(message, category, *args, **kwargs)
            return
        doing, program, error = said.groups()
        removed = _remove_entries(_cache[0], program)
        log.warning(
            f"compile cache entry could not be {'read' if doing == 'reading' else 'written'}; "
            "compiled instead",
            program=program,
            error=error.strip().splitlines()[0] if error.strip() else "",
            directory=str(_cache[0]),
            entries_removed=removed,
        )

    show.seamline_cache = True  # type: ignore[attr-defined]
    return show


def _remove_entries(directory: Path, program: str) -> int:
    """Remove ``program``'s entries (``<program>-<key>-cache``), which JAX writes again."""
    removed = 0
    for entry in directory.glob(f"{glob.escape(program)}-*-cache"):
        try:
            entry.unlink()
            removed += 1
        except OSError:
            pass  # another process removed it, or it cannot be: JAX warns again next time
    return removed
