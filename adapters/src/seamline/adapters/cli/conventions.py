"""How every ``seamline`` command shows its arguments and refuses an old spelling.

Typer's own help writes a required argument as ``{PIPELINE}`` in the usage line and
as ``PIPELINE <Path>`` beside its help, and an option without a metavar as
``<str>`` or ``<int>``: a reader sees Python's types, not what to type. Every command
is made with :class:`Command` (``app.command(..., cls=Command)``), which writes them
as click and most command lines do (``seamline run [OPTIONS] PIPELINE``, ``--port
INTEGER``); the options themselves name their values (``--port PORT``).

A flag that was renamed so that each short flag means one thing across the whole
command line (``tests/adapters/test_cli_flags.py``) is refused with click's "No such
option" and a hint naming the new spelling (:data:`RENAMED`), rather than a bare
refusal that leaves the user to guess.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, TypeVar

from typer import _click  # typer's own copy of click: its commands are built on it
from typer._click.exceptions import ClickException, NoSuchOption, UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from seamline.adapters.cli.pipes import quiet_when_stdout_closes, usage_message_lost
from seamline.adapters.cli.render.console import error, lines_are_records, records_on_stderr

T = TypeVar("T")

RENAMED: dict[tuple[str, str], str] = {
    ("components", "-k"): "--kind has no short form any more (-k is search's number of "
    "results): use --kind KIND.",
    ("check", "-k"): "The pytest selection is --select now (-k is search's number of "
    "results): use --select EXPR.",
    ("schema", "--output"): "It is -o, --out FILE now, as for profile.",
}
"""(command, old flag) -> the hint added to click's "No such option" for it."""

GROUP_ONLY = {
    flag: "It is seamline's own option, before the command: seamline --version."
    for flag in ("--version", "-V")
}
"""A flag of the ``seamline`` group given to a command: click's "Possible options:
--verbose" for ``seamline run --version`` pointed at another flag altogether."""


def _help_without_pydantic(option: _click.Parameter | None) -> None:
    """An absent ``--help`` reads as False, not None.

    Typer coerces a flag's value through pydantic unless it is already a bool; the
    group's ``--help``, absent from ``seamline run --help``, was None, and reading it
    imported pydantic: a third of the time ``<command> --help`` takes.
    """
    if option is not None and option.default is None:
        option.default = False


def json_logs_asked(args: Sequence[str]) -> bool:
    """Whether the command line asks for ``--log-format json`` (or ``--log-format=json``),
    read from the arguments as typed, before click parses them (options end at ``--``).

    A command enters :func:`.render.console.records_on_stderr` once click has parsed its
    options, so a mistake click found on the same line (an unknown option, a missing
    argument, ``--port abc``) was told as text, among a stderr promised to be JSON. Read
    here, it is in force while click parses: those are records too. Read from the text,
    it may be asked of a command without the option (``seamline search q --log-format
    json``), whose "No such option" is then a record as well: a program that asked for
    JSON gets JSON.
    """
    options = list(args)
    if "--" in options:
        options = options[: options.index("--")]
    return "--log-format=json" in options or ("--log-format", "json") in pairwise(options)


class UsageRecord(ClickException):
    """A usage error click found (an unknown option, a missing argument) while stderr's
    lines are JSON records: shown as one record (:func:`.render.console.error`: the
    message as ``event``, ``exit_code``, and the command's ``usage`` and ``help``) instead
    of click's three lines of text."""

    def __init__(self, problem: ClickException) -> None:
        super().__init__(problem.format_message())
        self.exit_code = problem.exit_code
        self.problem = problem

    def show(self, file: object = None) -> None:
        context = self.problem.ctx if isinstance(self.problem, UsageError) else None
        usage = help_asked = None
        if context is not None:
            usage = context.get_usage().removeprefix("Usage: ")
            names = context.help_option_names
            help_asked = f"{context.command_path} {names[0]}" if names else None
        error(self.message, exit_code=self.exit_code, fields={"usage": usage, "help": help_asked})


