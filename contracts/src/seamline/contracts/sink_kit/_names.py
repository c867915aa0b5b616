"""Output names too long for the hidden working files a sink keeps beside them.

Every output name ``N`` gets hidden working files named after it in its folder: the
lock ``.N.lock``, partial files ``.N.partial.XXXXXXXX.tmp``, the checkpoint and the
temporary its commits are written to (``.N.checkpoint.XXXXXXXX.tmp``), the manifest's
temporary (``.N.XXXXXXXX.tmp``). A name of 225 to 255 bytes is legal, so it passed
``validate``, and the run failed at its first commit with ``File name too long
(.../.aaaa....manifest.json.lock) ... run again with --resume``, which could never
succeed. :func:`overlong` finds such a name while the pipeline is validated, from the
file system's own limit (``NAME_MAX``, asked of the folder the output goes in).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

DEFAULT_NAME_MAX = 255
"""The longest name, in bytes, when the file system cannot be asked (Linux, macOS: 255)."""
RANDOM = "X" * 8
"""The random part ``tempfile.mkstemp`` gives a temporary's name: eight characters."""
LONGEST_SUFFIX = {
    "path": f".checkpoint.{RANDOM}.tmp",  # a commit's new checkpoint, before its rename
    "the manifest": f".{RANDOM}.tmp",  # the manifest, before its rename
}
"""The longest hidden name seamline derives from each output, after ``.<name>``; an
output not listed here (the errors file, the npy index) gets partial files."""
PARTIAL_SUFFIX = f".partial.{RANDOM}.tmp"


def longest_hidden_name(label: str, name: str) -> str:
    """The longest hidden working file name derived from the output ``name`` (its ``label``)."""
    return f".{name}{LONGEST_SUFFIX.get(label, PARTIAL_SUFFIX)}"


def name_max(path: Path) -> int:
    """The longest name in bytes the folder of ``path`` takes: asked of its nearest folder
    that exists (where it will be created), else :data:`DEFAULT_NAME_MAX`."""
    for folder in path.parents:
        try:
            return int(os.pathconf(folder, "PC_NAME_MAX"))
        except (OSError, ValueError):
            continue
    return DEFAULT_NAME_MAX


def overlong(outputs: Sequence[tuple[str, str, Path]]) -> list[tuple[str, str]]:
    """``(field, problem)`` for each ``with:`` field whose outputs (``(field, label, path)``:
    the file it names and those derived from it) have a name too long for their hidden
    working files; the problem names the output that needs the most bytes cut, so that
    one cut mends them all."""
    worst: dict[str, tuple[int, str, Path]] = {}
    for field, label, path in outputs:
        cut_by = _excess(label, path)
        if cut_by > 0 and cut_by > worst.get(field, (0, "", path))[0]:
            worst[field] = (cut_by, label, path)
    return [(field, _said(label, path, field)) for field, (_, label, path) in worst.items()]


def _excess(label: str, path: Path) -> int:
    """How many bytes the longest hidden name derived from ``path`` is over the limit."""
    return len(os.fsencode(longest_hidden_name(label, path.name))) - name_max(path)


def _said(label: str, path: Path, field: str) -> str:
    hidden = longest_hidden_name(label, path.name)
    size, limit = len(os.fsencode(hidden)), name_max(path)
    pattern = hidden.replace(path.name, "<name>", 1)
    return (
        f"{label} {cut(path.name, 40)!r} has a name of {len(os.fsencode(path.name))} bytes, "
        f"and the hidden working file seamline keeps beside it ({pattern!r}) would have "
        f"{size}, more than the {limit} bytes this file system allows in a name: shorten "
        f"the file name in {field} by at least {size - limit} bytes{_made_from(label, field)}"
    )


def _made_from(label: str, field: str) -> str:
    """Why cutting ``path`` mends a file the user never named (the errors file, the
    manifest): its name is made from ``path``'s. A field that names its own file (``path``,
    ``errors_path``) needs no such word."""
    return f" (the name of {label} is made from it)" if field == "path" != label else ""
