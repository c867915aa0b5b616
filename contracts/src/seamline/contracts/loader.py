"""The loader seam: where documents come from."""

from __future__ import annotations

import abc
import glob
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, ClassVar, Final, TypeVar

from pydantic import BeforeValidator

from seamline.contracts.component import (
    Component,
    ComponentConfig,
    expand_home,
    refuse_an_impossible_path,
)
from seamline.contracts.documents import Loaded, Shard
from seamline.contracts.versions import Kind

LoaderConfigT = TypeVar("LoaderConfigT", bound=ComponentConfig)


class InputGlobField:
    """Marks a loader configuration field as a glob pattern that names the loader's input files.

    The host fingerprints a loader's input so that ``--resume`` after the input changed
    is refused, naming what changed; a field typed ``Path`` is found by its type, but a
    pattern is a string, so a loader that takes one says so by typing the field
    :data:`InputGlob`. The files are those :func:`input_glob_files` lists, the same
    function the loader reads them with.
    """

    def __repr__(self) -> str:
        return "InputGlobField()"


def refuse_repeated_globstar(value: object) -> object:
    """``value``, unless its pattern holds ``**`` more than once.

    One ``**`` already matches any number of folders; each more multiplies the walk by
    the tree's depth (Python's glob tries every split of the path among them): over a
    40-deep folder, 2, 3 and 4 of them took 0.02, 0.25 and 2.9 s, and six never ended.
    """
    if isinstance(value, str):
        count = sum(part == "**" for part in value.split("/"))
        if count > 1:
            raise ValueError(
                f"the pattern {value!r} holds '**' {count} times; one '**' already matches "
                "any number of folders, and each more multiplies the search: keep one"
            )
    return value


INPUT_GLOB: Final = InputGlobField()
InputGlob = Annotated[
    str,
    BeforeValidator(refuse_repeated_globstar),
    BeforeValidator(refuse_an_impossible_path),
    BeforeValidator(expand_home),
    INPUT_GLOB,
]
"""A loader configuration field holding a glob pattern of input files (``data/**/*.parquet``);
a leading ``~`` is the home folder, as in a shell, and a path that exists as written is
that file, whatever characters its name holds (:func:`input_glob_names`)."""


def input_glob_names(pattern: str) -> Iterator[str]:
    """What ``pattern`` names: itself when something of that exact name exists, else the
    names it matches as a glob pattern (``**`` spans folders), lazily.

    A name may hold ``*``, ``?`` or ``[`` (``runs[1]/docs.parquet``). Read as a pattern
    it names other files (``runs1/docs.parquet``): that run embedded the wrong file, and
    a sink writing the named file replaced the input, which the overlap check (comparing
    the files matched) never saw. An existing path is read as that file, as pyarrow and
    pandas read it; to match such characters in a pattern, bracket them (``runs[[]1]``).
    """
    if os.path.lexists(pattern):
        return iter((pattern,))
    return glob.iglob(pattern, recursive=True)


def input_glob_files(pattern: str) -> list[str]:
    """The regular files ``pattern`` names (:func:`input_glob_names`; links are followed),
    sorted.

    One definition for the loader that reads them and the host that fingerprints them,
    so the two can never disagree on which files the input is.
    """
    return sorted(path for path in input_glob_names(pattern) if os.path.isfile(path))


class InputGlobUnder:
    """Marks a loader configuration field as a glob pattern, relative to the folder another
    field names, that picks the loader's input files from it (loader contract 1.3).

    ``root: Path`` with ``glob: Annotated[str, InputGlobUnder("root")]``: the host
    fingerprints the files :func:`input_glob_under` lists (the function the loader reads
    them with), not every file under ``root``. Without it a resume was refused for an
    editor's swap file or a log written into the folder, which the loader never reads,
    and a ``root`` of a home folder with ``glob: notes/*.md`` had the whole home folder
    walked at every run's start.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        """The name of the configuration field holding the folder (a ``Path``)."""

    def __repr__(self) -> str:
        return f"InputGlobUnder({self.folder!r})"


def input_glob_under(root: Path, pattern: str) -> Iterator[Path]:
    """What ``pattern`` matches under ``root`` and is not a folder, lazily, by
    ``Path.glob``'s rules: a ``*`` or ``**`` matches names that begin with a dot, ``**``
    does not walk into a linked folder, and links to files are kept (whatever they point
    at: the loader decides what it reads of them).

    One definition for a loader whose input is a folder and a pattern in it
    (:class:`InputGlobUnder`) and the host that fingerprints it, so the two can never
    disagree on which files the input is.
    """
    return (path for path in root.glob(pattern) if not path.is_dir())


class Loader(Component[LoaderConfigT], abc.ABC):
    """Yields documents in a stable order.

    The same input gives the same ids in the same order on every run. Shards are
    disjoint and together complete. ``after`` is a cursor from an earlier
    :class:`Loaded`; reading resumes with the item right after it. A document
    that cannot be read is yielded as a ``DocumentError``, never raised.
    """

    kind: ClassVar[Kind] = "loader"

    @abc.abstractmethod
    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        """Yield the shard's items in order, starting after the cursor ``after``."""

    def size(self, *, shard: Shard = Shard()) -> int | None:
        """How many items :meth:`read` yields for ``shard`` from the beginning, or None.

        For progress only (contract 1.1): a total for a bar, never a promise that the
        run checks. Answer only when it is cheap — a count of files, row counts from
        file footers — never by reading the documents' bodies, and bound the work: on
        an input too large to count quickly (a folder of millions of files), stop and
        answer None, so that the run starts at once with a spinner. The default: None.
        """
        return None

    def position(self, after: str, *, shard: Shard = Shard()) -> int | None:
        """How many items :meth:`read` yields for ``shard`` up to and including the cursor
        ``after`` (the items a resume after it skips), or None when that is not cheap to tell.

        Optional (contract 1.2): the host checks a resumed run's commit with it (the
        items it counted as read before the cursor must be these), and refuses a
        checkpoint whose cursor was moved. Answer only from what is cheap (a listing of
        names, row counts from file footers), never by reading the documents; the default
        is None (not checked).
        """
        return None
