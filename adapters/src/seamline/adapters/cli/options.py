"""The arguments and options several commands share, declared once."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli.errors import RefusedValue, usage_error, user_errors


def named_path(fix: str) -> Callable[[str], Path]:
    """A parser for a path argument or option that refuses an empty one, saying ``fix``.

    ``Path("")`` is ``.``: unrefused, ``''`` (an unset shell variable, say) would be read as
    the working directory, a path the user did not name, and the message about it would
    name ``.``.
    """

    def parse(text: str) -> Path:
        if not text:
            raise typer.BadParameter(f"the path is empty: {fix}")
        return Path(text)

    return parse


WHOLE = re.compile(r"[+-]?[0-9]+")
"""A whole number as one types it: ``int()`` would take ``5_000`` and other scripts' digits too."""


def whole_number(
    flag: str, bounds: str = "", least: int | None = None
) -> Callable[[str | int], int]:
    """A parser for an integer option that refuses what is not a whole number in the CLI's
    own words: ``-k must be a whole number from 1 to 10,000, not 'abc'`` (exit code 2).

    typer's own check answered in pydantic's words (``Input should be a valid integer,
    unable to parse string as an integer``) and read ``-k 5.0`` as 5. ``bounds`` says the
    range in those words; ``least``, where given, is checked here too (where it is not,
    the command checks the range with the rest of its options).
    """

    def parse(text: str | int) -> int:
        if isinstance(text, int):  # the option's default, which click passes through too
            return text
        if WHOLE.fullmatch(text) is None or (least is not None and int(text) < least):
            raise RefusedValue(f"{flag} must be a whole number{f' {bounds}' if bounds else ''}, "
                               f"not {text!r}")  # fmt: skip
        return int(text)

    return parse


def offering(*values: str) -> Callable[[str], list[str]]:
    """Shell completion of an option's value: those of ``values`` that begin as typed.

    ``seamline run --format <TAB>`` offered nothing. The option stays a ``str`` rather than
    a ``click.Choice``: the command checks the value in its own words (``error: --format
    must be text or json, not 'xml'``, exit code 2) and takes an old spelling a choice would
    refuse (``--format table``); its ``metavar`` lists the values in ``--help``. Given
    as typer's ``autocompletion`` (which passes what its parameters' types ask for):
    click's ``shell_complete`` warned on every command in typer 0.29, deprecated.
    """

    def complete(incomplete: str) -> list[str]:
        return [value for value in values if value.startswith(incomplete)]

    return complete


pipeline_path = named_path("name the pipeline YAML file")
"""The pipeline argument as a path; an empty one is refused."""


PipelineArg = Annotated[
    Path,
    typer.Argument(
        help="The pipeline YAML file.",
        metavar="PIPELINE",
        show_default=False,
        parser=pipeline_path,
    ),
]
PipelinesArg = Annotated[
    list[Path],
    typer.Argument(
        help="The pipeline YAML files (one or more).",
        metavar="PIPELINE",
        show_default=False,
        parser=pipeline_path,
    ),
]


def as_utf8(argument: str) -> str:
    """A command-line ``argument`` as the UTF-8 text its bytes spell.

    Python decodes ``argv`` with the locale's encoding: under ``LC_ALL=C`` with
    ``PYTHONUTF8=0`` (UTF-8 mode turned off) that is ASCII, and every byte of ``café``
    past the ASCII ones becomes a lone surrogate, which a check then refuses (a search
    query as "not valid Unicode", a ``--set`` value as a character YAML does not allow)
    although the user typed valid UTF-8. The bytes are taken back (``os.fsencode``
    undoes the decoding exactly) and read as UTF-8; bytes that are not UTF-8 either are
    left as they were, for that check to name.

    Under a multibyte locale (``ja_JP.eucJP``) the C library decodes ``argv`` and
    Python's codec cannot always encode what it made (``東京`` typed as UTF-8 holds a
    byte EUC-JP gives as U+009D): that was a UnicodeEncodeError traceback. The bytes are
    then read from the process's command line (:func:`_typed_bytes`); where they cannot
    be, the argument is refused naming the locale, not searched as mojibake.
    """
    import os

    try:
        return os.fsencode(argument).decode("utf-8")
    except UnicodeDecodeError:
        return argument
    except UnicodeEncodeError:
        typed = _typed_bytes(argument)
    if typed is None:
        raise RefusedValue(
            f"{argument!r} cannot be read back as the bytes that were typed: the locale "
            f"({_locale_named()}) decoded them as {sys.getfilesystemencoding()}, which they are "
            "not; run under a UTF-8 locale (LC_ALL=C.UTF-8) or set PYTHONUTF8=1"
        )
    try:
        return typed.decode("utf-8")
    except UnicodeDecodeError:  # typed in the locale's encoding: its reading is the text
        return argument


