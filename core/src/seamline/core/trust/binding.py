"""Which installed distribution an entry point belongs to: read from metadata, checked on disk.

A ``*.dist-info`` folder is only text. Whoever can put a folder on ``sys.path``, or
ship one inside another package's wheel, can write ``Name: seamline-components`` in
its METADATA. A trust allowlist names distributions, so a name is believed for an
entry point only when nothing on disk contradicts it; otherwise :attr:`Binding.doubt`
says why, and the registry refuses the entry under an allowlist, before importing it:

* **one folder per name**: two dist-info folders that declare one (canonical) name
  cannot both be it, and which is real cannot be told from their text; neither is
  believed, and the reason names both folders;
* **the code is that distribution's file**: the module an entry point names is
  looked up as the import system would find it (without importing it), and that
  file must be one the distribution installed: listed in its ``RECORD``, or, for an
  editable install, inside the project folder its ``direct_url.json`` names (PEP
  610). A module found anywhere else (a folder earlier on ``sys.path`` shadowing
  it, or code a dist-info folder claims but did not install) is not.

What cannot be told apart: a forged folder that is the only one to declare its name
and lists its own files looks exactly like an install of that name.

Metadata files are read within :data:`MAX_METADATA_BYTES`; nothing is imported.
"""

from __future__ import annotations

import csv
import importlib.metadata as metadata
import os
import stat
import sys
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlparse

from pydantic import BaseModel, ConfigDict, ValidationError

from seamline.contracts.logs import get_logger
from seamline.contracts.modules import find_without_importing
from seamline.contracts.untrusted import NotRegularFile, read_regular, strict_json
from seamline.core.trust.policy import canonical

log = get_logger("seamline.core.registry")

MAX_METADATA_BYTES = 16 << 20
"""The largest metadata file read: a larger one (or one that is not a regular file) is not
believed, and its entry points are not read."""

Key = tuple[str, str, str]
"""An entry point: ``(group, name, target)``."""


@dataclass(frozen=True, slots=True)
class Origin:
    """A dist-info folder that declares entry points, and what it installed."""

    name: str
    """The name its METADATA declares."""
    version: str
    folder: str = ""
    """The dist-info folder ("" when the distribution is not a folder on disk)."""
    files: frozenset[Path] = frozenset()
    """Every file its RECORD lists, resolved."""
    editable: Path | None = None
    """The project folder of an editable install (PEP 610), resolved."""
    problem: str = ""
    """Why its files cannot be known (an unreadable or oversized RECORD), or ""."""
    rival: str = ""
    """Another dist-info folder that declares the same name ("" when none does)."""

    def owns(self, file: Path) -> bool:
        """Whether ``file`` (resolved) is one this distribution installed."""
        return file in self.files or (
            self.editable is not None and file.is_relative_to(self.editable)
        )


UNKNOWN = Origin("unknown", "?")
"""The origin of an entry point no dist-info folder declares (a hand-made one)."""


@dataclass(frozen=True, slots=True)
class Binding:
    """An entry point bound to the distribution that registers it, and whether to believe it."""

    origin: Origin
    module_file: str
    """The file its module would be imported from ("" when it cannot be found)."""
    doubt: str = ""
    """Why ``origin``'s name cannot be believed for this entry point ("" when it can)."""


