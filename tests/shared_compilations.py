"""One JAX compilation cache for a whole test session: every worker and every subprocess.

Most of the suite's time is XLA compiling (measured with JAX's compile-duration events:
about 60 % of ``tests/components``, ``tests/core`` and ``tests/e2e``), and much of it
compiles a program another test already compiled: the same model on the same bucket,
in another test, on the other worker, or in a ``seamline run --no-compile-cache``
subprocess. JAX's persistent cache keys an executable by everything that could change
it (the program, the jax and jaxlib versions, the backend and its flags), so a hit is
the executable that compiling again would make. The CLI's ``enable_compile_cache``
honours ``$JAX_COMPILATION_CACHE_DIR`` below ``$SEAMLINE_CACHE_DIR``, so a ``seamline``
run, in a subprocess or in a test's own process, uses the session's folder unless the
test names a cache of its own (and nothing is written to the home's cache).

The folder is new for each session and removed after it, so nothing carries over from
an earlier session: a run here starts as cold as CI's. The controlling process makes
it and names it in the environment, which pytest-xdist's workers and every subprocess
inherit; it is set in this process's JAX too, for a run on one process.

Measured and not taken: compiling the suite with LLVM's optimisations off
(``XLA_FLAGS=--xla_backend_optimization_level=0`` for every process) cut XLA's backend
compile time of the attention and encoder conformance tests by about 30 % (73.6 and
77.4 s against 48.3 and 60.0 s for their 200 compilations), but the real model's runs
(goldens, the docs' runs, the Python pages) ran slower by more: the whole suite's test
time rose from 3,145 to 3,454 s (2026-12-07, one run each on the same machine). It also
changes the model's embeddings by float32 rounding (2.5e-7 at most).

Measured on the whole suite (2026-12-08, a fresh clone on a 2-CPU Zen 3, a
``sitecustomize.py`` on ``PYTHONPATH`` registering ``jax.monitoring``'s duration listener
in every process and writing each event with ``PYTEST_CURRENT_TEST``): compiling took
1,163 of 3,260 worker-seconds (36 %: tracing 107 s, lowering 174 s, XLA 882 s) in 4,250
compilations this cache did not hold, against 2,226 hits; 306 s of it in
tests/conformance/test_first_party alone (the interpreted Pallas kernels, whose programs
hold host callbacks and are never cached).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from seamline.adapters.compile_cache import enable_compile_cache

FOLDER_VARIABLE = "JAX_COMPILATION_CACHE_DIR"
EVERY_COMPILATION = {
    # Cache every compilation, however short or small: the suite's are mostly small
    # (what ``enable_compile_cache`` sets in a process, said to its children).
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}
WORKER_VARIABLE = "PYTEST_XDIST_WORKER"


def share_compilations() -> str | None:
    """Make the session's cache folder and point this process and its children at it.

    Returns the folder to remove when the session ends; None in a pytest-xdist worker,
    which uses the folder its controller named.
    """
    if os.environ.get(WORKER_VARIABLE):
        folder = os.environ.get(FOLDER_VARIABLE)
        made = None
    else:
        folder = made = tempfile.mkdtemp(prefix="seamline-test-compilations-")
        os.environ.update({FOLDER_VARIABLE: folder, **EVERY_COMPILATION})
    if folder:
        enable_compile_cache(Path(folder))
    return made


def session_cache(fallback: Path) -> str:
    """The folder a ``seamline run`` subprocess should name in ``$SEAMLINE_CACHE_DIR``: the
    session's, where this process runs in one (what the session already compiled is a hit,
    so a killed run's subprocess compiles nothing the suite compiled before), else
    ``fallback`` (a harness run outside pytest, to write no cache in the home)."""
    return os.environ.get(FOLDER_VARIABLE) or str(fallback)


def remove(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
