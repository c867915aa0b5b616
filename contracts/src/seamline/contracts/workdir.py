"""The working directory, or a user error when it no longer exists.

A shell whose folder was deleted (``rm -rf`` of the run's folder from another terminal,
a checkout recreated by a script) still has it as its working directory, and
``os.getcwd()`` raises ``FileNotFoundError``. ``seamline run /abs/p.yaml`` from there
ended in a traceback out of ``os.path.abspath`` (exit 1), and ``Pipeline.from_yaml``
raised the bare ``FileNotFoundError``: neither said what was wrong or what to do.
Relative paths mean nothing there, so the pipeline is refused before anything else,
as a mistake of the command line (exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path

from seamline.contracts.errors import UserError

GONE = (
    "the working directory no longer exists (it was deleted or moved while this shell "
    "was in it): cd to a folder that does, and run again"
)
"""What a run from a deleted working directory is told."""


def working_folder() -> str:
    """``os.getcwd()``; a :class:`UserError` saying what to do when it was deleted."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise UserError(GONE) from None


def gone_under(path: str | os.PathLike[str]) -> None:
    """The :class:`UserError` of :func:`working_folder` when ``path`` is relative and the
    working directory is gone; nothing otherwise.

    Called where a relative path was not found, before saying it does not exist: from a
    deleted folder every relative name is missing, even when a script recreated the
    folder, with the file, under the same name (``validate pipeline.yaml`` said "does not
    exist" of a file ``ls`` shows). What to do there is to cd again, not to look for it.
    """
    if not os.path.isabs(path):
        working_folder()


def as_written(path: Path) -> str:
    """``path`` as a message names it: relative to the working directory when it lies
    under it (``out/emb.lance``, as the pipeline wrote it before validation made it
    absolute, and as the run's summary names it), else as it is."""
    try:
        return path.relative_to(os.getcwd()).as_posix()
    except (ValueError, FileNotFoundError):  # elsewhere, or the working directory is gone
        return str(path)


def absolute(path: Path) -> Path:
    """``path`` made absolute against the working directory, where ``open()`` finds it.

    Links are kept; ``..`` is taken as the file system takes it: the folders up to the
    last ``..`` are resolved (a linked folder's ``..`` is its target's parent), the rest
    is kept as written. A sink's paths are made absolute by it when its config is
    validated (``OutputPath``), and a model's recorded config by it when the manifest is
    written: both name, wherever they are read later, what this run opened.
    """
    names = Path(os.path.join(working_folder(), path)).parts
    if ".." not in names:
        return Path(os.path.abspath(os.path.join(*names)))
    last = len(names) - 1 - names[::-1].index("..")
    return Path(os.path.realpath(os.path.join(*names[: last + 1])), *names[last + 1 :])
