"""The checkout's folders and interpreters, and how one benchmark module starts another.

Every benchmark is a module of the ``benchmarks`` package, run from the repository root
with ``python -m``; so is every process a benchmark starts of its own code (a worker
side, the reference side in ``.venv-golden``): :func:`module_command` builds that
command and :data:`ROOT` is its working folder, wherever the driver itself was started.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root: the working folder of every process a benchmark starts."""
RESULTS = ROOT / "benchmarks" / "results"
"""Where the benchmarks write their JSON and pictures unless told ``--out``."""
MAKE_CORPUS = ROOT / "examples" / "corpus" / "make_corpus.py"

SEAMLINE = Path(os.environ.get("SEAMLINE_BIN", ROOT / ".venv" / "bin" / "seamline"))
"""The ``seamline`` command the whole-process benchmarks time (``SEAMLINE_BIN``: another
environment's, as ``device_check.sh`` sets it on a GPU machine)."""
REFERENCE_PYTHON = Path(
    os.environ.get("SEAMLINE_REFERENCE_PYTHON", ROOT / ".venv-golden" / "bin" / "python")
)
"""The interpreter of the reference side (torch, sentence-transformers), which ``.venv``
never holds: ``.venv-golden`` unless ``SEAMLINE_REFERENCE_PYTHON`` names another."""
REFERENCE_MISSING = (
    f"error: {REFERENCE_PYTHON} is missing: the reference side needs it; create it with "
    "`bash tests/golden/make_golden.sh --setup-only`"
)
REFERENCE_SOURCES = (ROOT / "adapters" / "src", ROOT / "contracts" / "src")
"""Where the reference side finds :mod:`seamline.adapters.measure`: its interpreter has no
seamline installed, and the package imports only the standard library."""


def module_command(module: str, *arguments: str, python: Path | None = None) -> list[str]:
    """``python -m MODULE ARGUMENTS``: one of this package's modules, to run in :data:`ROOT`.

    ``python`` None is this interpreter; :data:`REFERENCE_PYTHON` for a reference side
    (then run it with :func:`reference_env`).
    """
    return [str(python or sys.executable), "-m", module, *arguments]


def reference_env() -> dict[str, str]:
    """What a reference-side process's environment adds to this one's: the sources it imports."""
    return {"PYTHONPATH": os.pathsep.join(str(path) for path in REFERENCE_SOURCES)}


def before_environment(environ: dict[str, str], before: str | Path) -> dict[str, str]:
    """``environ`` with ``before`` (source folders, ``:``-joined) first on ``PYTHONPATH``: a
    ``seamline.*`` package found there is imported instead of this checkout's, whose
    editable installs are path entries after it. How a benchmark's ``--before`` side runs
    an earlier checkout's code over this environment's packages."""
    path = os.pathsep.join(filter(None, [str(before), environ.get("PYTHONPATH")]))
    return {**environ, "PYTHONPATH": path}


PACKAGES = ("contracts", "core", "components", "adapters")
"""seamline's packages, each in its own ``src`` tree: a ``--before`` side needs them all."""

BEFORE_RECIPE = "every src tree of that checkout copied into one folder: docs/cli.md, Start-up"
"""How to make a ``--before`` folder, for the messages and ``--help``."""


def check_before(before: str) -> str | None:
    """Why ``--before`` cannot be used (None: it can): each folder must hold ``seamline/``,
    and together they must hold every seamline package.

    One distribution's tree (``--before /tmp/before/core/src``, as the docs once said)
    paired that checkout's core with today's adapters, which could not import it: every
    run of the side failed ("seamline run exited 1") after minutes of the others.
    """
    folders = before.split(os.pathsep)
    for folder in folders:
        if not (Path(folder) / "seamline").is_dir():
            return f"--before {folder}: no seamline/ in it (give {BEFORE_RECIPE})"
    missing = [
        f"seamline.{name}"
        for name in PACKAGES
        if not any((Path(folder) / "seamline" / name).is_dir() for folder in folders)
    ]
    if missing:
        return (
            f"--before {before}: {', '.join(missing)} not in it, so today's would be imported "
            f"with the earlier code and fail: give {BEFORE_RECIPE}"
        )
    return None


def timed_seamline_run(
    pipeline: Path,
    settings: Iterable[str],
    environ: Mapping[str, str],
    *,
    flags: Iterable[str] = (),
    failure: type[Exception] = RuntimeError,
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """``seamline run PIPELINE FLAGS --set S ...`` in :data:`ROOT`, output captured, timed
    from its start to its exit, as the whole-process benchmarks time it; ``failure``
    raised (with the end of its error output) when it exits non-zero."""
    argv = [
        str(SEAMLINE), "run", str(pipeline), *flags,
        *(item for setting in settings for item in ("--set", setting)),
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(argv, env=dict(environ), cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise failure(f"seamline run exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, done
