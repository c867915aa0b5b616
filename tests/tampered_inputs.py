"""The "tampered inputs" table of docs/reliability.md: files seamline reads but did not just
write, each edited as an attacker would, and what the command that reads them did.

Whoever can write an output's folder, a checkpoint or a package's metadata can edit
it: seamline must refuse what it cannot trust in one line naming the place (exit
code 2, no traceback), in bounded time, and must neither open nor print anything
outside what it was asked to read. Each row is one :class:`Tampering`: a kind of
input (``manifest``, ``records``, ``index``, ``command line``...), what was done to
it, and how to prepare it in a fresh folder, which gives an :class:`Attempt` (the
``seamline`` command to run there, and the files outside the input it must not reach).

Rows come from the modules of :data:`SCENARIO_MODULES`, each with a ``SCENARIOS``
list, in that order: a new kind of input (checkpoints, package metadata) adds a
module there, and its rows join the table. Each attempt runs the real command in
this process (typer's test runner) from the folder it was prepared in, with relative
paths as a user types them, or with absolute ones (``absolute=True``, which the
tests run too: the table shows the relative spelling).

What the command reached is seen, not assumed: an audit hook (``sys.addaudithook``)
records every file this process opens while an attempt runs, and each file outside
the input that the attempt names is checked against it (an open refused by
``O_NOFOLLOW`` at a link does not count: nothing is read), and its secret text
against what was printed. A FIFO an attempt plants is opened for writing after the
time bound, so that a command that would wait on it forever shows as over the bound
instead of hanging the tests.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.core.registry import Registry
from tests.outcome_tables import Observations, check, expected, table, text_cell

NAME = "tampered-inputs"
SCENARIO_MODULES: tuple[str, ...] = ("tests.adapters.tampered_search",)
"""The modules whose ``SCENARIOS`` (a list of :class:`Tampering`) make the rows, in order."""
BOUND_S = 30.0
"""Every attempt ends within this (a search loads its model and compiles a query first)."""
REFUSED = 2


@dataclass(frozen=True)
class Attempt:
    """What a tampering prepared: the command to run, and what it must not reach."""

    argv: tuple[str | Path, ...]
    """The command's arguments; a ``Path`` is spelled relative to the folder it runs in,
    or absolute."""
    registry: Registry | None = None
    """What discovery finds while it runs (None: the installed components)."""
    outside: tuple[Path, ...] = ()
    """Files outside the input that the command must not open."""
    secrets: tuple[str, ...] = ()
    """Texts of those files that it must not print."""
    fifos: tuple[Path, ...] = ()
    """FIFOs planted in the input: opened for writing after the bound, to end a wait."""
    placeholders: Mapping[str, str] = field(default_factory=dict)
    """Paths that differ between runs (a generated file name), and how the table shows them."""


@dataclass(frozen=True)
class Tampering:
    """One row: the input, what was done to it, and how to prepare it in a fresh folder."""

    key: str
    input: str
    """The kind of input, as the table names it: manifest, records, index, command line..."""
    label: str
    prepare: Callable[[Path], Attempt]
    exit_code: int = REFUSED
    """What the command should end with: 2 (refused), or 0 where it can go on safely."""


@dataclass(frozen=True)
class Seen:
    """What one attempt did."""

    tampering: Tampering
    attempt: Attempt
    workdir: Path
    exit_code: int
    output: str
    """What the command printed, stdout and stderr."""
    seconds: float
    opened: tuple[str, ...] = ()
    """The files outside the input that it opened."""
    printed: tuple[str, ...] = ()
    """The secrets of those files that it printed."""
    error: str = field(default="")
    """An exception the test runner caught (a traceback escaped the command)."""

    @property
    def lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.strip()]


def scenarios() -> dict[str, Tampering]:
    """Every row, by key, in table order."""
    rows: dict[str, Tampering] = {}
    for name in SCENARIO_MODULES:
        for tampering in importlib.import_module(name).SCENARIOS:
            assert tampering.key not in rows, f"{name}: key {tampering.key!r} twice"
            rows[tampering.key] = tampering
    return rows


# -- what a command opens ------------------------------------------------------------------

_watched: dict[str, str] = {}
"""Real path -> the path as the attempt named it, while an attempt runs."""
_opened: list[str] = []
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _watched:
        return
    path, flags = args[0], args[2] if len(args) > 2 else 0
    if not isinstance(path, str | bytes | os.PathLike):
        return  # a file descriptor
    name = os.fsdecode(path)
    if isinstance(flags, int) and flags & getattr(os, "O_NOFOLLOW", 0) and os.path.islink(name):
        return  # refused at the link: nothing was read
    real = os.path.realpath(name)
    if real in _watched:
        _opened.append(_watched[real])


@contextlib.contextmanager
def watching(paths: tuple[Path, ...]) -> Iterator[list[str]]:
    """The files of ``paths`` opened in this process while the block runs."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)  # for the life of the process: a hook cannot be removed
        _hooked = True
    _watched.update({os.path.realpath(p): str(p) for p in paths})
    _opened.clear()
    try:
        yield _opened
    finally:
        _watched.clear()


