"""``seamline.core``'s public face: what the CLI, search and the benchmarks may import.

Every name it lists resolves to the object its module defines (no copy that could
drift), none hides a submodule, importing the package loads none of its modules (so
no JAX), and the names type checkers see are the names it serves.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import seamline.core as core

INIT = Path(core.__file__)


def submodules() -> set[str]:
    """The names of the modules and packages directly under ``seamline.core``."""
    return {info.name for info in pkgutil.iter_modules(core.__path__)}


@pytest.mark.parametrize("name", sorted(core._LOCATIONS))
def test_every_public_name_is_its_modules_own_object(name: str) -> None:
    module, attribute = core._LOCATIONS[name]
    assert getattr(core, name) is getattr(importlib.import_module(module), attribute)


def test_no_public_name_is_a_submodules_name() -> None:
    # `import seamline.core.provenance` sets the package's attribute `provenance` to the
    # module: a function re-exported under that name would be replaced by it.
    assert not set(core._LOCATIONS) & submodules()


def test_the_listed_names_are_the_names_served() -> None:
    assert sorted(core.__all__) == sorted(core._LOCATIONS)
    assert set(core.__all__) <= set(dir(core))


def test_the_names_type_checkers_see_are_the_names_served() -> None:
    # The TYPE_CHECKING imports are what mypy checks the edges against: each public name
    # is imported there, from the module and under the name _LOCATIONS gives.
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    seen = {
        alias.asname or alias.name: (node.module, alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == core._LOCATIONS


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Orchestrator'"):
        _ = core.Orchestrator  # type: ignore[attr-defined]


def test_importing_the_package_loads_none_of_its_modules() -> None:
    code = (
        "import sys\n"
        "import seamline.core\n"
        "print(sorted(n for n in sys.modules if n.startswith('seamline.core.')))\n"
        "print('jax' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split("\n")[:2] == ["[]", "False"], result.stdout
