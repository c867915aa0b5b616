"""Which failure is which exit code, decided once for every command.

A user's mistake (a bad pipeline file, an unknown component, an attention that cannot
serve): exit code 2. A component that failed for good, or the machine around the run
(a full disk, a forbidden directory): 1. Ctrl-C: 130; a SIGTERM or SIGHUP, where the
command turns it into the same stop (:mod:`.stopping`): 143 or 129. Each is one line on
stderr, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterator
from typing import NoReturn, TypeVar

import typer

from seamline.adapters.cli.render.console import error, interrupted, lines_are_records
from seamline.adapters.cli.stopping import exit_code, stopped_by
from seamline.contracts.errors import (
    DISK_QUOTA,
    DISK_SPACE,
    FILE_SIZE,
    MEMORY,
    OPEN_FILES,
    ConfigError,
    ContractViolation,
    ResourceExhausted,
    ShardFailed,
    UserError,
    exhaustion_remedy,
    stop_commits,
)

T = TypeVar("T")

Kept = str | Callable[[KeyboardInterrupt], "tuple[str, str]"]
"""What a stop leaves: the text, or a function of the stop that tells, when the text
depends on how far the command got, ``(when, text)``: ``when`` follows the label
(``interrupted (SIGTERM) after the output was published: ...``); "" for none."""

Report = Callable[[UserError | str], None]
"""Told of a failure before its line on stderr (``--format json``'s document): the user's
error, or any other failure as its one line (a component's, exit code 1)."""

USAGE = 2
"""The exit code of a user's mistake."""
PUBLISHED_NOTHING = "nothing was published"
"""What an interrupted command that publishes (``run``) or records (``check``) says first."""


def user_errors(
    action: Callable[[], T],
    report: Report | None = None,
    *,
    kept_on_interrupt: Kept = "",
) -> T:
    """Run ``action``; a user error becomes a message on stderr and exit code 2.

    ``report``, when given, is told of the error first: ``--format json`` prints it on
    stdout as part of its one document, for a script to read (the line on stderr is
    for the person watching). It is told of a component's failure too (exit code 1),
    as the one line says it: a script reading ``explain --format json`` got no document
    when a plugin's model could not be built. ``kept_on_interrupt``: what Ctrl-C (or a
    SIGTERM, see :mod:`.stopping`) leaves for later, said after "nothing was published"
    (``run``: the last checkpoint, and ``--resume``).
    """
    try:
        return action()
    except UserError as problem:
        if report is not None:
            report(problem)
        error(str(problem), exit_code=USAGE, fields=placed(problem))
        raise typer.Exit(USAGE) from None
    except ShardFailed as failed:  # a component failed for good: the reason, not a traceback
        _failed(str(failed), report, label="failed")
    except ResourceExhausted as exhausted:  # the machine's limit (a `tune`): what to do
        _failed(f"{exhausted}: {exhausted.remedy}, then run again", report)
    except KeyboardInterrupt as stop:
        _stopped(stop, kept_on_interrupt)
    except typer.Exit:  # an inner call's decided exit (a stop's 130): not a failure to name
        raise
    except Exception as failure:  # a component's own code failed (a third party's model)
        from seamline.core import failed_at, one_line  # only now: the import costs start-up

        where = failed_at(failure)
        if where is None:  # nobody's call to name: a bug of seamline's, shown whole
            raise
        # `seamline search` printed the plugin's traceback where `run` says one line; an
        # executor that broke its contract printed 80 lines of the host's frames.
        broke = "broke its contract" if isinstance(failure, ContractViolation) else "failed"
        _failed(f"{where} {broke}: {one_line(failure)}", report, label="failed")


def placed(problem: UserError) -> dict[str, object]:
    """Where ``problem`` is, as fields of its JSON record (under ``--log-format json``): a
    ``ConfigError``'s ``file``, ``line``, ``column`` and ``override`` (those it has), or,
    for a pipeline with several problems, ``problems``: each as ``validate --format
    json`` lists it (``file``, ``line``, ``column``, ``override``, ``message``, ``fix``).

    The record's ``event`` is the message as the text line says it, every problem on a
    line of its own: a log shipper had to split it and read the places back from the text
    (``p.yaml:3:5: ...``), which a file name with a colon defeats. Nothing for any other
    error, nor when stderr's lines are text (the line says it all).
    """
    if not lines_are_records() or not isinstance(problem, ConfigError):
        return {}
    from seamline.adapters.cli.render.pipeline_json import errors_of  # imports the core

    problems = errors_of(problem)
    if len(problems) > 1:
        return {"problems": problems}
    return {key: problems[0][key] for key in ("file", "line", "column", "override")}


def _failed(line: str, report: Report | None, label: str = "error") -> NoReturn:
    """A failure that is not the user's: ``report`` told of it as ``line``, then ``line``
    on stderr and exit code 1."""
    if report is not None:
        report(line)
    error(line, label=label, exit_code=1)
    raise typer.Exit(1) from None


@contextlib.contextmanager
def interrupts(kept: Kept = "") -> Iterator[None]:
    """Ctrl-C or a SIGTERM anywhere in the block: the one line, exit code 130 or 143.

    For what a command does outside :func:`user_errors` (its imports, its set-up), so that
    a stop there is not click's "Aborted!" and exit code 1.
    """
    try:
        yield
    except KeyboardInterrupt as stop:
        _stopped(stop, kept)


def _stopped(stop: KeyboardInterrupt, kept: Kept) -> NoReturn:
    when, said = kept(stop) if callable(kept) else ("", committed_or_not(stop, kept))
    code = exit_code(stop)
    interrupted(said, by=stopped_by(stop), when=when, exit_code=code)
    raise typer.Exit(code) from None


def committed_or_not(stop: KeyboardInterrupt, kept: str) -> str:
    """``kept``, or, for a stop before the run's first commit, that nothing was committed;
    for one inside the first commit, what ``--resume`` does whether it was made or not
    (the sink cannot say which: "what the sink last committed is kept" was said of a run
    stopped while its first commit was flushed, with nothing on disk)."""
    if not kept:
        return kept
    commits = stop_commits(stop)
    if commits == "none":
        return (
            f"{PUBLISHED_NOTHING}; nothing was committed either, so a run again starts from "
            "the beginning"
        )
    if commits == "unknown":
        return (
            f"{PUBLISHED_NOTHING}; the stop came while the first commit was being made, so "
            "it may not have been: run again with --resume to go on from it if it was (from "
            "the beginning if not)"
        )
    return kept


def usage_error(message: str) -> NoReturn:
    """Refuse an option's value: ``message`` on stderr, exit code 2."""
    error(message, exit_code=USAGE)
    raise typer.Exit(USAGE)


class RefusedValue(typer.BadParameter):
    """An option's value refused while click parses the command line: shown as
    :func:`usage_error` shows one (``error: message``, exit code 2), not in click's usage
    box. Raised, not printed: click shows it in its handler, where a closed stderr ends
    as any usage error's does (:meth:`.conventions.Group.main`)."""

    def show(self, file: object = None) -> None:
        error(self.message, exit_code=USAGE)


def environment_errors(
    action: Callable[[], T],
    kept: str,
    writing: object = None,
    nothing_committed: str = "",
    before_the_run: str = "",
) -> T:
    """Run ``action``; a failure of the machine around it becomes one line and exit code 1.

    A full disk, a read-only or forbidden directory, a failing device: the message
    says what happened, to which file, what was kept (``kept``) and what to do. A failed
    ``write()`` names no file (a full disk: "No space left on device" alone): ``writing``,
    the output the command writes, is named then. ``nothing_committed``, when given, is
    said instead of ``kept`` where the run failed before its first commit (a
    :class:`ShardFailed` of a whole run, ``committed`` False): "what the sink last
    committed is kept ... --resume" was said of a read-only folder where nothing was.
    ``before_the_run``, when given, is said where a component's build failed (the run had
    not begun): "what the sink last committed is kept" was said of a model whose
    constructor ran out of open files, with no output folder at all, and the line named
    the output as the file being written; and where a sharded run's driver failed to hold
    its destination or begin its staging area (nothing staged by it).
    """
    try:
        return action()
    except OSError as problem:
        built = _built(problem)
        if built is not None:
            _environment_failure(problem, before_the_run or kept, component=built)
        if _before_staging(problem):
            _environment_failure(problem, before_the_run or kept, writing)
        _environment_failure(problem, kept, writing)
    except ResourceExhausted as problem:
        _exhausted(problem, _kept_after(problem, kept, before_the_run))
    except ShardFailed as failed:
        # A shard run in this process keeps the machine's error as its cause: say that, as
        # for an unsharded run, rather than blame the component whose call it interrupted.
        # Only an error the system reported (it has an errno): an OSError a component
        # raised of its own is the component's failure, named as such.
        cause = failed.__cause__
        if nothing_committed and failed.count == 1 and failed.committed is False:
            kept = nothing_committed
        if isinstance(cause, ResourceExhausted):
            _exhausted(cause, kept)
        ran_out = None if cause is None else _ran_out(cause, failed.component, failed.reason)
        if ran_out is not None:  # a component's call ran out (a loader, a sink, LanceDB's)
            _exhausted(ran_out, kept)
        if not isinstance(cause, OSError) or cause.errno is None:
            raise
        _environment_failure(cause, kept, writing)
    except Exception as failure:  # a call of the driver's (a staged run's publication)
        from seamline.core import failed_at, one_line

        where = failed_at(failure)
        ran_out = None if where is None else _ran_out(failure, where, one_line(failure))
        if ran_out is None:
            raise
        _exhausted(ran_out, _kept_after(failure, kept, before_the_run))


def _kept_after(problem: BaseException, kept: str, before_the_run: str) -> str:
    """What a failure leaves: ``before_the_run`` (when given) where ``problem`` left a
    component's build, else ``kept``."""
    return (before_the_run or kept) if _built(problem) is not None else kept


def _built(problem: BaseException) -> str | None:
    """The component whose build (its constructor) ``problem`` left, as the seam marked it
    (``model 'x' (build, from ...)``); None for any other failure."""
    from seamline.core import failed_at

    where = failed_at(problem)
    return where if where is not None and " (build" in where else None


STAGING_BEGINS = ("recover", "start", "hold_destination", "staged_run", "begin_parts")
"""The sink's calls of a sharded run's driver before any part is staged (``recover`` and
``start``: it clears an interrupted whole run first). A whole run's own calls, and a
part's on an executor of processes, fail as a ``ShardFailed``, not a bare ``OSError``."""


def _before_staging(problem: BaseException) -> bool:
    """Whether ``problem`` left the driver's call that holds the destination or begins the
    staging area of a sharded run (its output folder read-only: the lock not made): "what
    the sink last committed is kept ... --resume" was said where nothing was staged."""
    from seamline.core import failed_at

    where = failed_at(problem) or ""
    return any(f" ({operation}" in where for operation in STAGING_BEGINS)


def _ran_out(error: BaseException, component: str, reason: str) -> ResourceExhausted | None:
    """``error``, which left a call of ``component``, as the machine running out of memory,
    open files or room on disk (a ``MemoryError``; a library's own words for EMFILE or
    ENOSPC, LanceDB's ``RuntimeError`` "... (os error 24)" or "(os error 28)"); None for
    anything else. An ``OSError`` is not taken here (:func:`_environment_failure` names its
    file), nor a ``UserError`` (its message says what to do)."""
    if isinstance(error, (OSError, UserError)):
        return None
    from seamline.core import exhausted, operation_of  # only now: the import costs start-up

    return exhausted(error, f"in {component}", reason, operation_of(component))


RAN_OUT = {
    errno.EMFILE: OPEN_FILES,
    errno.ENFILE: OPEN_FILES,
    errno.ENOMEM: MEMORY,
    errno.EFBIG: FILE_SIZE,
    errno.ENOSPC: DISK_SPACE,
    errno.EDQUOT: DISK_QUOTA,
}
"""The system's errors that say it ran out of something: the fix is named, not "fix that"
(a file past ``ulimit -f`` was told "File too large ...: fix that", nothing said what)."""


def _environment_failure(
    problem: OSError, kept: str, writing: object = None, component: str | None = None
) -> NoReturn:
    # The line is text, not markup (render.console): a folder may be called "[draft]".
    what = problem.strerror or type(problem).__name__
    named = [str(problem.filename)] if problem.filename else []
    if component is not None:
        named.append(f"in {component}")
    elif not named and writing is not None:
        named.append(f"writing {str(writing)!r}")
    where = f" ({', '.join(named)})" if named else ""
    resource = RAN_OUT.get(problem.errno or 0)
    if resource is not None:
        kept = _remedied(kept, resource, _operation(component))
    error(f"{what}{where}: {kept}", exit_code=1)
    raise typer.Exit(1) from None


def _remedied(kept: str, resource: str, step: str = "") -> str:
    """``kept`` with its "fix that" replaced by what to do about ``resource`` running out
    in ``step`` (the component's call, "" for none); a ``kept`` that ends "then run again
    with --resume" gets the remedy that suits it."""
    remedy = exhaustion_remedy(resource, resuming=kept.endswith("--resume"), step=step)
    return kept.replace("fix that", remedy, 1)


def _operation(component: str | None) -> str:
    """The call named in ``component`` (``model 'x' (build, ...)``: ``build``), "" for none."""
    if component is None:
        return ""
    from seamline.core import operation_of

    return operation_of(component)


def _exhausted(problem: ResourceExhausted, kept: str) -> NoReturn:
    """Out of memory, open files or disk: what ran out and where, what is kept, and the fix
    (in place of ``kept``'s "fix that", which says no more than that something broke)."""
    if "fix that" in kept:
        said = _remedied(kept, problem.resource, problem.step)
    else:
        said = f"{kept} ({problem.remedy}, then run again)"
    error(f"{problem}: {said}", exit_code=1)
    raise typer.Exit(1) from None