def _typed_bytes(argument: str) -> bytes | None:
    """The bytes of ``argument`` as the command line holds them (Linux's
    ``/proc/self/cmdline``), or None where they cannot be told: the argument is a whole
    entry of ``argv``, or one after an ASCII option joined to it (``--set=V``, ``-sV``)."""
    try:
        raw = Path("/proc/self/cmdline").read_bytes().split(b"\0")[:-1]
    except OSError:
        return None
    entries = sys.orig_argv
    if len(raw) != len(entries):
        return None
    if argument in entries:
        return raw[entries.index(argument)]
    for entry, data in zip(entries, raw, strict=True):
        prefix = entry[: len(entry) - len(argument)]
        joined = prefix.startswith("-") and (prefix.endswith("=") or len(prefix) == 2)
        if entry.endswith(argument) and joined and prefix.isascii():
            return data[len(prefix) :]
    return None


def _locale_named() -> str:
    """The variable that set the locale, as ``LC_ALL=ja_JP.eucJP``, for a message."""
    import os

    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        if name in os.environ:
            return f"{name}={os.environ[name]}"
    return "no LC_ALL, LC_CTYPE or LANG set"


def _set_values_as_utf8(values: list[str] | None) -> list[str] | None:
    """Each ``--set`` as the UTF-8 text the user typed (:func:`as_utf8`)."""
    return None if values is None else [as_utf8(value) for value in values]


SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        help="Override a value: --set model.with.max_length=128 (repeatable).",
        metavar="PATH=VALUE",
        callback=_set_values_as_utf8,
    ),
]
CompileCache = Annotated[
    bool,
    typer.Option(
        "--compile-cache/--no-compile-cache",
        help="Reuse compiled shapes across runs (JAX persistent cache in "
        "$SEAMLINE_CACHE_DIR, else $JAX_COMPILATION_CACHE_DIR, else ~/.cache/seamline/jax).",
    ),
]
"""The persistent compile cache, on by default for every command that compiles a model's
or a component's programs (``run``, ``profile``, ``search``, ``serve``,
``check``): without it each ``search`` compiled its query programs again, seconds of every
command, and each ``check`` its whole suite's, most of a minute. ``tune`` and ``bench
attention`` leave it off (cli.md says why)."""


def compile_cache_on(wanted: bool) -> None:
    """Switch JAX's persistent compile cache on when ``wanted`` (a user error: exit 2)."""
    if wanted:
        from seamline.adapters.compile_cache import enable_compile_cache

        user_errors(enable_compile_cache)


FORMATS = ("text", "json")
"""What ``--format`` takes, on every command that has it: one meaning everywhere."""
FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        help="text (for people) or json (one document on stdout for scripts; schemas in "
        "docs/cli.md).",
        metavar="[text|json]",
        autocompletion=offering(*FORMATS),
    ),
]


def output_format(value: str) -> str:
    """``--format``'s value, checked: ``text`` or ``json`` (exit code 2 for anything else).

    ``table``, its name on ``components`` and ``search`` before every command that prints
    took ``--format``, is still read as ``text``, so that scripts written then keep working.
    """
    if value == "table":
        return "text"
    if value not in FORMATS:
        usage_error(f"--format must be text or json, not {value!r}")
    return value
