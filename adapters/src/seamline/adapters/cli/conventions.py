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

from typing import Any

from typer import _click  # typer's own copy of click: its commands are built on it
from typer._click.exceptions import NoSuchOption
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from seamline.adapters.cli.pipes import quiet_when_stdout_closes, usage_message_lost

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


class Group(TyperGroup):
    """The ``seamline`` group: its help option costs no pydantic import, and a reader that
    closes stdout early ends any command quietly (:mod:`.pipes`), its usage errors too."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run as click does; a usage error whose message meets a closed pipe ends as
        :func:`.pipes.usage_message_lost` says (141), not as click's exit code 1.

        click prints a usage error in the handler of its ``ClickException``, where a
        ``BrokenPipeError`` escapes its own handling of one: only that (or the same for
        "Aborted!") reaches here, every other is turned into an exit code inside.
        """
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
        return quiet_when_stdout_closes(
            lambda: super(Group, self).make_context(info_name, args, parent, **extra)
        )

    def invoke(self, ctx: _click.Context) -> Any:
        """Run the command (a command's ``--help`` prints here), quiet on a closed stdout."""
        return quiet_when_stdout_closes(lambda: super(Group, self).invoke(ctx))


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
