"""Run a contract class programmatically: what ``seamline check`` does under the hood.

pytest collects tests from files, so the runner writes a two-line test module into
a temporary directory that subclasses the class to run, and starts pytest there
with an empty configuration of its own: the caller's ``pytest.ini`` or
``conftest.py`` must not change what conformance means.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
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


@contextlib.contextmanager
def _environment(variable: str, value: str | None) -> Iterator[None]:
    old = os.environ.get(variable)
    if value is not None:
        os.environ[variable] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = old


def run(
    contract_class: type,
    *,
    max_examples: int | None = None,
    select: str | None = None,
    extra_args: Sequence[str] = (),
    echo: bool = False,
) -> SuiteRun:
    """Run every check of ``contract_class`` (a subclass that provides its fixture)."""
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
            with _environment(EXAMPLES_VARIABLE, str(max_examples) if max_examples else None):
                if echo:
                    code = pytest.main(args, plugins=[collector])
                else:
                    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                        code = pytest.main(args, plugins=[collector])
        finally:
            _TARGET = None
            sys.modules.pop(_MODULE_NAME, None)
            if previous_module is not None:
                sys.modules[_MODULE_NAME] = previous_module
            sys.path[:] = previous_path
    records = tuple(collector.records()) if collector.results else ()
    return SuiteRun(int(code), tuple(collector.all_results()), records, output.getvalue())
