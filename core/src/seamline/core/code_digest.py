"""A digest of the seamline code that decides an output's vectors, for resume to compare.

A run resumed by another seamline splices two versions' output into one: a change to
how windows are cut (the span and stored text of a window ending in a combining mark)
gave an output whose first documents had the old text and the rest the new, published
as one, exit 0. Distribution versions do not tell the code apart (every seamline
distribution is 0.1.0 across hundreds of commits of a checkout), so the checkpoint
records this digest too: the sha256 of the Python source of ``seamline.contracts``,
``seamline.core`` and ``seamline.components`` (what reads, windows, embeds and writes),
each file named by its path in its package. The command line's code (``adapters``) is
left out: a change to how a summary is printed does not change what was written.

A conformance record pins a component's code the same way (:func:`component_digest`):
the files of the package its class belongs to, so that a record earned before an edit
(an editable install, a checkout at another commit, both still version 0.1.0) does not
vouch for the code after it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("seamline.contracts", "seamline.core", "seamline.components")


@functools.cache
def code_digest() -> str:
    """The first 16 hex digits of the sha256 of those packages' ``.py`` files ("" when one
    is not found, as in a process that has only some of them)."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        if not folders:
            return ""
        _add_folders(digest, package, folders)
    return digest.hexdigest()[:16]


def component_digest(module: str) -> str:
    """The digest of the code a component's ``module`` belongs to ("" when it cannot be found).

    That code is the outermost regular package on the module's dotted path (a namespace
    package such as ``seamline`` is shared by several distributions, so it is the next
    one: ``seamline.components``), every ``.py`` file under it; a module outside any
    package is its own file. The whole package, not the one module, because a component
    calls helpers of its package: an edit to one of them changes what it computes.
    """
    try:
        root = code_root(module)
        spec = importlib.util.find_spec(root) if root else None
    except (ImportError, ValueError):  # a module of __main__, a name that cannot be found
        return ""
    return (
        _digest_of(root, spec.origin, tuple(spec.submodule_search_locations or ())) if spec else ""
    )


@functools.cache
def _digest_of(root: str, origin: str | None, folders: tuple[str, ...]) -> str:
    """Read once a process: records are compared at every pipeline's resolution."""
    digest = hashlib.sha256()
    if folders:
        _add_folders(digest, root, folders)
    elif origin is not None and origin.endswith(".py"):
        digest.update(f"{root}\n".encode())
        digest.update(Path(origin).read_bytes())
    else:  # a built-in or compiled module: no source to pin
        return ""
    return digest.hexdigest()[:16]


def code_root(module: str) -> str:
    """The outermost package on ``module``'s path that is not a namespace package ("" when
    none can be found): what :func:`component_digest` reads, named in messages."""
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        name = ".".join(parts[:end])
        spec = importlib.util.find_spec(name)
        if spec is None:
            return ""
        if spec.origin not in (None, "namespace"):
            return name
    return ""


def _add_folders(digest: hashlib._Hash, package: str, folders: Iterable[str]) -> None:
    """Each ``.py`` file under ``folders``, named by its path in ``package``, then its bytes."""
    for folder in folders:
        root = Path(folder)
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root).as_posix()}\n".encode())
            digest.update(path.read_bytes())
