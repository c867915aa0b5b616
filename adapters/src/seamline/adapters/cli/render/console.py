"""The consoles every command prints through, and how a line is made.

A line is made of parts: a ``str`` is text, shown as written, and a ``(str, style)``
pair is text in a style. Nothing a command prints is parsed as rich markup, so a
value — a pipeline's name, a file's, a span's in a trace file, a component's from
its package metadata — is never taken for a tag (``[draft]`` dropped, ``[/]``
raising ``MarkupError``) or an emoji code (``:x:``); and each control character in
it is shown as "�" (:func:`~seamline.contracts.untrusted.visible`), never sent to
the terminal. Newlines and tabs are kept.

Light on purpose: importing this module imports no part of rich, so that
``seamline --help`` does not pay for it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

Part = str | tuple[str, str]
"""Text as written, or ``(text, style)``: never markup."""


UNWRAPPED = 10_000
"""The width of a console that is not a terminal: wide enough that nothing is folded."""


class Consoles:
    """Consoles made on each use, so each invocation sees its own terminal and COLUMNS.

    On a terminal, rich fits the output to its width. Into a pipe or a file, a line is
    not folded and a table's cells are not cut at 80 columns (rich's default there):
    what goes to ``grep``, ``cut`` or a log keeps every value whole, one record a line,
    and has no colour unless ``FORCE_COLOR`` asks for it (https://force-color.org: it
    forces colour, nothing else; :func:`on_a_terminal` decides what only a terminal
    gets). ``COLUMNS`` still sets a width where one is wanted.
    """

    @property
    def out(self) -> Console:
        return _console(stderr=False)

    @property
    def err(self) -> Console:
        return _console(stderr=True)


def _console(*, stderr: bool) -> Console:
    console = _piped_console()
    stream = sys.stderr if stderr else sys.stdout
    if _is_terminal(stream) or os.environ.get("COLUMNS"):
        return console(stderr=stderr)
    return console(stderr=stderr, width=UNWRAPPED)  # colour only if forced (FORCE_COLOR)


@functools.cache
def _piped_console() -> type[Console]:
    """rich's ``Console``, except on a closed pipe: rich exits 1 there itself (after sending
    stdout to the null device, whichever stream it was); this one raises
    ``BrokenPipeError``, for :mod:`seamline.adapters.cli.pipes` to decide what it means."""
    from rich.console import Console

    class PipedConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more of this console's output is tried
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return PipedConsole


def on_a_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal a person watches: what only such a stream gets (a
    progress bar redrawn in place, a quieter default log level) asks this, not rich's
    ``Console.is_terminal``, which ``FORCE_COLOR`` or ``TTY_COMPATIBLE`` turn true for a
    pipe: a piped ``seamline run`` then drew its bar into the log (``\\r`` redraws), lost
    its info lines, and began each JSON log line with an escape code that broke ``jq``."""
    return _is_terminal(stream)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced by an object without one, or closed
        return False


consoles = Consoles()


def text(*parts: Part) -> Text:
    """The parts as one rich ``Text``: each shown as written, its control characters as "�"."""
    from rich.text import Text

    from seamline.contracts.untrusted import visible

    return Text.assemble(
        *(
            (visible(part, keep="\n\t"), "")
            if isinstance(part, str)
            else (visible(part[0], keep="\n\t"), part[1])
            for part in parts
        )
    )


def title(words: str) -> Text:
    """A table's title as :func:`text`, in the style rich gives a title it parses itself."""
    shown = text(words)
    shown.style = "table.title"
    return shown


def table(*args: Any, **kwargs: Any) -> Table:
    """A rich table, imported when a command first prints one (not for ``--help``).

    Give a title (:func:`title`), a caption and every cell that holds a value as
    :func:`text`: a plain ``str`` there is parsed as markup.
    """
    from rich.table import Table

    return Table(*args, **kwargs)


def line(*parts: Part, console: Console | None = None, soft_wrap: bool = False) -> None:
    """One line of a command's report on stdout (or ``console``).

    Rich folds a long line at the console's width unless ``soft_wrap``, which leaves that
    to the terminal (as for lines that quote paths and hashes); into a pipe or a file no
    line is folded (a script reads one record per line). Numbers are not highlighted:
    the report's colours are its own.
    """
    target = console or consoles.out
    target.print(text(*parts), highlight=False, soft_wrap=soft_wrap or not target.is_terminal)


_records = {"on": False}
"""Whether the command's lines on stderr are JSON records (:func:`records_on_stderr`)."""
LOGGER = "seamline.cli"
"""The ``logger`` of those records: the command's own lines, not a component's log."""


