"""Whether an entry point's ``module:Class`` would import, read from its source, never run.

``seamline components`` lists the ``seamline.conformance`` entry points without
importing them: a suite imports pytest, hypothesis and JAX at module load (a second or
more of ``components``, which stays JAX-free), and listing must not run a
distribution's code. So an entry whose class was misspelt in the distribution's
``pyproject.toml``, whose module did not parse, or whose module imports a package
that is not installed was listed ``ok`` until ``seamline check`` imported it. Each of
these can be told from the module's source and the import system's finders alone
(:func:`~seamline.contracts.modules.find_without_importing`); what only running the
module can show (code at its top level that raises) is still ``check``'s to find.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

from seamline.contracts.modules import find_without_importing

_NESTED = ("body", "orelse", "finalbody", "handlers")
"""The blocks of a top-level ``if``/``try``/``with``/``for`` whose names are the module's."""


def import_problem(module_file: str, target: str) -> str | None:
    """Why importing ``target`` (``module:attr``) from ``module_file`` would fail, as far as
    its source says; None when it would not, or when its source cannot say (a compiled
    module, a ``from x import *``, a module ``__getattr__``)."""
    module, _, attribute = target.partition(":")
    attribute = attribute.split("[", 1)[0].strip().split(".", 1)[0]
    path = Path(module_file)
    if path.suffix != ".py":
        return None
    try:
        stamp = path.stat()
    except OSError:
        return None
    problem, names = _read(module_file, stamp.st_mtime_ns, stamp.st_size)
    if problem is not None:
        return problem
    if attribute and names is not None and attribute not in names:
        return (
            f"import would fail: AttributeError: module {module.strip()!r} has no attribute "
            f"{attribute!r} (read from {module_file})"
        )
    return None


@functools.lru_cache(maxsize=64)
def _read(module_file: str, mtime_ns: int, size: int) -> tuple[str | None, frozenset[str] | None]:
    """What a module's source says, once per version of the file (one module holds the
    suites of many components): why its import would fail whatever is asked of it, else
    None and the names it binds (None when the source cannot say)."""
    try:
        tree = ast.parse(Path(module_file).read_bytes(), filename=module_file)
    except OSError:
        return None, None
    except (SyntaxError, ValueError) as err:
        where = f" ({module_file}:{err.lineno})" if isinstance(err, SyntaxError) else ""
        return f"import would fail: {type(err).__name__}: {_first_line(err)}{where}", None
    missing = _missing_import(tree)
    if missing is not None:
        imported, line = missing
        return (
            f"import would fail: ModuleNotFoundError: No module named {imported!r}, which "
            f"its module imports ({module_file}:{line})"
        ), None
    names = _top_level_names(tree)
    return None, frozenset(names) if names is not None else None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement run when the module is imported: the top level, and the blocks of
    its compound statements (not function or class bodies)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for block in _NESTED:
            inner = getattr(statement, block, None)
            if isinstance(inner, list):
                yield from _statements([s for s in inner if isinstance(s, ast.stmt)])
                for handler in inner:
                    if isinstance(handler, ast.ExceptHandler):
                        yield from _statements(handler.body)
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _statements(case.body)


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """The names importing the module binds; None when the source cannot say (it binds
    names at run time: ``from x import *``, a module ``__getattr__``, ``globals()``)."""
    dynamic = {"globals", "setattr", "exec", "vars"}
    if any(isinstance(n, ast.Name) and n.id in dynamic for n in ast.walk(tree)):
        return None
    names: set[str] = set()
    bound: list[ast.AST] = []
    for statement in _statements(tree.body):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if statement.name == "__getattr__":
                return None
            names.add(statement.name)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in statement.names):
                return None
            top = isinstance(statement, ast.Import)
            names.update(
                a.asname or (a.name.split(".", 1)[0] if top else a.name) for a in statement.names
            )
        elif isinstance(statement, ast.Assign):
            bound.extend(statement.targets)
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign | ast.For):
            bound.append(statement.target)
        elif isinstance(statement, ast.With):
            bound.extend(i.optional_vars for i in statement.items if i.optional_vars is not None)
    bound.extend(n.target for n in ast.walk(tree) if isinstance(n, ast.NamedExpr))
    names.update(n.id for node in bound for n in ast.walk(node) if isinstance(n, ast.Name))
    return names


def _missing_import(tree: ast.Module) -> tuple[str, int] | None:
    """The first module the top level imports unconditionally that no finder finds, and
    its line; an import inside ``try`` or ``if`` may be guarded, so it is not judged."""
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            wanted = [alias.name for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
            wanted = [statement.module]
        else:
            continue
        for module in wanted:
            if module in sys.modules:
                continue
            try:
                found = find_without_importing(module)
            except (ImportError, ValueError):
                continue  # a finder that refuses to say: not judged
            if found is None:
                return _first_missing(module), statement.lineno
    return None


def _first_missing(module: str) -> str:
    """The shortest part of ``module`` (``a``, ``a.b``, ...) that is not there: the name
    Python's ``ModuleNotFoundError`` gives."""
    parts = module.split(".")
    for depth in range(1, len(parts)):
        prefix = ".".join(parts[:depth])
        if find_without_importing(prefix) is None:
            return prefix
    return module


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"
