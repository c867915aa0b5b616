"""Where a page's commands run: a fresh folder that looks like the repository's root.

Every page's commands run as its reader runs them, from the root of a checkout, with the
relative paths the page writes (``examples/pipelines/embed-docs.yaml``, ``out/...``,
``.venv/bin/seamline``). The folder links every top-level entry of this checkout except
what the commands write (``out/``, ``build/``, writing-a-component.md's ``csv-plugin/``),
so ``make run`` finds its Makefile, its virtual environment already set up, and writes
its corpus and output here, not in the checkout. ``seamline`` is on ``PATH`` (the pages
write it for short).

The corpus ``make run`` embeds is the real one that ``examples/corpus/make_corpus.py``
writes, narrowed through ``SEAMLINE_CORPUS`` (which the example pipeline reads) to part
of its Python-topic documents: enough rows (over 256) for the vector index the README
shows, in a fraction of the time of the whole corpus.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITTEN_BY_COMMANDS = {"out", "build", ".git", "csv-plugin"}
CORPUS_PREFIX = "pydoc-"
CORPUS_BYTES = 180_000
"""The shortest Python-topic documents up to this size, with those below: 70 documents,
303 windows (the README's search shows a vector index, built from 256 rows), a sixth of
the whole corpus."""
CORPUS_QUERIED = {"pydoc-try.txt", "pydoc-raise.txt", "pydoc-compound.txt"}
"""Documents the pages' searches name or find (``--where "id = 'pydoc-try.txt'"``)."""
COLUMNS = "100"


@functools.cache
def small_corpus() -> Path:
    """The Python-topic documents of the real corpus, written once per test process and
    removed when it exits (each run of the suite left a folder per worker behind)."""
    whole = Path(tempfile.mkdtemp(prefix="seamline-docs-corpus-"))
    atexit.register(shutil.rmtree, whole, ignore_errors=True)
    subprocess.run(
        [sys.executable, str(ROOT / "examples/corpus/make_corpus.py"), str(whole)],
        check=True,
        capture_output=True,
    )
    narrowed = whole / "topics"
    narrowed.mkdir()
    total = 0
    for document in sorted(whole.glob(f"{CORPUS_PREFIX}*.txt"), key=lambda p: p.stat().st_size):
        if total < CORPUS_BYTES or document.name in CORPUS_QUERIED:
            total += document.stat().st_size
            shutil.move(document, narrowed / document.name)
    return narrowed


def make_workdir() -> Path:
    """A new folder with this checkout's top-level entries linked into it."""
    workdir = Path(tempfile.mkdtemp(prefix="seamline-docs-"))
    for entry in ROOT.iterdir():
        if entry.name not in WRITTEN_BY_COMMANDS:
            (workdir / entry.name).symlink_to(entry)
    return workdir


def environment(workdir: Path) -> dict[str, str]:
    """The reader's environment, with the small corpus and a fixed terminal width."""
    env = dict(os.environ)
    env["PATH"] = f"{workdir / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    if shutil.which("uv", path=env["PATH"]) is None:  # `make` installs uv with pip --user
        env["PATH"] += f"{os.pathsep}{Path.home() / '.local' / 'bin'}"
    env["SEAMLINE_CORPUS"] = str(small_corpus())
    env["COLUMNS"] = COLUMNS
    env.pop("VIRTUAL_ENV", None)
    env.pop("MAKEFLAGS", None)
    env.pop("MFLAGS", None)
    env.pop("MAKELEVEL", None)
    return env
