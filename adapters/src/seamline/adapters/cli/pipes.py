"""A reader that closes stdout early (``seamline search ... | head -1``) ends the command quietly.

Python ignores SIGPIPE, so a write to a pipe nobody reads any more raises
``BrokenPipeError``; click turned that into exit code 1, which a script cannot tell
from a failure. Commands such as ``git`` or ``ls`` die from SIGPIPE instead, which a
shell reports as 141 (128 + 13), without a word. :func:`quiet_when_stdout_closes` does
the same without restoring SIGPIPE's default (which would kill the process on any
closed pipe or socket, a Ray worker's or a server client's included): when stdout's
reader is gone, the rest of the output goes to the null device and the command exits
141, no traceback and no message.

A usage error (an unknown command, a missing argument) is click's to print, after the
command has ended: when its message meets a closed pipe (``seamline bogus 2>&1 |
true``), :func:`usage_message_lost` ends it as seamline's own errors end there (141 when
stdout's reader is gone), never as click's exit code 1 for a broken pipe.

Only a closed *stdout* is taken so: a ``BrokenPipeError`` from anything else (a socket,
a worker's pipe) while stdout is still read is an error like any other. Nothing of a
command's work depends on stdout: ``seamline run`` publishes its output before it prints
its summary there, and reports progress and logs on stderr.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer

T = TypeVar("T")

CLOSED = 128 + signal.SIGPIPE
"""The exit code when stdout's reader went away (141), as a shell reports SIGPIPE's."""


def quiet_when_stdout_closes(action: Callable[[], T]) -> T:
    """Run ``action`` and flush stdout; if stdout's reader has gone, exit 141 quietly.

    A stdout that was closed before the command began (``>&-``: Python's ``sys.stdout`` is
    None) is the null device: the command does its work, its report goes nowhere, as the
    user asked (every command ended in ``AttributeError: 'NoneType' object has no
    attribute 'flush'``, ``run`` before it began). A stdout that cannot take what is
    written (``>/dev/full``, a full disk) is one line on stderr and exit code 1, saying the
    work is done: ``run`` had published its output, then printed a traceback.
    """
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process
    guarded = _Guarded(sys.stdout)
    sys.stdout = guarded
    try:
        result = action()
        sys.stdout.flush()  # what is buffered fails here, not after the exit code is decided
    except BrokenPipeError:
        if not stdout_is_closed():
            raise
        _stdout_to_null()
        raise typer.Exit(CLOSED) from None
    except StdoutUnwritable as failed:
        _stdout_to_null()
        sys.stderr.write(
            f"error: cannot write to standard output ({failed.strerror or failed}); what the "
            "command did is done, only what it printed there is lost\n"
        )
        raise typer.Exit(1) from None
    finally:
        if sys.stdout is guarded:
            sys.stdout = guarded.stream
    return result


class StdoutUnwritable(OSError):
    """Writing to stdout failed for another reason than a closed pipe (a full disk)."""


class _Guarded:
    """stdout, whose write and flush failures (but a closed pipe's) are told apart from the
    command's own ``OSError`` (a sink's full disk, which the command reports itself)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return int(self._told_apart(self.stream.write, text))

    def flush(self) -> None:
        self._told_apart(self.stream.flush)

    @staticmethod
    def _told_apart(call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except BrokenPipeError:  # a closed pipe: quiet_when_stdout_closes's 141
            raise
        except OSError as err:
            raise StdoutUnwritable(err.errno, err.strerror) from None

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, buffer...
        return getattr(self.stream, name)


def usage_message_lost(problem: BrokenPipeError) -> NoReturn:
    """End the process whose usage error ``problem`` kept click from printing.

    141, quietly, when stdout's reader is gone, as for any other output; otherwise (only
    stderr was closed) the exit code of the error click was showing (2 for a usage
    error, the ``__context__`` of ``problem``): the command was refused either way.
    """
    code = CLOSED if stdout_is_closed() else getattr(problem.__context__, "exit_code", 2)
    _stdout_to_null()
    _stderr_to_null()
    sys.exit(code)


def stdout_is_closed() -> bool:
    """Whether stdout is a pipe (or socket) whose reader is gone: ``poll`` says POLLERR."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): never closed
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _stdout_to_null() -> None:
    """Send what stdout still holds, and the interpreter's last flush, to the null device,
    so that no "Exception ignored ... BrokenPipeError" follows at exit."""
    _to_null(sys.stdout)


def _stderr_to_null() -> None:
    """The same for stderr, where the usage message broke off (its remainder would fail)."""
    _to_null(sys.stderr)


def _to_null(stream: object) -> None:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())  # type: ignore[attr-defined]
        os.close(null)
