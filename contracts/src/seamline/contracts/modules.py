"""Finding a module's spec the way ``import`` would, without running any module's code.

``importlib.util.find_spec("a.b.c")`` imports ``a`` and ``a.b`` to learn where ``c``
is, which runs their ``__init__`` code. Whoever must decide about a module *before*
trusting it (the registry, binding an entry point to the distribution whose file it
really is; a weight source named ``package:<module>``) needs the answer without
that: here each part of a dotted name is looked up with the finders on
``sys.meta_path`` alone, in its parent's locations, as the import system does. The
finders read the file system; no module is executed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec


def find_without_importing(module: str) -> ModuleSpec | None:
    """The spec of ``module`` as the finders on ``sys.meta_path`` see it; None if absent.

    A parent package already imported is searched through its ``__path__``, as the
    import system would from then on.
    """
    search: Sequence[str] | None = None
    spec: ModuleSpec | None = None
    parts = module.split(".")
    for depth in range(len(parts)):
        name = ".".join(parts[: depth + 1])
        spec = _find(name, search)
        if spec is None:
            return None
        if depth < len(parts) - 1:
            locations = _locations(name, spec)
            if not locations:
                return None  # a module, not a package: it has no submodules
            search = locations
    return spec


def _locations(name: str, spec: ModuleSpec) -> list[str]:
    """Where the submodules of package ``name`` are looked for."""
    path = getattr(sys.modules.get(name), "__path__", None)
    if path is not None:
        return list(path)
    return list(spec.submodule_search_locations or ())


def _find(name: str, search: Sequence[str] | None) -> ModuleSpec | None:
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, search)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None
