"""What `make test`'s two workers each run whole (the scheduler in the root conftest.py).

A session fixture that does real work (starts Ray, runs scenarios) is made once per
worker that uses it: the modules sharing one go to one worker, by the table ``SHARED``.
A new module using such a fixture must join its group, or the work is done twice.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import SHARED, worker_scope

ROOT = Path(__file__).resolve().parents[1]
CONFTESTS = [ROOT / "tests" / "conftest.py", ROOT / "tests" / "scaling" / "conftest.py"]
CHEAP = {"registry", "scale_registry"}
"""Session fixtures that only discover components: made once per worker is fine."""


def session_fixtures() -> set[str]:
    names = set()
    for conftest in CONFTESTS:
        for node in ast.walk(ast.parse(conftest.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                "session" in ast.unparse(decorator) for decorator in node.decorator_list
            ):
                names.add(node.name)
    return names


def modules_using(fixture: str) -> set[str]:
    word = re.compile(rf"\b{fixture}\b")
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if path.name != Path(__file__).name and word.search(path.read_text(encoding="utf-8"))
    }


def test_the_modules_sharing_a_costly_session_fixture_are_one_group() -> None:
    costly = session_fixtures() - CHEAP
    assert set(SHARED) <= costly, sorted(set(SHARED) - costly)
    assert {"ray_cluster", "fault_outcomes", "hostile_pipelines"} <= costly
    for fixture in sorted(costly):
        using = modules_using(fixture)
        assert using, f"no module uses {fixture}"
        if fixture in SHARED:
            assert using == set(SHARED[fixture]), (fixture, sorted(using))
        else:
            assert len(using) == 1, f"add {fixture}'s modules to SHARED in conftest.py: {using}"


def test_a_module_a_class_a_page_or_a_group_runs_whole_on_one_worker() -> None:
    assert worker_scope("tests/core/test_config.py::test_a[x::y]") == "tests/core/test_config.py"
    assert worker_scope("tests/a/test_b.py::TestC::test_d[1]") == "tests/a/test_b.py::TestC"
    assert worker_scope("README.md::sybil:docs,line:32,column:1") == "README.md"
    assert worker_scope("docs/cli.md::sybil:docs,line:963,column:1") == "docs/cli.md"
    group = worker_scope("tests/faults/test_kill_resume.py::test_x")
    assert (
        group == worker_scope("tests/core/test_monitor_hub.py::test_y") == "shared:fault_outcomes"
    )
