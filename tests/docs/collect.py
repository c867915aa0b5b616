"""The docs tests: every console block of README.md, CONTRIBUTING.md and docs/*.md, run as
its reader would (and the library pages' Python blocks: ``python_blocks.py``).

Collected by Sybil (the repository's ``conftest.py`` hands pytest its collector), so that
``pytest README.md docs/cli.md`` runs one page, and each block is a test named by its
page and line. A page's blocks run in order, in one working directory of its own
(``workdir.py``), so that a ``make run`` early on a page is what its later ``search``
reads. Before a page's first command, its file blocks are written there: a fenced block
whose first line is ``# file: NAME`` is the file NAME, as shown (a reader copies it).
A ``$ cat NAME`` whose NAME does not exist yet writes the lines shown under it to NAME:
that is how a page shows a file its reader makes (``docs.csv``).

A ``make run`` that another page already ran this session is not run again: the page
gets a copy of what it wrote and printed (``shared_runs.py``).

Each command must exit with the code a trailing ``# exit code N`` states, else 0, or 2
where the page shows a line ``error: ...`` (a user error), and
must print what the page shows, in shape (``shape.py``). A failed command whose page
discards its stderr (``2>/dev/null``) is run again without that, to show its error; a
mismatch can be written into the page with ``SEAMLINE_DOCS_UPDATE=1`` (review the diff).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import unittest
from pathlib import Path
from typing import Any

from sybil import Example
from sybil.parsers.markdown import CodeBlockParser
from sybil.sybil import SybilCollection

from tests.docs.console import Step, parse_console
from tests.docs.pages import ThesePages
from tests.docs.python_blocks import python_page_tests
from tests.docs.shape import is_log_line, mismatch
from tests.docs.shared_runs import run_once
from tests.docs.workdir import ROOT, environment, make_workdir

FILE_BLOCK = re.compile(r"^```[\w-]*\n# file: (?P<name>[\w./-]+)\n(?P<body>.*?)^```", re.M | re.S)
USER_ERROR = 2
STATED_EXIT = re.compile(r"#[^#]*\bexit code (\d+)\s*$")
DISCARDED_STDERR = re.compile(r"\s*\b2>\s*/dev/null\b")
COMMAND_TIMEOUT_S = 600
WORKDIR = "seamline_docs_workdir"
UPDATE_VARIABLE = "SEAMLINE_DOCS_UPDATE"
CONSOLE_PAGES = ["README.md", "CONTRIBUTING.md", "docs/*.md"]


def run_console_block(example: Example) -> str | None:
    """Sybil's evaluator for ``console`` blocks: a failure's text, or None."""
    block = parse_console(example.parsed)
    if block.not_run_because is not None:
        raise unittest.SkipTest(f"marked on the page: not run {block.not_run_because}")
    workdir = page_workdir(example)
    failures = []
    for step in block.steps:
        failure = _run_step(step, workdir, Path(example.path))
        if failure is not None:
            failures.append(f"$ {step.command}\n{failure}")
    return "\n\n".join(failures) or None


def _run_step(step: Step, workdir: Path, page: Path) -> str | None:
    if step.shown is not None and _writes_shown_file(step, workdir):
        return None
    completed = run_once(step.command, workdir, lambda: _run_command(step.command, workdir))
    shows_error = step.shown is not None and any(
        line.lower().startswith("error:") for line in step.shown
    )
    stated = STATED_EXIT.search(step.command)
    expected = int(stated.group(1)) if stated else USER_ERROR if shows_error else 0
    if completed.returncode != expected:
        return (
            f"exit code {completed.returncode}, the page implies {expected}:\n{completed.stdout}"
            + _discarded_stderr(step.command, workdir)
        )
    if step.shown is None:
        return None
    failure = mismatch(list(step.shown), completed.stdout)
    if failure is not None and os.environ.get(UPDATE_VARIABLE) == "1":
        return _update_page(page, step, completed.stdout) or failure
    if failure is not None:
        failure += (
            f"\n\nIf the page should show what it printed now: {UPDATE_VARIABLE}=1 "
            f".venv/bin/python -m pytest {_relative(page)} writes it into the page (review "
            "the diff)."
        )
    return failure


def _discarded_stderr(command: str, workdir: Path) -> str:
    """For a failed command whose page throws its stderr away (``2>/dev/null``, which
    hides a log line the page need not show): what it says on stderr, from the command
    run again without the redirection, since its error is on stderr and the page dropped it.
    """
    bare = DISCARDED_STDERR.sub("", command)
    if bare == command:
        return ""
    again = _run_command(bare, workdir)
    return (
        f"\nThe page discards the command's stderr (2>/dev/null), where errors go. Run it "
        f"again without it here ({workdir}: a copy of the checkout's root, removed when "
        f"the page's tests end), exit code {again.returncode}, it printed:\n{again.stdout}"
        f"\nTo run it by hand, from the checkout's root after the page's earlier commands: {bare}"
    )


def _relative(page: Path) -> str:
    try:
        return page.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(page)


def _run_command(command: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=workdir,
        env=environment(workdir),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )


def _update_page(page: Path, step: Step, printed: str) -> str | None:
    """With ``SEAMLINE_DOCS_UPDATE=1``: write what the command printed into the page, in
    place of what the page showed (as pytest-examples' update mode does); review the diff."""
    assert step.shown is not None
    text = page.read_text(encoding="utf-8")
    shown = f"$ {step.command}\n" + "\n".join(step.shown) + "\n"
    if text.count(shown) != 1:
        return None
    lines = [line.rstrip() for line in printed.rstrip("\n").split("\n")]
    if not any(is_log_line(line) for line in step.shown):
        lines = [line for line in lines if not is_log_line(line)]
    page.write_text(text.replace(shown, f"$ {step.command}\n" + "\n".join(lines) + "\n"), "utf-8")
    return f"updated the page with what it printed: review the diff\n{printed}"


def _writes_shown_file(step: Step, workdir: Path) -> bool:
    """``$ cat NAME`` of a file not yet there: the page shows a file its reader makes."""
    words = shlex.split(step.command)
    if len(words) != 2 or words[0] != "cat" or step.shown is None:
        return False
    target = workdir / words[1]
    if target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(step.shown) + "\n", encoding="utf-8")
    return True


def page_workdir(example: Example) -> Path:
    """The page's working directory, made (with its file blocks) at its first command."""
    namespace: dict[str, Any] = example.namespace
    if WORKDIR not in namespace:
        workdir = make_workdir()
        for match in FILE_BLOCK.finditer(example.document.text):
            target = workdir / match.group("name")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"# file: {match.group('name')}\n{match.group('body')}", "utf-8")
        namespace[WORKDIR] = workdir
    workdir = namespace[WORKDIR]
    assert isinstance(workdir, Path)
    return workdir


def _remove_workdir(namespace: dict[str, Any]) -> None:
    workdir = namespace.pop(WORKDIR, None)
    if isinstance(workdir, Path):
        shutil.rmtree(workdir, ignore_errors=True)


def documentation_tests(root: Path) -> SybilCollection:
    """The Sybils that collect the docs' console blocks under ``root``, and the library
    pages' Python blocks (``python_blocks.py``)."""
    console = ThesePages(
        parsers=[CodeBlockParser(language="console", evaluator=run_console_block)],
        patterns=CONSOLE_PAGES,
        path=str(root),
        teardown=_remove_workdir,
        name="docs",
    )
    return console + python_page_tests(root, _remove_workdir)
