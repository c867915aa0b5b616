"""Whether the ``serve`` extra is installed, asked before anything of the server is imported.

``seamline serve`` without ``seamline-adapters[serve]`` ended in a 40-line traceback
(``import uvicorn`` in :mod:`.server`: ModuleNotFoundError, exit code 1), where the ray
executor says in one line what to install. The question is asked through
:func:`importlib.util.find_spec`, which imports nothing: it is answered before the
pipeline is read or the model loaded.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from seamline.contracts import UserError

INSTALL_HINT = "pip install 'seamline-adapters[serve]'"
SERVER_MODULES = ("uvicorn", "starlette", "prometheus_client")
"""The modules the server imports from the ``serve`` extra (adapters/pyproject.toml); httpx,
the extra's fourth, is for the load benchmark's clients only."""


def missing_server_modules() -> list[str]:
    """The modules of :data:`SERVER_MODULES` that cannot be imported here."""
    return [name for name in SERVER_MODULES if _absent(name)]


def check_serve_installed() -> None:
    """UserError naming what is missing and how to install it, unless the server can start."""
    missing = missing_server_modules()
    if missing:
        are = "is" if len(missing) == 1 else "are"
        raise UserError(
            f"seamline serve needs {', '.join(missing)} (the serve extra), which {are} not "
            f"installed: {INSTALL_HINT}"
        )


def import_server() -> Callable[..., Any]:
    """:func:`seamline.adapters.serve.server.serve_pipeline`, or a UserError where the extra
    is present but broken: uvicorn found, but a dependency of its own missing or
    mismatched, ended in a traceback, exit 1."""
    try:
        from seamline.adapters.serve.server import serve_pipeline
    except ImportError as err:
        if (err.name or "").startswith("seamline"):  # seamline's own: a bug, shown whole
            raise
        raise UserError(
            f"seamline serve could not import its server ({type(err).__name__}: {err}): the "
            f"serve extra is installed but broken; reinstall it: {INSTALL_HINT} "
            "--force-reinstall"
        ) from None
    return serve_pipeline


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):  # a module set to None, or a parent that fails
        return True