def _unblock(fifos: tuple[Path, ...], done: threading.Event) -> None:
    """After the bound, open each FIFO for writing and close it: a reader waiting on it ends."""
    if done.wait(BOUND_S):
        return
    for fifo in fifos:
        with contextlib.suppress(OSError):
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)


# -- running the attempts ------------------------------------------------------------------


class TamperedInputs(Observations[Seen]):
    """Each tampering prepared and attempted once, on first demand."""

    def __init__(self, base: Path, *, absolute: bool = False) -> None:
        super().__init__(base)
        self.absolute = absolute
        self.rows = scenarios()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.rows)

    def observe(self, key: str, workdir: Path) -> Seen:
        tampering = self.rows[key]
        attempt = tampering.prepare(workdir)
        argv = [self.spell(arg, workdir) for arg in attempt.argv]
        done = threading.Event()
        guard = threading.Thread(target=_unblock, args=(attempt.fifos, done), daemon=True)
        with _quiet(attempt.registry) as patch, watching(attempt.outside) as opened:
            patch.chdir(workdir)
            guard.start()
            started = time.perf_counter()
            result = CliRunner().invoke(app, argv, env={"COLUMNS": "250"})
            seconds = time.perf_counter() - started
            done.set()
            reached = tuple(dict.fromkeys(opened))
        error = ""
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            error = f"{type(result.exception).__name__}: {result.exception}"
        output = result.output + (f"\nTraceback (caught by the runner): {error}" if error else "")
        printed = tuple(s for s in attempt.secrets if s in output)
        return Seen(
            tampering, attempt, workdir, result.exit_code, output, seconds, reached, printed, error
        )

    def spell(self, arg: str | Path, workdir: Path) -> str:
        """A path as the user would type it here: relative to ``workdir``, or absolute."""
        if not isinstance(arg, Path):
            return arg
        return str(arg if self.absolute else arg.relative_to(workdir))


@contextlib.contextmanager
def _quiet(registry: Registry | None) -> Iterator[pytest.MonkeyPatch]:
    """Discovery finding ``registry``; logging set up by no command but here, at warning level
    whatever an earlier test in this process left (and restored after)."""
    config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with pytest.MonkeyPatch.context() as patch:
        if registry is not None:
            patch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry))
        patch.setattr(logging_setup, "configure_logging", lambda **_: None)
        try:
            yield patch
        finally:
            structlog.configure(**config)
            root.handlers[:] = handlers
            root.setLevel(level)


# -- the table -----------------------------------------------------------------------------


def outcome_cell(seen: Seen) -> str:
    """Refused (or searched) in one line, without a traceback, within the bound."""
    wanted = seen.tampering.exit_code
    said = []
    if wanted == REFUSED:
        said.append(check(seen.exit_code == REFUSED, "refused", "not refused"))
        said.append(check(len(seen.lines) == 1, "one line", f"{len(seen.lines)} lines"))
    else:
        said.append(check(seen.exit_code == wanted, "answered", f"exit {seen.exit_code}"))
    said.append(check("Traceback" not in seen.output, "no traceback", "a traceback"))
    if "\x1b" in seen.output:  # an escape sequence from the input, driving the terminal
        said.append("**a terminal escape printed**")
    said.append(check(seen.seconds < BOUND_S, f"under {BOUND_S:g} s", f"over {BOUND_S:g} s"))
    return ", ".join(said)


def outside_cell(seen: Seen) -> str:
    """Whether anything outside the input was opened or printed."""
    if not seen.opened and not seen.printed:
        return "nothing opened or printed"
    said = [f"opened {', '.join(seen.opened)}"] if seen.opened else []
    said += ["printed it"] if seen.printed else []
    return f"**{'; '.join(said)}**"


def message(seen: Seen) -> str:
    """The line a refusal printed; for an answer, the text shown for the best hit."""
    if seen.tampering.exit_code != REFUSED and seen.exit_code == seen.tampering.exit_code:
        return "text shown: " + _first_hit_text(seen.output)
    return seen.lines[0] if seen.lines else ""


def _first_hit_text(output: str) -> str:
    """The text column of the first row of ``seamline search``'s table."""
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) >= 5 and cells[1].replace(".", "").lstrip("-").isdigit():
            return cells[4]
    return "(none)"


def render(seen: list[Seen], paths: Mapping[str, str] | None = None) -> str:
    rows = []
    for one in seen:
        placeholders = {**(paths or {}), **one.attempt.placeholders, str(one.workdir): "<tmp>"}
        rows.append(
            (
                one.tampering.input,
                one.tampering.label,
                expected(one.exit_code, one.tampering.exit_code),
                outcome_cell(one),
                outside_cell(one),
                text_cell(message(one), placeholders),
            )
        )
    header = ("input", "tampering", "exit code", "outcome", "outside the input", "message")
    return table(header, rows)


def generate() -> str:
    """Attempt every tampering in a temporary directory and render the table."""
    with tempfile.TemporaryDirectory(prefix="seamline-tampered-") as name:
        return render(TamperedInputs(Path(name)).all())
