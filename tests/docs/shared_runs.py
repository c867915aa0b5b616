"""A page's ``make run`` that another page already ran this session: its result, copied.

README.md and docs/cli.md both begin with ``make run``, each in a fresh folder of its
own that links the same checkout, with the same environment: the same command on the
same inputs, which writes the same ``out/`` and ``build/`` and prints the same lines.
Running it a second time checks nothing the first run did not (and costs half a minute
of the suite, most of it embedding the corpus again). So the first page to run it keeps
what it wrote and printed in the session's folder; a later page gets a copy of those
folders in its own and is shown the same printed lines, which it checks against what
it shows, as it would check its own run's. Its later commands (``seamline search
out/embeddings.lance``, ...) read real output, written by a real ``make run``.

Only a run that succeeded is kept: a failing one fails its own page, and the next page
runs the command itself. The session's folder is made by the controlling process and
named in the environment (pytest-xdist's workers inherit it); a file lock per command
makes a page on the other worker wait for the run in progress instead of starting a
second. Without the variable (a page run on its own, outside the suite's
configuration) every page runs the command itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

FOLDER_VARIABLE = "SEAMLINE_DOCS_SHARED_RUNS"
WORKER_VARIABLE = "PYTEST_XDIST_WORKER"
SHARED_COMMANDS = {"make run": ("out", "build")}
"""Commands run once per session, and the folders of the working directory they write."""
RESULT = "result.json"


def share_runs() -> str | None:
    """Make the session's folder and name it for the workers; the folder to remove, if made."""
    if os.environ.get(WORKER_VARIABLE):
        return None
    folder = tempfile.mkdtemp(prefix="seamline-docs-runs-")
    os.environ[FOLDER_VARIABLE] = folder
    return folder


def run_once(
    command: str, workdir: Path, run: Callable[[], subprocess.CompletedProcess[str]]
) -> subprocess.CompletedProcess[str]:
    """``run()`` the first time ``command`` runs this session; a copy of its result after."""
    folder = os.environ.get(FOLDER_VARIABLE)
    written = SHARED_COMMANDS.get(command)
    if not folder or written is None:
        return run()
    kept = Path(folder) / hashlib.sha256(command.encode()).hexdigest()[:16]
    with FileLock(f"{kept}.lock"):
        result = kept / RESULT
        if result.is_file():
            for name in written:
                if (kept / name).is_dir():
                    shutil.copytree(kept / name, workdir / name, symlinks=True, dirs_exist_ok=True)
            recorded = json.loads(result.read_text(encoding="utf-8"))
            return subprocess.CompletedProcess(command, 0, recorded["printed"])
        completed = run()
        if completed.returncode == 0:
            kept.mkdir()
            for name in written:
                if (workdir / name).is_dir():
                    shutil.copytree(workdir / name, kept / name, symlinks=True)
            result.write_text(json.dumps({"printed": completed.stdout}), encoding="utf-8")
        return completed


def remove(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
