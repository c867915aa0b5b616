"""The ways a user spells an output path, for tests that run the way users do.

Every example in the README gives the sink a path relative to the directory the run
starts in (``out/emb.lance``); scripts give absolute ones; a path may go through
``..`` or through a folder that is a symbolic link. A sink must behave the same
whichever it is given: publish, commit, resume. :func:`place` lays out a working
directory for one spelling and says what to write in the pipeline file and where
the output really is, so that a test can run from that directory (``cwd``) and read
the result back from ``folder`` (always an absolute path to the real folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SPELLINGS = ("absolute", "relative", "dotdot", "symlinked")
"""``absolute``: /tmp/.../out/emb.jsonl; ``relative``: out/emb.jsonl from the run's own
working directory; ``dotdot``: out/../out/emb.jsonl from there; ``symlinked``:
out/emb.jsonl from there, where ``out`` is a link to a folder ``real-out``."""

LABELS = {
    "absolute": "absolute (`/…/out/emb`)",
    "relative": "relative (`out/emb`)",
    "dotdot": "with `..` (`out/../out/emb`)",
    "symlinked": "through a linked folder (`out` → `real-out`)",
}
"""How a table names each spelling."""


@dataclass(frozen=True)
class Placed:
    """One spelling laid out in a working directory."""

    spelling: str
    cwd: Path
    """The directory the run starts in (absolute)."""
    path: Path
    """What the pipeline file says (relative to ``cwd`` unless ``absolute``)."""
    folder: Path
    """The folder the output really lands in (absolute, no link)."""

    @property
    def output(self) -> Path:
        """The output, as an absolute path without links (to read it back)."""
        return self.folder / self.path.name


def place(cwd: Path, name: str, spelling: str) -> Placed:
    """Lay out ``cwd`` for ``spelling`` of the output ``out/<name>`` and say how it is spelled."""
    if spelling not in SPELLINGS:
        raise ValueError(f"no spelling {spelling!r}; the spellings are {', '.join(SPELLINGS)}")
    cwd.mkdir(parents=True, exist_ok=True)
    cwd = cwd.resolve()
    folder = cwd / "out"
    if spelling == "absolute":
        return Placed(spelling, cwd, folder / name, folder)
    if spelling == "relative":
        return Placed(spelling, cwd, Path("out") / name, folder)
    if spelling == "dotdot":
        folder.mkdir(exist_ok=True)  # the kernel needs out/ to exist to walk out/..
        return Placed(spelling, cwd, Path("out") / ".." / "out" / name, folder)
    real = cwd / "real-out"
    real.mkdir(exist_ok=True)
    folder.symlink_to(real, target_is_directory=True)
    return Placed(spelling, cwd, Path("out") / name, real)
