"""Logging as a new process has it, for tests that run ``seamline`` in this process.

``seamline run`` sets logging up for a command line (info lines on stderr, through a
handler on the root logger and structlog's configuration); both are process-wide, so a
later test in the same worker would inherit them, and one that counts stderr lines would
count a log line as its own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import structlog


@contextlib.contextmanager
def logging_as_in_a_fresh_process() -> Iterator[None]:
    """structlog's defaults and no root handler inside; what was there before, after."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, structlog.get_config()
    structlog.reset_defaults()
    root.handlers[:] = []
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        handlers, level, config = saved
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**config)
