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
