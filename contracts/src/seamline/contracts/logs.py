"""Loggers for seamline's own modules and its components: quiet inside someone else's program.

seamline logs with structlog, and never configures it: how lines look and where
they go is the application's choice (the ``seamline`` command makes it in
``seamline.adapters.logging_setup``). But structlog left unconfigured prints every
level to *standard output*, which would put debug lines into the output of any
program that embeds text with seamline, or pipes it. So a logger from
:func:`get_logger` asks, at each call, whether the application has configured
structlog:

* if it has, the call goes to ``structlog.get_logger(name)``, rendered as the
  application chose (the CLI's lines, JSON, trace ids);
* if not, it goes to the standard library's ``logging.getLogger(name)`` as one
  ``key=value`` line: nothing below WARNING appears unless the application
  configures ``logging``, and what does appear goes to standard error (``logging``'s
  last-resort handler), never to standard output.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import structlog


@cache
def _standard(name: str) -> Any:
    """A structlog logger over ``logging.getLogger(name)``, independent of structlog's config."""
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[
            structlog.stdlib.filter_by_level,  # nothing is formatted for a level that is off
            structlog.processors.format_exc_info,
            structlog.processors.KeyValueRenderer(key_order=["event"], drop_missing=True),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )


class SeamlineLogger:
    """A logger that follows the application's logging set-up, decided at each call."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _target(self) -> Any:
        if structlog.is_configured():
            return structlog.get_logger(self.name)
        return _standard(self.name)

    def __getattr__(self, method: str) -> Any:
        return getattr(self._target(), method)


def get_logger(name: str) -> Any:
    """The logger for ``name`` (``seamline.core``, ``seamline.monitor.log``...)."""
    return SeamlineLogger(name)