class Distributions:
    """Every dist-info folder that declares seamline entry points, read once per discovery."""

    def __init__(self, prefix: str) -> None:
        self._claims: dict[Key, list[Origin]] = defaultdict(list)
        self._declared: dict[str, list[Origin]] = defaultdict(list)
        """Every folder that declares each canonical name (of any distribution)."""
        seen: set[str] = set()
        for dist in metadata.distributions():
            folder = _folder(dist)
            if folder and folder in seen:
                continue  # the same folder found through two entries of sys.path
            if folder:
                seen.add(folder)
            try:
                _check(folder, "entry_points.txt")
                eps = [ep for ep in dist.entry_points if ep.group.startswith(prefix)]
            except (OSError, ValueError) as err:  # ValueError: undecodable, or malformed
                log.warning("entry points not read", folder=folder, reason=str(err))
                continue
            if not eps:  # its name only, from its folder's (no METADATA to parse)
                name = _folder_name(folder) or canonical(_name(dist, folder))
                self._declared[name].append(Origin(name, "?", folder))
                continue
            origin = _origin(dist, folder)
            self._declared[canonical(origin.name)].append(origin)
            for ep in eps:
                self._claims[(ep.group, ep.name, ep.value)].append(origin)

    def stray(self, known: set[str]) -> list[tuple[str, str, str]]:
        """``(group, name, distribution)`` of each entry point in a ``seamline.*`` group that
        is none of ``known`` (``seamline.monitors``, a plural): never loaded, never listed."""
        return sorted(
            {
                (g, n, origins[0].name)
                for (g, n, _), origins in self._claims.items()
                if g not in known
            }
        )

    def installed(self) -> frozenset[str]:
        """The canonical name of every installed distribution (with entry points or not)."""
        return frozenset(self._declared)

    def providers(self) -> list[str]:
        """The names of the installed distributions that declare seamline entry points, as
        their metadata spells them, sorted (what a trust allowlist may mean to name)."""
        return sorted({origin.name for origins in self._claims.values() for origin in origins})

    def entry_points(self, group: str) -> list[metadata.EntryPoint]:
        """Every entry point of ``group`` some folder declares, once each, in path order."""
        return [metadata.EntryPoint(n, v, g) for g, n, v in self._claims if g == group]

    def bind(self, key: Key) -> Binding:
        """The distribution that registers entry point ``key``, where its module is, any doubt."""
        claimers = [self._with_rival(o) for o in self._claims.get(key, ())]
        target = key[2]
        if not claimers:
            return Binding(UNKNOWN, module_file(target), "no installed distribution declares it")
        found = module_file(target)
        resolved = Path(os.path.realpath(found)) if found else None
        owners = [o for o in claimers if resolved is not None and o.owns(resolved)]
        origin = (owners or claimers)[0]
        return Binding(origin, found, _doubt(origin, target, found, bool(owners)))

    def _with_rival(self, origin: Origin) -> Origin:
        rival = next(
            (o.folder for o in self._declared[canonical(origin.name)] if _rivals(origin, o)), ""
        )
        return replace(origin, rival=rival) if rival else origin


def _rivals(one: Origin, other: Origin) -> bool:
    """Whether two folders declaring one name are two claims to it, not one project's.

    A setuptools project installed editable leaves ``<name>.egg-info`` in its source
    folder beside the installer's dist-info: that is the same project, not a rival.
    """
    if one.folder == other.folder:
        return False
    for project, folder in ((one.editable, other.folder), (other.editable, one.folder)):
        if project is not None and folder and Path(folder).is_relative_to(project):
            return False
    return True


def _doubt(origin: Origin, target: str, found: str, owned: bool) -> str:
    module = target.split(":", 1)[0].strip()
    name = repr(origin.name)
    if origin.rival:
        return (
            f"two dist-info folders declare the distribution {name}: {origin.folder} and "
            f"{origin.rival}; which one is real cannot be told, so neither is believed: "
            "remove the one you did not install"
        )
    if origin.problem:
        return f"the files of distribution {name} cannot be known: {origin.problem}"
    if not found:
        return (
            f"its module {module!r} is not found on sys.path without importing it, so it "
            f"cannot be bound to distribution {name}"
        )
    if not owned:
        installed = (
            f"inside its editable project {origin.editable}"
            if origin.editable
            else f"listed in its RECORD ({origin.folder or 'none'})"
        )
        return (
            f"its module {module!r} would be imported from {found}, which is not a file of "
            f"distribution {name} (not {installed}): a module of that name earlier on "
            "sys.path shadows it, or the dist-info folder claims code it did not install"
        )
    return ""


def module_file(target: str) -> str:
    """The file the module in ``module:attr`` is (or would be) imported from; "" if none.

    A module already imported knows its file; any other is looked up by the import
    system's finders without running anything (:mod:`seamline.contracts.modules`).
    """
    module = target.split(":", 1)[0].strip()
    loaded = getattr(sys.modules.get(module), "__file__", None)
    if isinstance(loaded, str) and loaded:
        return loaded
    try:
        spec = find_without_importing(module)
    except (ImportError, ValueError):  # a malformed name, or a finder that refuses it
        return ""
    if spec is None or not spec.has_location or not spec.origin:
        return ""
    return str(spec.origin)


def _folder(dist: metadata.Distribution) -> str:
    """The dist-info folder of ``dist``, resolved ("" for a distribution not in a folder).

    ``importlib.metadata`` keeps it as ``_path`` on the distributions it finds on
    ``sys.path``; it has no public name for it. In a zip archive on ``sys.path`` (a
    zipped wheel) it is a ``zipfile.Path``: the folder is named by the archive's path
    and its place inside (``.../acme.whl/acme-0.1.dist-info``), and read through
    ``dist`` (:func:`_on_disk`). It was "": messages said ``RECORD (none)``, and two
    zips declaring one name were never rivals.
    """
    path = getattr(dist, "_path", None)
    if isinstance(path, zipfile.Path):
        archive = os.path.realpath(str(path.root.filename))
        return os.path.join(archive, path.at).rstrip("/")
    return os.path.realpath(path) if isinstance(path, (str, os.PathLike)) else ""


