"""A measuring child process's channel to its driver: JSON lines on a private stdout.

A worker answers its driver with JSON lines on stdout. Libraries print there too
(warnings, loggers nobody configured), and one stray line would corrupt the protocol;
so the worker keeps a private copy of stdout for its answers and points file
descriptor 1 at stderr, which the driver keeps as the worker's log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import IO, Any


def protocol_stream() -> IO[str]:
    """A private, line-buffered copy of stdout; stdout itself goes to stderr from now on."""
    stream = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return stream


def send(stream: IO[str], message: Mapping[str, Any]) -> None:
    """One message as one JSON line, flushed at once (the driver is waiting for it)."""
    stream.write(json.dumps(message) + "\n")
    stream.flush()
