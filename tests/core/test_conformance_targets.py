"""What a conformance module's source says of its import, read without running it.

``seamline components`` listed a suite whose class was misspelt, whose module did not
parse, or whose module imports a package that is not installed as ``ok``; it now reads
the module (:mod:`seamline.core.trust.targets`). What the source cannot tell must not
make a good suite ``broken``: these pin both sides.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seamline.core.trust.targets import import_problem


def module(tmp_path: Path, source: str) -> str:
    path = tmp_path / "suites.py"
    path.write_text(source, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "source",
    [
        "class Suite:\n    pass\n",
        "try:\n    from missing_pkg import Suite\nexcept ImportError:\n    class Suite:\n"
        "        pass\n",
        "import sys\nif sys.version_info >= (3, 11):\n    Suite = object\n",
        "from os import path as Suite\n",
        "Base = object\nSuite: type = Base\n",
        "with open(__file__) as Suite:\n    pass\n",
        "def __getattr__(name):\n    return object\n",
        "from os.path import *\n",
        "globals()['Suite'] = object\n",
        "if (Suite := object):\n    pass\n",
    ],
)
def test_what_binds_the_name_or_cannot_be_told_is_not_a_problem(
    tmp_path: Path, source: str
) -> None:
    assert import_problem(module(tmp_path, source), "suites:Suite") is None


def test_a_missing_class_a_missing_package_and_a_syntax_error_are(tmp_path: Path) -> None:
    path = module(tmp_path, "class Suit:\n    pass\n")
    assert import_problem(path, "suites:Suite") == (
        f"import would fail: AttributeError: module 'suites' has no attribute 'Suite' "
        f"(read from {path})"
    )
    path = module(tmp_path, "import os\nfrom no_such_package.sub import x\nSuite = 1\n")
    assert import_problem(path, "suites:Suite") == (
        "import would fail: ModuleNotFoundError: No module named 'no_such_package', which "
        f"its module imports ({path}:2)"
    )
    path = module(tmp_path, "class Suite(:\n")
    problem = import_problem(path, "suites:Suite")
    assert problem is not None
    assert problem.startswith("import would fail: SyntaxError: ")
    assert problem.endswith(f"({path}:1)")


def test_a_compiled_module_is_not_judged(tmp_path: Path) -> None:
    path = tmp_path / "suites.cpython-311-x86_64-linux-gnu.so"
    path.write_bytes(b"\x7fELF")
    assert import_problem(str(path), "suites:Suite") is None