def _usage_errors_as_records(action: Callable[[], T]) -> T:
    """Run ``action`` (click parsing); a usage error is a :class:`UsageRecord` while
    stderr's lines are records. One whose ``show`` already writes through
    :func:`.render.console.error` (:class:`.errors.RefusedValue`) is left as it is."""
    try:
        return action()
    except ClickException as problem:
        from seamline.adapters.cli.errors import RefusedValue  # not at import: help stays light

        if not lines_are_records() or isinstance(problem, (RefusedValue, UsageRecord)):
            raise
        raise UsageRecord(problem) from None


class Group(TyperGroup):
    """The ``seamline`` group: its help option costs no pydantic import, a reader that
    closes stdout early ends any command quietly (:mod:`.pipes`), its usage errors too, and
    under ``--log-format json`` a usage error is a JSON record (:func:`json_logs_asked`)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run as click does; a usage error whose message meets a closed pipe ends as
        :func:`.pipes.usage_message_lost` says (141), not as click's exit code 1.

        click prints a usage error in the handler of its ``ClickException``, where a
        ``BrokenPipeError`` escapes its own handling of one: only that (or the same for
        "Aborted!") reaches here, every other is turned into an exit code inside.
        """
        given = kwargs.get("args", args[0] if args else None)
        asked = sys.argv[1:] if given is None else list(given)
        with records_on_stderr(json_logs_asked(asked)):
            try:
                return super().main(*args, **kwargs)
            except BrokenPipeError as problem:
                usage_message_lost(problem)

    def get_help_option(self, ctx: _click.Context) -> TyperOption | None:
        option = super().get_help_option(ctx)
        _help_without_pydantic(option)
        return option

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: _click.Context | None = None,
        **extra: Any,
    ) -> _click.Context:
        """Parse the arguments (``seamline --help`` prints here), quiet on a closed stdout.

        The group's own flags absent (``--install-completion``, ``--show-completion``:
        every ``seamline COMMAND ...``) read as False, not None, as its ``--help`` does
        (:func:`_help_without_pydantic`): reading them imported pydantic for every
        command's help once completion was turned on."""
        for param in self.params:
            if isinstance(param, TyperOption) and param.is_flag:
                _help_without_pydantic(param)
        return _usage_errors_as_records(
            lambda: quiet_when_stdout_closes(
                lambda: super(Group, self).make_context(info_name, args, parent, **extra)
            )
        )

    def invoke(self, ctx: _click.Context) -> Any:
        """Run the command (a command's ``--help`` prints here), quiet on a closed stdout."""
        return _usage_errors_as_records(
            lambda: quiet_when_stdout_closes(lambda: super(Group, self).invoke(ctx))
        )


CLICK_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "Path": "PATH"}
"""The metavar of an option that names none, by its Python type, as click writes it."""


class Command(TyperCommand):
    """A typer command whose help names values as a user types them; old flags get a hint."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperOption) and param.metavar is None and not param.is_flag:
                # click's own names (TEXT, INTEGER, PATH), never typer's <str>.
                bare = param.bare_type().removeprefix("list[").removesuffix("]")
                param.metavar = CLICK_NAMES.get(bare, bare.upper())

    def invoke(self, ctx: _click.Context) -> Any:
        """Run the command; a user error that no call site turned into its message still
        ends as one line and exit code 2, never a traceback (the backstop behind each
        command's own ``user_errors``)."""
        from seamline.adapters.cli.errors import user_errors  # not at import: help stays light

        return user_errors(lambda: super(Command, self).invoke(ctx))

    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        """``[OPTIONS] PIPELINE``: arguments by their name, optional ones in brackets."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                pieces.append(_usage_name(param))
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The Arguments and Options sections; an argument is its name, without a type."""
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):
                arguments.append((_usage_name(param, brackets=False), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        """Parse as click does; an old spelling of a renamed flag is refused with a hint."""
        try:
            return super().parse_args(ctx, args)
        except NoSuchOption as unknown:
            name = unknown.option_name
            hint = RENAMED.get((self.name or "", name)) or GROUP_ONLY.get(name)
            if hint is None:
                raise
            raise NoSuchOption(
                unknown.option_name,
                message=f"No such option: {unknown.option_name}. {hint}",
                ctx=ctx,
            ) from None


def _usage_name(argument: TyperArgument, *, brackets: bool = True) -> str:
    name = argument.metavar or (argument.name or "").upper()
    if brackets and not argument.required:
        name = f"[{name}]"
    return name + ("..." if argument.nargs != 1 else "")
