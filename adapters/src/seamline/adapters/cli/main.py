"""``seamline``: run, validate and explore pipelines from the command line.

This module is the typer app and the list of its commands; each command is a module
of :mod:`seamline.adapters.cli.commands`, what it prints is
:mod:`seamline.adapters.cli.render`'s, and which failure is which exit code is
:mod:`seamline.adapters.cli.errors`' (a user's mistake prints one clear message and
exits with code 2, without a traceback).

Only the light corners of seamline are imported here and by the command modules:
``seamline --help`` must not import JAX or load a component (a command imports what
it needs when it runs).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Any

import typer

from seamline.adapters.cli.commands import (
    bench,
    check,
    components,
    explain,
    profile,
    run,
    schema,
    search,
    serve,
    trace,
    tune,
    validate,
)
from seamline.adapters.cli.conventions import Command, Group
from seamline.adapters.cli.render.console import encodes_everything
from seamline.adapters.cli.stderr import standard_streams_kept
from seamline.adapters.cli.stopping import (
    STOPPED,
    dropped_stops_raised_again,
    ending_with_the_command,
    leave_after_stop,
)

app = typer.Typer(
    name="seamline",
    cls=Group,
    help="Compose and run JAX inference pipelines from swappable, contract-checked components.",
    no_args_is_help=True,
    # Shell completion (--install-completion, --show-completion): measured to cost
    # `seamline --help` nothing, and it completes commands and options through
    # conventions.Group/Command (tests/adapters/test_cli_completion.py).
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain help: rendering it with rich costs more start-up than the rest of --help.
    rich_markup_mode=None,
    # -h as well as --help, on every command (click hands it down to subcommands).
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    """The version, and what tells two seamlines' outputs apart: its distributions stay
    0.1.0 across hundreds of commits, so an operator comparing the writer of an output or
    a checkpoint (before an upgrade or a rollback) needs the code digest its manifests and
    checkpoints record (``versions.seamline-code``), and the formats it writes. One line,
    the version second, as scripts read it (``cut -d' ' -f2``); nothing heavy imported."""
    if value:
        from seamline.contracts.formats import CHECKPOINT_FORMAT, MANIFEST_FORMAT
        from seamline.contracts.versions import installed_version
        from seamline.core import seamline_code

        typer.echo(
            f"seamline {installed_version('seamline-adapters')} (code "
            f"{seamline_code() or 'unknown'}; manifest format {MANIFEST_FORMAT}, checkpoint "
            f"format {CHECKPOINT_FORMAT})"
        )
        raise typer.Exit


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Show seamline's version, code digest and file formats, and exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Compose and run JAX inference pipelines from swappable, contract-checked components."""


# In the order `seamline --help` lists them; every command shows its help and refuses
# an old flag as `conventions.Command` does.
app.command("run", cls=Command)(run.run)
app.command("validate", cls=Command)(validate.validate)
app.command("explain", cls=Command)(explain.explain)
app.command("tune", cls=Command)(tune.tune)
app.command("profile", cls=Command)(profile.profile)
app.add_typer(trace.app, name="trace")
app.add_typer(bench.app, name="bench")
app.command("components", cls=Command)(components.components)
app.command("check", cls=Command)(check.check)
app.command("schema", cls=Command)(schema.schema)
app.command("search", cls=Command)(search.search)
app.command("serve", cls=Command)(serve.serve)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``seamline`` command.

    A command a stop ended (Ctrl-C: 130, SIGTERM: 143, SIGHUP: 129) leaves through
    :func:`.stopping.leave_after_stop`: Python's teardown of modules after a stop during
    a compile crashed in JAX (exit 139). A stop Python would drop (one raised in JAX's
    garbage-collection callback) is raised again: :func:`.stopping.dropped_stops_raised_again`.
    """
    standard_streams_kept()
    _replace_what_cannot_be_shown()
    ending_with_the_command()  # a signal while Python exits after a run is told too
    try:
        with dropped_stops_raised_again():
            return app(args=argv, prog_name="seamline")
    except SystemExit as done:
        if isinstance(done.code, int) and done.code in STOPPED:  # a stop
            leave_after_stop(done.code)
        raise


def _replace_what_cannot_be_shown() -> None:
    """On a stream that cannot encode every character (``PYTHONIOENCODING=ascii``, a
    Latin-1 terminal), show the ones it cannot as ``?``: a document's ``é`` in a search hit
    was a ``UnicodeEncodeError`` traceback, after ``run`` had published its output.
    (JSON documents are written ASCII-escaped there: :func:`.render.console.json_line`.)"""
    for stream in (sys.stdout, sys.stderr):
        if not encodes_everything(stream):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(errors="replace")  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
