"""Whether a loader's glob pattern would match a file that does not exist yet.

:func:`seamline.contracts.loader.input_glob_files` lists the files a pattern matches
*today*, so an output the run is about to create was never among them: a loader reading
``data/*.parquet`` with a sink writing ``data/zz-emb.parquet`` passed ``validate`` and
its first run, and the second run read its own output as input (refused only then, as
"one of the files loader.with.path matches"). :func:`would_match` answers from the
pattern's text, as :func:`glob.glob` (``recursive=True``) matches it: ``*``, ``?`` and
``[...]`` within one name, ``**`` alone as a name for any number of folders, and a name
that starts with a dot matched only by a pattern name that starts with one.

The pattern's leading names without wildcards are a folder on disk and are compared
with its links followed, as :func:`seamline.contracts.sink_kit.located` compares an
output; a link met *below* a wildcard is not followed (the files matched today, which the
overlap check also compares, cover a link that exists). The pattern read as a plain path
matches too: a file that exists under that exact name is read as it, wildcards and all.
"""

from __future__ import annotations

import os
import re
from fnmatch import fnmatchcase
from pathlib import Path

_MAGIC = re.compile(r"[*?[]")
"""What makes a name a pattern, as :mod:`glob` decides it."""


def would_match(pattern: str, path: Path) -> bool:
    """Whether ``glob.glob(pattern, recursive=True)`` would list ``path`` once it exists.

    ``path`` is absolute, its folder's links followed. A pattern ending in ``/`` (folders
    only) or with ``..`` after a wildcard is not judged (False).
    """
    if pattern.endswith("/"):
        return False
    names = pattern.split("/")
    # A path that exists as written is read as that file, wildcards or not
    # (:func:`~seamline.contracts.loader.input_glob_names`): once written, so is this one.
    if Path(os.path.realpath(os.path.dirname(pattern) or ".")) / names[-1] == path:
        return True
    first = next((i for i, name in enumerate(names) if _MAGIC.search(name)), len(names))
    if first == len(names):  # no wildcard: the pattern names one file
        return False
    folder = "/".join(names[:first]) or ("/" if pattern.startswith("/") else ".")
    base = Path(os.path.realpath(folder))
    rest = [name for name in names[first:] if name not in ("", ".")]
    if ".." in rest or not path.is_relative_to(base):
        return False
    return _matches(rest, path.relative_to(base).parts)


def _matches(pattern: list[str], names: tuple[str, ...]) -> bool:
    """Whether the pattern's names match ``names``, one for one (``**``: none or more)."""
    if not pattern:
        return not names
    head, rest = pattern[0], pattern[1:]
    if head == "**":  # any number of folders, none hidden (glob's include_hidden=False)
        for skipped in range(len(names) + 1):
            if _matches(rest, names[skipped:]):
                return True
            if skipped < len(names) and names[skipped].startswith("."):
                return False
        return False
    if not names or (names[0].startswith(".") and not head.startswith(".")):
        return False
    return fnmatchcase(names[0], head) and _matches(rest, names[1:])
