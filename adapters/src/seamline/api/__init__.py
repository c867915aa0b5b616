"""seamline from Python: the public face.

::

    from seamline.api import Embedder, Pipeline, open_index

    embedder = Embedder.from_pipeline("examples/pipelines/embed-docs.yaml")
    vectors = embedder.encode(["a first text", "a second one"])   # float32 [2, 384]

    summary = Pipeline.from_yaml("examples/pipelines/embed-docs.yaml").run()

    index = open_index("out/embeddings.lance")
    hits = index.search("how do I catch an exception?", k=5)

Everything here goes through the same registry, trust rules, attention negotiation
and verification, seams and telemetry as ``seamline run``: there is no second way in.
What this module exports is the stable surface; every other module of seamline is
internal and may change between releases. ``seamline`` itself stays a namespace
package (no ``__init__``), shared by its distributions.

Used as a library, seamline is quiet: it never configures logging, prints nothing on
standard output, and its log lines go to the standard ``logging`` module (nothing
below WARNING unless the application asks) unless the application configured
structlog, whose rendering then applies.

An error seamline raises about the input, the settings or the run is a
:class:`SeamlineError`, the one type to catch for them (a mistake in the program, such as
a wrong argument type or a closed object's use, is Python's ``TypeError`` or
``RuntimeError``). A mistake the caller can fix raises its subclass :class:`UserError` (its message
says what and how to fix it); a pipeline file, override or keyword that is invalid
raises :class:`ConfigError`, placed at ``file:line:column`` or by key path. All are
exported here, for an ``except`` clause, with these ``UserError`` s:
:class:`ModelChanged` (the index was published anew by another model since it was
opened), :class:`Unembeddable` (also a ``ValueError``: a text the model cannot embed,
such as one that is not valid Unicode; ``index`` says which), :class:`QueryRefused`
(also a ``ValueError``: a query that is empty or cannot be embedded; ``index`` and
``reason``), :class:`FilterRefused` (a ``where`` the output cannot apply) and
:class:`ResumeRefused` (``Pipeline.run(resume=True)`` of an output the pipeline no
longer matches), and :class:`PublishedButFailed` (the output was published, and its
sink then found something left undone; ``summary`` is the run's). A closed index's
searches raise :class:`IndexClosed` (a ``RuntimeError``, as a closed ``Embedder``'s
calls do: the program's mistake, not the user's).

``Embedder.submit`` returns a :class:`Pending` (``Pending[Vectors]``, or
``Pending[list[Vectors]]`` with ``long_text="windows"``); :data:`Vectors` is the float32
array type ``encode`` and ``result()`` return, for annotations, and :data:`LongText` the
``long_text`` values (``Literal["truncate", "mean", "windows"]``), for a setting an
application passes on.

A package with ``py.typed``, so that ``mypy --strict`` checks code using it: as a
module of the ``seamline`` namespace, which has no ``__init__``, it could carry no
marker, and ``from seamline.api import Embedder`` was "missing library stubs".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.contracts.errors import ConfigError, ResumeRefused, SeamlineError, UserError
from seamline.contracts.lazy_names import lazy_attributes

if TYPE_CHECKING:
    from seamline.adapters.search import (
        Found,
        Hit,
        IndexClosed,
        ModelChanged,
        QueryRefused,
        Searcher,
    )
    from seamline.contracts.readback import FilterRefused
    from seamline.core import (
        Embedder,
        LongText,
        Pending,
        Pipeline,
        PublishedButFailed,
        Registry,
        RunSummary,
        Unembeddable,
        Vectors,
    )

_LOCATIONS: dict[str, str] = {
    "Embedder": "seamline.core",
    "FilterRefused": "seamline.contracts.readback",
    "Found": "seamline.adapters.search",
    "Hit": "seamline.adapters.search",
    "IndexClosed": "seamline.adapters.search",
    "LongText": "seamline.core",
    "ModelChanged": "seamline.adapters.search",
    "Pending": "seamline.core",
    "Pipeline": "seamline.core",
    "PublishedButFailed": "seamline.core",
    "QueryRefused": "seamline.adapters.search",
    "RunSummary": "seamline.core",
    "Searcher": "seamline.adapters.search",
    "Unembeddable": "seamline.core",
    "Vectors": "seamline.core",
}
"""Names loaded on first use (PEP 562): ``import seamline.api`` imports no JAX (about 1,000
modules, 1 to 2.5 s), so an application that imports it at the top of a module, for
its errors or for a command that may embed nothing, starts at once. ``from seamline.api
import Embedder`` loads JAX then, as the first use of ``seamline.api.Embedder`` does;
the errors of :mod:`seamline.contracts.errors` cost nothing and are plain imports. Type
checkers see the imports above; they are not shown ``__getattr__``, so that a name this
module lacks is still an error to them."""

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    """What the module offers (its ``__all__``, each name once), not the imports it uses:
    ``Any``, ``os`` and ``importlib`` crowded an editor's completion of ``seamline.api.``."""
    return sorted(set(__all__))


__all__ = [
    "ConfigError",
    "Embedder",
    "FilterRefused",
    "Found",
    "Hit",
    "IndexClosed",
    "LongText",
    "ModelChanged",
    "Pending",
    "Pipeline",
    "PublishedButFailed",
    "QueryRefused",
    "ResumeRefused",
    "RunSummary",
    "SeamlineError",
    "Searcher",
    "Unembeddable",
    "UserError",
    "Vectors",
    "enable_compile_cache",
    "open_index",
]


def open_index(
    path: str | os.PathLike[str], *, attention: str | None = None, registry: Registry | None = None
) -> Searcher:
    """An output a pipeline wrote (any first-party sink's), opened for searching.

    The manifest beside it is read and checked now; the model that embedded the
    documents is built on the first search and kept warm for the next ones. Use it as
    a context manager, or ``close()`` it, to release the model; a closed index refuses
    every later search (:class:`IndexClosed`): open it again. ``attention`` overrides
    the attention the run recorded; ``registry`` defaults to the components the user's
    trust allows. A leading ``~`` in ``path`` is the home folder, as in a shell.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(
            f"open_index takes the path of an output a pipeline wrote (a str or path, such "
            f"as 'out/embeddings.lance'), not {type(path).__name__}"
        )
    from seamline.adapters.search import Searcher
    from seamline.contracts.component import from_here
    from seamline.core import Registry, user_trust

    index = from_here(os.fspath(path))
    return Searcher(registry or Registry.discover(user_trust()), index, attention)


def enable_compile_cache(directory: str | os.PathLike[str] | None = None) -> Path | None:
    """Keep compiled programs on disk, so the next process loads them instead of compiling.

    Each new ``Embedder`` compiles its shapes (seconds each), each ``Pipeline.run`` and
    the first search of ``open_index`` theirs. The ``seamline`` command keeps them in
    JAX's persistent compile cache; a library does not set the process's JAX config
    behind its application's back, so the application calls this, once, before its
    first model: the same cache the command uses, in ``directory`` or where the command
    puts it (``$SEAMLINE_CACHE_DIR``, else ``$JAX_COMPILATION_CACHE_DIR``, else
    ``~/.cache/seamline/jax``), the user's alone (about 85 KB a shape, never pruned:
    delete the folder to free it). Returns the directory, or None
    when the default one cannot be used (a warning says why); a directory named here or
    by those variables that cannot be used raises :class:`UserError`.
    """
    from seamline.adapters.compile_cache import enable_compile_cache as enable
    from seamline.contracts.component import from_here

    return enable(None if directory is None else from_here(os.fspath(directory)), api=True)