@contextlib.contextmanager
def records_on_stderr(on: bool) -> Iterator[None]:
    """Within the block (a command asked for ``--log-format json``), the ``error:``,
    ``warning:`` and ``interrupted`` lines are written as JSON records, as its logs are.

    With the log lines JSON and those lines text, ``jq`` and a log shipper reading
    stderr failed on the one line that said why the command ended (``jq`` exit 4): a
    user's mistake left no record at all, a stopped run only ``run finished``, ``ok:
    false``, with no reason. ``on`` False leaves them text, as does the end of the block.
    """
    before = _records["on"]
    _records["on"] = on
    try:
        yield
    finally:
        _records["on"] = before


def lines_are_records() -> bool:
    """Whether stderr's lines are JSON records now (within :func:`records_on_stderr`)."""
    return _records["on"]


def record(level: str, event: str, **fields: object) -> str:
    """One JSON record, as a log line is (``event``, ``level``, ``logger``, ``timestamp``),
    ``fields`` that are "" or None left out; strict JSON, escaped as :func:`json_line`'s."""
    from datetime import UTC, datetime

    from seamline.contracts.untrusted import SHOWN_JSON_ESCAPED

    told = {name: value for name, value in fields.items() if value not in ("", None)}
    stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    document = {"event": event, **told, "level": level, "logger": LOGGER, "timestamp": stamp}
    plain = not encodes_everything(sys.stderr)
    return json.dumps(document, ensure_ascii=plain, allow_nan=False).translate(SHOWN_JSON_ESCAPED)


def _told_as_record(level: str, event: str, **fields: object) -> bool:
    """Write one :func:`record` on stderr if its lines are records (else False: nothing)."""
    if not _records["on"]:
        return False
    sys.stderr.write(record(level, event, **fields) + "\n")
    sys.stderr.flush()
    return True


def error(
    message: str,
    label: str = "error",
    exit_code: int | None = None,
    fields: Mapping[str, object] | None = None,
) -> None:
    """``error: message`` on stderr (``label`` may say ``failed``); under JSON logs, a
    record with the ``exit_code`` the command ends with and ``fields``: what a program
    reads apart from the message (a pipeline error's ``file``, ``line`` and ``column``,
    a usage error's ``usage``), which the text line already says in its words."""
    if _told_as_record("error", message, label=label, exit_code=exit_code, **(fields or {})):
        return
    line((f"{label}:", "bold red"), " ", message, console=consoles.err, soft_wrap=True)


def warn(message: str) -> None:
    """``warning: message`` on stderr, on one line (a script's stdout is left to results)."""
    if _told_as_record("warning", message, label="warning"):
        return
    line(("warning:", "bold yellow"), " ", message, console=consoles.err, soft_wrap=True)


def interrupted(kept: str = "", by: str = "", when: str = "", exit_code: int | None = None) -> None:
    """What Ctrl-C leaves behind (``kept``: what a command keeps for later, and how to go on).

    ``by``: the signal that stopped it, when not Ctrl-C (``SIGTERM``), for the log of a
    job a scheduler stopped. ``when``: where the command had got to, when that changes
    what the stop means (``after the output was published``). Under JSON logs, a record:
    ``event`` "interrupted", ``signal``, ``when``, ``kept`` (what to do: ``--resume``) and
    the ``exit_code``.
    """
    if _told_as_record(
        "warning", "interrupted", signal=by, when=when, kept=kept, exit_code=exit_code
    ):
        return
    label = f"interrupted ({by})" if by else "interrupted"
    label = f"{label} {when}" if when else label
    if not kept:  # a command that writes nothing (search, explain): nothing to say of it
        line((label, "bold yellow"), console=consoles.err)
        return
    line((f"{label}:", "bold yellow"), f" {kept}", console=consoles.err)


def note(message: str) -> None:
    """A line on stderr beside output that goes to a file or a pipe (``wrote PATH``)."""
    line(message, console=consoles.err)


def json_line(document: object) -> None:
    """``document`` as one line of strict JSON on stdout: its characters as they are, or
    ``\\u`` escapes where stdout cannot encode them (``PYTHONIOENCODING=ascii``), so the
    line is valid JSON either way (it was a ``UnicodeEncodeError`` traceback).

    Line breaks JSON leaves as they are (U+2028, U+0085), the C1 controls and the
    bidirectional overrides are ``\\u`` escapes always (``SHOWN_JSON_ESCAPED``): a pipeline
    named ``"a\\u2028b"`` cut ``validate --format json``'s lines for ``splitlines()``,
    and a stored text's U+009B drove the terminal ``search --format json`` printed on.
    """
    from seamline.contracts.untrusted import SHOWN_JSON_ESCAPED

    plain = not encodes_everything(sys.stdout)
    shown = json.dumps(document, ensure_ascii=plain, allow_nan=False)
    raw(shown.translate(SHOWN_JSON_ESCAPED) + "\n")


def encodes_everything(stream: object) -> bool:
    """Whether ``stream`` encodes every character (a UTF encoding; unknown counts as yes)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return str(encoding).lower().replace("-", "").startswith("utf")


def raw(content: str) -> None:
    """Text for a pipe or a file (JSON, Markdown), written as is: never through rich."""
    sys.stdout.write(content)
