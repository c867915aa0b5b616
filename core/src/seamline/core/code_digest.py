"""A digest of the seamline code that decides an output's vectors, for resume to compare.

A run resumed by another seamline splices two versions' output into one: a change to
how windows are cut (the span and stored text of a window ending in a combining mark)
gave an output whose first documents had the old text and the rest the new, published
as one, exit 0. Distribution versions do not tell the code apart (every seamline
distribution is 0.1.0 across hundreds of commits of a checkout), so the checkpoint
records this digest too: the sha256 of the files of ``seamline.contracts``,
``seamline.core`` and ``seamline.components`` (what reads, windows, embeds and writes),
each file named by its path in its package (their Python source, and ``py.typed``).
The command line's code (``adapters``) is left out: a change to how a summary is
printed does not change what was written.

A conformance record pins a component's code the same way (:func:`component_digest`):
every file of the package its class belongs to (its Python, its compiled extensions
and their sources, its data files; not bytecode, which Python writes as it imports),
so that a record earned before an edit (an editable install, a checkout at another
commit, both still version 0.1.0) does not vouch for the code after it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

PACKAGES = ("seamline.contracts", "seamline.core", "seamline.components")

_BYTECODE = (".pyc", ".pyo")
"""Files a digest leaves out (with ``__pycache__`` folders): Python writes them as it imports."""

_EDITORS = ("~", ".swp", ".swo", ".swx", ".orig", ".rej")
"""Endings of files an editor or a patch leaves beside a package's own (``x.py~``,
``.x.py.swp``), which a digest leaves out with every hidden file and folder (``.DS_Store``,
``.#x.py``): vim writes its swap file when a file is only *viewed*, and a digest that read
it refused to resume a run over code that had not changed ("finish it under the seamline
whose code is …, or --restart": the committed work thrown away) and withdrew every
record of the package."""

_UNREADABLE = b"\0unreadable\0"
"""What a file that cannot be read adds to a digest in place of its bytes: "" for the
whole digest turned resume's and merges' comparison of the code off, without a word."""

_CHUNK = 1 << 20


@functools.cache
def code_digest() -> str:
    """The first 16 hex digits of the sha256 of those packages' files ("" when one is not
    found, as in a process that has only some of them; a file that cannot be read is
    counted as :data:`_UNREADABLE`, not a reason for "")."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        if not folders:
            return ""
        try:
            _add_folders(digest, package, folders)
        except (OSError, zipfile.BadZipFile):
            return ""
    return digest.hexdigest()[:16]


def component_digest(module: str) -> str:
    """The digest of the code a component's ``module`` belongs to ("" when it cannot be found).

    That code is the outermost regular package on the module's dotted path (a namespace
    package such as ``seamline`` is shared by several distributions, so it is the next
    one: ``seamline.components``), every file under it but bytecode caches (its
    Python, its compiled extensions and their sources, its data files); a module outside
    any package is its own file (a ``.py`` file or a compiled extension). The whole
    package, not the one module, because a component calls helpers of its package: an
    edit to one of them changes what it computes.
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
    """Read once a process: records are compared at every pipeline's resolution ("" when
    the code cannot be read: no record can pin it)."""
    digest = hashlib.sha256()
    try:
        if folders:
            _add_folders(digest, root, folders)
        else:
            chunks = None if origin is None else _module_file(origin)
            if chunks is None:  # a built-in module: no file to pin
                return ""
            digest.update(f"{root}\n".encode())
            for chunk in chunks:
                digest.update(chunk)
    except (OSError, zipfile.BadZipFile):
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
    """Each file under ``folders`` but bytecode caches (:func:`_package_files`), named by
    its path in ``package`` and its size, then its bytes (:data:`_UNREADABLE` for a file
    that cannot be read)."""
    for folder in folders:
        for name, size, chunks in _package_files(folder):
            digest.update(f"{package}/{name}\n{size}\n".encode())
            try:
                for chunk in chunks:
                    digest.update(chunk)
            except OSError:
                digest.update(_UNREADABLE)


def _package_files(folder: str) -> list[tuple[str, int, Iterator[bytes]]]:
    """Every file of a package's ``folder`` that its code can run or read, by its path in
    the folder (sorted): not only ``.py``, since a rebuilt compiled extension (``.so``,
    ``.pyd``), its C++ source or a data file read at run time changes what the component
    computes as surely as its Python does (a rebuilt kernel kept its record and wrote
    vectors 0.6 % off). Bytecode (``__pycache__``, ``.pyc``) is left out: Python writes it
    when it imports, and it follows the source. ``folder`` may be a folder inside a zip
    archive on ``sys.path`` (a zipped wheel), whose files are read from the archive: read
    as a folder on disk, it had no files, and every zipped package had the same digest."""
    if os.path.isdir(folder):
        return _files_on_disk(Path(folder))
    archive, inner = _zip_location(folder)
    if archive is None:
        raise FileNotFoundError(f"no folder or zip archive at {folder}")
    return _files_in_zip(archive, inner)


def _files_on_disk(root: Path) -> list[tuple[str, int, Iterator[bytes]]]:
    found = []
    for current, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f != "__pycache__" and not f.startswith(".")]
        for file in files:
            path = Path(current, file)
            if _kept(file) and path.is_file():  # not a FIFO, a dead link
                found.append((path.relative_to(root).as_posix(), path))
    listed = []
    for name, path in sorted(found):
        try:
            size = path.stat().st_size
        except FileNotFoundError:  # deleted since the walk: not part of the code
            continue
        listed.append((name, size, _read_file(path)))
    return listed


def _kept(name: str) -> bool:
    """Whether a file named ``name`` is part of a package's code: not bytecode, not hidden,
    not an editor's or a patch's leftover (:data:`_EDITORS`)."""
    return not (name.startswith(".") or name.endswith(_BYTECODE) or name.endswith(_EDITORS))


def _read_file(path: Path) -> Iterator[bytes]:
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            yield chunk


def _zip_location(path: str) -> tuple[Path | None, str]:
    """The zip archive holding ``path`` (a folder or file inside it, as a zipped wheel's
    package is found at ``.../acme.whl/acme``) and ``path`` inside it, or (None, "")."""
    inside = Path(path)
    for archive in inside.parents:
        if archive.is_file():
            if zipfile.is_zipfile(archive):
                return archive, inside.relative_to(archive).as_posix()
            break
    return None, ""


def _files_in_zip(archive: Path, inner: str) -> list[tuple[str, int, Iterator[bytes]]]:
    prefix = f"{inner}/"
    with zipfile.ZipFile(archive) as opened:
        members = sorted(
            (info.filename[len(prefix) :], info)
            for info in opened.infolist()
            if info.filename.startswith(prefix) and not info.is_dir()
            if "__pycache__/" not in info.filename
            if all(_kept(part) for part in info.filename[len(prefix) :].split("/"))
        )
    return [(name, info.file_size, _read_member(archive, info.filename)) for name, info in members]


def _read_member(archive: Path, name: str) -> Iterator[bytes]:
    with zipfile.ZipFile(archive) as opened, opened.open(name) as stream:
        while chunk := stream.read(_CHUNK):
            yield chunk


def _module_file(origin: str) -> Iterator[bytes] | None:
    """The bytes of a module outside any package, on disk or in a zip archive (None when
    there is no file: a built-in or frozen module)."""
    if os.path.isfile(origin):
        return _read_file(Path(origin))
    archive, inner = _zip_location(origin)
    return _read_member(archive, inner) if archive is not None else None