def _on_disk(folder: str) -> bool:
    """Whether ``folder`` is a folder on disk, whose files are checked before they are read
    (a folder in a zip archive is read through its distribution)."""
    return bool(folder) and os.path.isdir(folder)


def _folder_name(folder: str) -> str:
    """The canonical distribution name an installer spells into a folder's name."""
    stem = Path(folder).name
    for suffix in (".dist-info", ".egg-info"):
        if stem.endswith(suffix):
            return canonical(stem[: -len(suffix)].split("-", 1)[0])
    return ""


def _name(dist: metadata.Distribution, folder: str = "") -> str:
    """The name METADATA declares ("?" when it cannot be read)."""
    try:
        _check(folder, "METADATA", "PKG-INFO")
        return str(dist.metadata["Name"] or "?")
    except (OSError, ValueError):
        return "?"


def _origin(dist: metadata.Distribution, folder: str) -> Origin:
    name = _name(dist, folder)
    try:
        version = str(dist.version or "?") if name != "?" else "?"
        files = _installed_files(dist, folder)
        editable = _editable_project(dist, folder)
    except (OSError, ValueError) as err:
        return Origin(name, "?", folder, problem=str(err))
    return Origin(name, version, folder, files, editable)


def _check(folder: str, *filenames: str) -> None:
    """Refuse a metadata file that is not a regular file or is larger than
    :data:`MAX_METADATA_BYTES`, before ``importlib.metadata`` reads it whole (a FIFO
    would block the reading; a huge file would fill the memory)."""
    for filename in filenames if _on_disk(folder) else ():
        path = os.path.join(folder, filename)
        try:
            status = os.stat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if status.st_size > MAX_METADATA_BYTES:
            raise ValueError(f"{path} is larger than {MAX_METADATA_BYTES} bytes")


def _read(dist: metadata.Distribution, folder: str, filename: str) -> str | None:
    """A metadata file of ``dist`` (checked by :func:`_check`), None when there is none.

    From a folder it is read as untrusted data: a regular file, at most one byte past
    :data:`MAX_METADATA_BYTES`, so that a file grown or swapped after the check costs
    no more memory than the limit. Missing or unreadable is None, as ``read_text`` says.
    """
    _check(folder, filename)
    if not _on_disk(folder):
        return dist.read_text(filename)
    path = os.path.join(folder, filename)
    try:
        data = read_regular(path, MAX_METADATA_BYTES)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    except NotRegularFile as err:
        raise ValueError(f"{path} is not a regular file ({err})") from None
    if len(data) > MAX_METADATA_BYTES:
        raise ValueError(f"{path} is larger than {MAX_METADATA_BYTES} bytes")
    return data.decode("utf-8")


def _installed_files(dist: metadata.Distribution, folder: str) -> frozenset[Path]:
    """Every file the RECORD of ``dist`` lists, resolved against its folder's parent."""
    text = _read(dist, folder, "RECORD")
    if text is None:
        return frozenset()
    rows: Iterable[Sequence[str]] = csv.reader(text.splitlines())
    return frozenset(
        Path(os.path.realpath(str(dist.locate_file(row[0])))) for row in rows if row and row[0]
    )


class _DirInfo(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    editable: bool = False


class _DirectUrl(BaseModel):
    """PEP 610's ``direct_url.json``: only what an editable install's folder needs."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    url: str
    dir_info: _DirInfo | None = None


def _editable_project(dist: metadata.Distribution, folder: str) -> Path | None:
    """The project folder of an editable install, or None (not editable, or not local)."""
    text = _read(dist, folder, "direct_url.json")
    if text is None:
        return None
    where = folder or str(dist)
    try:
        data = strict_json(text)
    except (ValueError, RecursionError) as err:  # RecursionError: arrays nested thousands deep
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise ValueError(f"direct_url.json of {where} is not JSON: {reason}") from None
    try:
        direct = _DirectUrl.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the file'}: {e['msg']}"
            for e in err.errors(include_url=False)
        )
        raise ValueError(f"direct_url.json of {where} is not PEP 610: {problems}") from None
    url = urlparse(direct.url)
    if direct.dir_info is None or not direct.dir_info.editable or url.scheme != "file":
        return None
    return Path(os.path.realpath(unquote(url.path)))
