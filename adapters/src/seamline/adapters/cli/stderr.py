"""A closed or full stderr costs a command its messages, never its work or its exit code.

Cron jobs and service managers start commands with descriptors closed (``2>&-``) or
pointed at a full disk. Three things went wrong there:

* with stderr closed, Python's ``sys.stderr`` is None and the log set-up asked it
  ``isatty()``: ``run``, ``serve``, ``search``, ``explain``, ``profile`` and ``tune``
  ended at once with exit code 1, silently, having done nothing;
* a closed descriptor is the next one ``open`` hands out, so a file the command opened
  became "standard error" (or output) for whatever writes to that number: a C library's
  warning went into the middle of it. A closed 0, 1 or 2 is the null device here, as
  daemons make it;
* with stderr full (``2>/dev/full``), writing the ``error:`` line of a user error raised
  ``OSError``, and the exit code became 1, not 2: a script could no longer tell its own
  mistake from a failure.

A stdout closed before the command began is handled where stdout's other cases are
(:mod:`.pipes`); here its descriptor only stops being reusable.
"""

from __future__ import annotations

import os
import sys
from typing import Any

STANDARD_DESCRIPTORS = (0, 1, 2)


def standard_streams_kept() -> None:
    """Make every closed standard descriptor the null device, and stderr unfailing."""
    for descriptor in STANDARD_DESCRIPTORS:
        try:
            os.fstat(descriptor)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process
    if not isinstance(sys.stderr, Unfailing):
        sys.stderr = Unfailing(sys.stderr)


class Unfailing:
    """stderr, whose write and flush failures are dropped: a message that cannot be shown
    is lost, and the command goes on to the end it would have had.

    A closed pipe is not dropped: its reader went away (``2>&1 | head``), which
    :mod:`.pipes` ends as a shell would (141, or a usage error's own code).
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self.stream.write(text))
        except BrokenPipeError:
            raise
        except OSError:
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError:
            return

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer...
        return getattr(self.stream, name)
