"""Run a contract class programmatically: what ``seamline check`` does under the hood.

pytest collects tests from files, so the runner writes a two-line test module into
a temporary directory that subclasses the class to run, and starts pytest there
with an empty configuration of its own: the caller's ``pytest.ini`` or
``conftest.py`` must not change what conformance means. Nor may the caller's
environment: ``PYTEST_ADDOPTS`` (``-k priority``) made a record of one check that
``seamline check --record`` called passing, and a plugin pytest loads by itself
(pytest-randomly) reorders or deselects checks. So the run ignores ``PYTEST_ADDOPTS``
and ``PYTEST_PLUGINS``, loads no plugin by entry point but hypothesis's, and keeps
only records of the whole suite (:meth:`Collector.records_to_keep`). A contract
class's fixtures may use pytest's own fixtures (``tmp_path``), not a plugin's.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from seamline.contracts.conformance import CheckResult, ConformanceRecord
from seamline.contracts.testing._common import EXAMPLES_VARIABLE
from seamline.contracts.testing.results import Collector

_TARGET: type | None = None
_MODULE_NAME = "test_conformance"

_MODULE = """\
from seamline.contracts.testing import runner

class TestConformance(runner.target()):
    pass
"""


def target() -> type:
    """The contract class being run (read by the generated test module)."""
    if _TARGET is None:
        raise RuntimeError("no conformance target: use seamline.contracts.testing.runner.run")
    return _TARGET


@dataclass(frozen=True)
class SuiteRun:
    """What a run of the suite found."""

    exit_code: int
    results: tuple[CheckResult, ...]
    records: tuple[ConformanceRecord, ...]
    output: str
    """pytest's own output (shown with ``--verbose``, or when the run itself broke)."""

    @property
    def passed(self) -> bool:
        return bool(self.records) and all(record.passed for record in self.records)


ISOLATED: dict[str, str | None] = {
    "PYTEST_ADDOPTS": None,
    "PYTEST_PLUGINS": None,
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}
"""The environment pytest runs the suite in (None: unset), whatever the caller's."""

PLUGINS = ("_hypothesis_pytestplugin",)
"""The plugins loaded by name (entry points are not): hypothesis's reports its examples."""


@contextlib.contextmanager
def _environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set (or, for None, unset) these variables for the block, then restore them."""
    old = {variable: os.environ.get(variable) for variable in values}
    for variable, value in values.items():
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value
    try:
        yield
    finally:
        for variable, value in old.items():
            if value is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = value


def run(
    contract_class: type,
    *,
    max_examples: int | None = None,
    select: str | None = None,
    extra_args: Sequence[str] = (),
    echo: bool = False,
    plugins: Sequence[object] = (),
) -> SuiteRun:
    """Run every check of ``contract_class`` (a subclass that provides its fixture).

    Its records are of the whole suite: one a ``select`` left checks out of is kept as
    the selection's (``seamline check`` refuses to write such a one), any other carries a
    failing ``whole_suite`` result when checks did not run. ``plugins``: objects with
    pytest hooks to watch the run by (``seamline check``'s progress bar); they must not
    change what it checks.
    """
    global _TARGET
    collector = Collector()
    with tempfile.TemporaryDirectory(prefix="seamline-check-") as workdir:
        root = Path(workdir)
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (root / f"{_MODULE_NAME}.py").write_text(_MODULE, encoding="utf-8")
        args = [
            str(root / f"{_MODULE_NAME}.py"),
            "-c",
            str(root / "pytest.ini"),
            "--rootdir",
            str(root),
            "-p",
            "no:cacheprovider",
            "-q",
            "--no-header",
            *(arg for plugin in PLUGINS for arg in ("-p", plugin)),
            *(["-k", select] if select else []),
            *extra_args,
        ]
        output = io.StringIO()
        _TARGET = contract_class
        # pytest imports the generated file as the top-level module 'test_conformance' and
        # puts its directory on sys.path: without this, a second run in the same process
        # fails with "import file mismatch" (and a caller's own module of that name would
        # be replaced by ours).
        previous_module = sys.modules.pop(_MODULE_NAME, None)
        previous_path = list(sys.path)
        try:
            examples = {EXAMPLES_VARIABLE: str(max_examples)} if max_examples else {}
            with _environment({**ISOLATED, **examples}):
                watching = [collector, *plugins]
                if echo:
                    code = pytest.main(args, plugins=watching)
                else:
                    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                        code = pytest.main(args, plugins=watching)
        finally:
            _TARGET = None
            sys.modules.pop(_MODULE_NAME, None)
            if previous_module is not None:
                sys.modules[_MODULE_NAME] = previous_module
            sys.path[:] = previous_path
    kept = collector.records() if select else collector.records_to_keep()
    records = tuple(kept) if collector.results else ()
    return SuiteRun(int(code), tuple(collector.all_results()), records, output.getvalue())
