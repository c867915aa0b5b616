"""The Python a page shows, run as its reader would: README.md's and docs/python.md's.

Those pages teach the library: each ``python`` block runs in order, in one namespace of
the page's (a later block uses what an earlier one imported or made), from the page's
working directory (``workdir.py``: the checkout's files, the small corpus), so that
``Embedder.from_pipeline("examples/pipelines/embed-docs.yaml")`` and
``open_index("out/embeddings.lance")`` mean what they mean to a reader at the root of a
checkout. Other pages' Python blocks are excerpts of a component's code (a class
without its imports), not programs, and are not collected; the components that
docs/writing-a-component.md gives whole are put through the conformance suite by
``test_guide_code.py`` instead. A block whose first line is
``# not run by the docs tests: <why>`` is skipped, as a console block is.
"""

from __future__ import annotations

import contextlib
import os
import unittest
from collections.abc import Iterator
from pathlib import Path

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser

from tests.docs.pages import ThesePages
from tests.docs.workdir import environment

PAGES = ["README.md", "docs/python.md"]
NOT_RUN = "# not run by the docs tests:"


def run_python_block(example: Example) -> None:
    """Sybil's evaluator for ``python`` blocks: the block executed in the page's namespace."""
    from tests.docs.collect import page_workdir  # the console blocks' helper, shared

    source = str(example.parsed)
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    if first.startswith(NOT_RUN):
        raise unittest.SkipTest(f"marked on the page: not run {first[len(NOT_RUN) :].strip()}")
    workdir = page_workdir(example)
    code = compile(source, f"{example.path}:{example.line}", "exec")
    with _as_a_reader(workdir):
        exec(code, example.namespace)  # the page's own code, run as written


@contextlib.contextmanager
def _as_a_reader(workdir: Path) -> Iterator[None]:
    """In ``workdir``, with the reader's environment variables; both put back after."""
    before, saved = Path.cwd(), dict(os.environ)
    os.environ.update({k: v for k, v in environment(workdir).items() if k.startswith("SEAMLINE")})
    os.chdir(workdir)
    try:
        yield
    finally:
        os.chdir(before)
        os.environ.clear()
        os.environ.update(saved)


def python_page_tests(root: Path, teardown: object) -> Sybil:
    """The Sybil that runs the library pages' ``python`` blocks."""
    return ThesePages(
        parsers=[CodeBlockParser(language="python", evaluator=run_python_block)],
        patterns=PAGES,
        path=str(root),
        teardown=teardown,  # type: ignore[arg-type]
        name="python",
    )
