"""Measured selection: the fastest candidate per shape, measured once and remembered.

With ``attention: {select: measure}`` the planner asks :class:`MeasuredRanking`
for the candidates that serve a shape signature in order of measured time. The
first run on a machine times them (:mod:`.measure`) and writes a
:class:`TuningEntry` into the tuning cache; every later run with the same key
reads it and pays nothing, so its choice is deterministic. ``seamline tune
PIPELINE`` fills the cache ahead of time; ``seamline explain`` shows it.

The key is everything a timing depends on: the shape signature (shapes, dtype,
masking, platform), the device kind, the host (:mod:`.host`: on a CPU its model, the
CPUs this process may use and its SIMD features; elsewhere the number of devices), the
JAX and jaxlib versions, and each serving candidate's name, distribution, version and
configuration. Upgrading JAX or a kernel's distribution, changing a kernel's settings,
installing a new kernel that serves the shape or reading the folder on another machine
therefore measures again. A damaged cache file is
ignored (and measured over), never trusted; so is one that times a candidate that does
not serve the shape here, or another shape. A folder that cannot be written costs a run
only a warning (it measures again next time); for ``seamline tune``, whose job is to
write it, it is a :class:`TuningCacheUnwritable` user error.

An entry decides which kernel runs, so the cache is trusted as the compile cache is
(:mod:`seamline.core.private_cache`): the folder and each entry must be the user's own
and writable by no one else. A folder that is not (another user's, or one others can
write: a swapped ranking there was read "from the tuning cache") is neither read nor
written: a run warns once and measures, ``seamline tune`` stops with
:class:`TuningCacheNotPrivate`. An entry that is not is ignored as a damaged one is, and
measured over (the new one replaces it).

The cache lives in ``$SEAMLINE_TUNING_DIR``, else ``$XDG_CACHE_HOME/seamline/tuning``
(``~/.cache/seamline/tuning``): one JSON file per key.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import pwd
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from seamline.contracts import Attention, UserError
from seamline.contracts.home import no_home_reason
from seamline.contracts.logs import get_logger
from seamline.contracts.sink_kit import write_bytes_atomically
from seamline.contracts.untrusted import (
    NotRegularFile,
    cut,
    read_regular,
    strict_json,
    visible,
)
from seamline.contracts.versions import installed_version
from seamline.core.attention.host import host_identity
from seamline.core.attention.measure import REPEATS, Timing, time_candidate, unsteady
from seamline.core.attention.planner import MeasuredTimes, SpecKey, signature_of
from seamline.core.devices import jax_devices
from seamline.core.directories import cache_home, named_directory, try_writing, under
from seamline.core.exhaustion import exhausted
from seamline.core.private_cache import NotPrivate, entry_not_private, folder_not_private
from seamline.core.registry import ComponentInfo
from seamline.core.telemetry import ATTENTION_NAME, tracer

log = get_logger("seamline.core")

TUNING_VARIABLE = "SEAMLINE_TUNING_DIR"
ENTRY_FORMAT = 1
ENTRY_LIMIT = 256 * 1024
"""Bytes a cache file may have (one holds a few timings); a larger one is not read."""
LONGEST_SECONDS = 3600.0
"""The most a stored time may say: one attention call timed at over an hour is not one."""


class TuningCacheUnwritable(UserError):
    """The tuning folder cannot be written: fatal for ``seamline tune`` (its whole job),
    a warning for a run (which keeps the times it measured and goes on).

    The message names the real cause (a file where a folder of the path should be, the
    folder's owner) and the variable that chose the place only where it is set: it told
    a user who never set ``$SEAMLINE_TUNING_DIR`` to unset it.
    """

    def __init__(self, directory: Path, err: OSError) -> None:
        self.directory = directory
        why, fix = folder_trouble(directory, err)
        super().__init__(f"the tuning cache folder {directory} cannot be written ({why}): {fix}")


class NoTuningFolder(TuningCacheUnwritable):
    """No folder to keep timings in: there is no home, and ``$SEAMLINE_TUNING_DIR`` is
    unset (an arbitrary uid in a container). A run measures and keeps nothing, as with a
    folder it cannot write; ``seamline tune`` says so before it measures."""

    def __init__(self) -> None:
        UserError.__init__(
            self,
            f"the tuning cache has no folder: {no_home_reason()}; set {TUNING_VARIABLE} to a "
            "folder you can write",
        )


def folder_trouble(directory: Path, err: OSError) -> tuple[str, str]:
    """Why ``directory`` cannot be used, given ``err``, and how to choose another place."""
    why = err.strerror or str(err)
    for above in (directory, *directory.parents):
        try:
            found = above.stat()
        except OSError:
            continue
        if not above.is_dir():
            why = f"{above} is a file, not a folder"
        elif above == directory or not os.access(above, os.W_OK | os.X_OK):
            owner = _owner(found.st_uid)
            if owner is not None:
                why = f"{why}: {above} belongs to {owner}"
        break
    env = os.environ
    named = env.get(TUNING_VARIABLE, "")
    xdg = env.get("XDG_CACHE_HOME", "")
    if named and Path(os.path.expanduser(named)) == directory:
        return why, f"point {TUNING_VARIABLE} at a folder you can write, or unset it"
    if os.path.isabs(xdg) and directory.is_relative_to(xdg):
        return why, (
            f"it is under $XDG_CACHE_HOME ({xdg}): point XDG_CACHE_HOME at a folder you "
            f"can write, or set {TUNING_VARIABLE} to one"
        )
    return why, f"set {TUNING_VARIABLE} to a folder you can write"


def _owner(uid: int) -> str | None:
    """Another user's name (or number), None for the user running seamline."""
    if uid == os.geteuid():
        return None
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"user {uid}"


class TuningCacheNotPrivate(UserError):
    """The tuning folder is not the user's alone, so its entries cannot be trusted: fatal
    for ``seamline tune`` (what it wrote would not be read), a warning for a run (which
    measures, and keeps nothing there)."""

    def __init__(self, directory: Path, problem: NotPrivate) -> None:
        self.directory = directory
        self.why = problem.why
        self.fix = problem.fix(directory, f"${TUNING_VARIABLE}")
        super().__init__(
            f"the tuning cache folder {directory} is not private: {self.why}, and its entries "
            f"decide which attention kernel runs; {self.fix}"
        )


_warned_shared: set[Path] = set()
"""Folders whose refusal this process has already said: once, not per shape or ranking."""


def tuning_directory() -> Path | None:
    """``$SEAMLINE_TUNING_DIR``, else the user's cache directory (a variable that names
    something other than a directory is a user error: :mod:`seamline.core.directories`);
    None where there is no home and the variable is unset."""
    return named_directory(TUNING_VARIABLE, lambda: under(cache_home(), "seamline", "tuning"))


@dataclass(frozen=True, slots=True)
class TuningEntry:
    """The measured times of every serving candidate for one key."""

    key: str
    signature: str
    device_kind: str
    timings: dict[str, Timing]
    measured: str
    """When (UTC, ISO 8601)."""
    about: dict[str, Any]
    """What the key was made of, for people reading the file."""

    @property
    def ranking(self) -> list[str]:
        """Candidate names, fastest median first (ties by name)."""
        return sorted(self.timings, key=lambda name: (self.timings[name].median, name))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": ENTRY_FORMAT,
            "key": self.key,
            "signature": self.signature,
            "device_kind": self.device_kind,
            "measured": self.measured,
            "timings": {name: asdict(timing) for name, timing in self.timings.items()},
            "about": self.about,
        }

    @classmethod
    def from_json(cls, data: Any) -> TuningEntry:
        """An entry from its JSON data, validated (``ValueError`` for anything else)."""
        try:
            stored = _StoredEntry.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"tuning entry {where}: {first['msg']}") from None
        return cls(
            key=stored.key,
            signature=stored.signature,
            device_kind=stored.device_kind,
            timings={name: Timing(**t.model_dump()) for name, t in stored.timings.items()},
            measured=stored.measured,
            about=stored.about,
        )


class _StoredTiming(BaseModel):
    """One candidate's figures, bounded as :func:`.measure.time_candidate` makes them:
    fastest <= median <= slowest, at most :data:`.measure.REPEATS` calls."""

    model_config = ConfigDict(extra="forbid", strict=True)

    median: float = Field(ge=0.0, le=LONGEST_SECONDS, allow_inf_nan=False)
    fastest: float = Field(ge=0.0, le=LONGEST_SECONDS, allow_inf_nan=False)
    slowest: float = Field(ge=0.0, le=LONGEST_SECONDS, allow_inf_nan=False)
    calls: int = Field(ge=1, le=REPEATS)

    @model_validator(mode="after")
    def _in_order(self) -> Self:
        if not self.fastest <= self.median <= self.slowest:
            raise ValueError("fastest <= median <= slowest does not hold")
        return self


class _StoredEntry(BaseModel):
    """A cache file as :meth:`TuningEntry.to_json` writes it: strict, every value typed.

    The cache is a folder anyone with the user's rights may have written: an entry that
    does not check out is measured over, never trusted or half-read (a median that is
    a string would fail later, when candidates are ranked).
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    format: Literal[1]
    key: str = Field(pattern=r"^[0-9a-f]{20}$")
    signature: str = Field(max_length=4096)
    device_kind: str = Field(max_length=256)
    measured: str = Field(max_length=64)
    timings: dict[Annotated[str, StringConstraints(max_length=200)], _StoredTiming] = Field(
        max_length=256
    )
    about: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Expected:
    """What an entry for a key must say, known only to whoever made the key.

    The file is hostile input that may fit the schema and still lie: a timing of a
    candidate that cannot serve here (``tpu-flash`` on a CPU) would rank it first, and
    one of another shape would rank by the wrong times.
    """

    signature: str
    device_kind: str
    candidates: frozenset[str]
    """The serving candidates: an entry may leave out one that could not be timed."""


class TuningCache:
    """One JSON file per key in a directory; written atomically, read forgivingly."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else tuning_directory()
        """None: no home and no ``$SEAMLINE_TUNING_DIR``; nothing is read or kept."""
        self.folder_said = False
        """A folder that cannot be read was said, once: no entry's warning, nor the save's."""
        self._stored: list[Mapping[str, Any]] | None = None
        """What each readable entry times (its ``about``), read once for
        :meth:`other_versions`, which ``explain`` asks for every shape."""

    def check_writable(self) -> None:
        """Make the folder and try a file there (``seamline tune``, before it measures);
        :class:`TuningCacheUnwritable` when it cannot be written."""
        folder = self.folder()
        try:
            try_writing(folder, mode=0o700)  # made private, as save() makes it
        except OSError as err:
            raise TuningCacheUnwritable(folder, err) from None

    def folder(self) -> Path:
        """The folder; :class:`NoTuningFolder` where there is none."""
        if self.directory is None:
            raise NoTuningFolder()
        return self.directory

    def path(self, key: str) -> Path:
        return self.folder() / f"attention-{key}.json"

    def not_private(self) -> TuningCacheNotPrivate | None:
        """Why the folder cannot be trusted (:func:`~seamline.core.private_cache.
        folder_not_private`: its owner, its mode, an ACL), or None; None too when it does
        not exist yet (it is made the user's own) or cannot be looked at (reading it then
        fails and says why)."""
        if self.directory is None:
            return None
        try:
            problem = folder_not_private(self.directory)
        except OSError:
            return None
        return None if problem is None else TuningCacheNotPrivate(self.directory, problem)

    def warn_not_private(self, refused: TuningCacheNotPrivate, *, measuring: bool) -> None:
        """Say once a process that the folder is not used, and what happens instead."""
        if refused.directory in _warned_shared:
            return
        _warned_shared.add(refused.directory)
        then = "measured again, not kept" if measuring else "the static order applies"
        log.warning(
            f"tuning cache not used: its folder is not private, and its entries decide which "
            f"attention kernel runs; {then}",
            directory=str(refused.directory),
            why=refused.why,
            fix=refused.fix,
        )

    def load(
        self, key: str, expected: Expected | None = None, *, measuring: bool = True
    ) -> TuningEntry | None:
        """The entry for ``key``; None when there is none or it cannot be trusted.

        Read as untrusted input: a regular file (a FIFO there would hang the run: it is
        opened non-blocking and checked on the descriptor) of at most
        :data:`ENTRY_LIMIT` bytes, strict JSON without repeated keys (Python keeps the
        last, so what a reader sees depends on the parser), the entry's schema, then
        ``expected``. Nothing is read from a folder that is not private, nor an entry that
        is not (:func:`~seamline.core.private_cache.entry_not_private`). The warning says
        what happens next: ``measuring`` is False for a caller that only reads (``explain``).
        """
        if self.directory is None:
            return None  # no home: nothing kept to read
        refused = self.not_private()
        if refused is not None:
            self.warn_not_private(refused, measuring=measuring)
            return None
        path = self.path(key)
        try:
            problem = entry_not_private(path)  # FileNotFoundError: none yet
            if problem is not None:
                raise ValueError(problem.why)
            raw = read_regular(path, ENTRY_LIMIT)
            if len(raw) > ENTRY_LIMIT:
                raise ValueError(f"larger than {ENTRY_LIMIT} bytes")
            entry = TuningEntry.from_json(strict_json(raw, unique_keys=True))
            _check(entry, key, expected)
        except FileNotFoundError:
            return None
        except (OSError, NotRegularFile, ValueError, RecursionError) as err:
            if isinstance(err, OSError) and self._folder_unusable(err, measuring):
                return None
            then = "measured again" if measuring else "the static order applies"
            log.warning(f"tuning cache entry ignored; {then}", path=str(path), why=str(err))
            return None
        return entry

    def _folder_unusable(self, err: OSError, measuring: bool) -> bool:
        """Whether ``err`` is the folder's (a file in its path, another user's folder), not
        the entry's: said once, naming the cause, where every shape warned of its entry."""
        folder = self.folder()
        if err.errno not in (errno.ENOTDIR, errno.EACCES, errno.EPERM):
            return False
        if folder.is_dir() and os.access(folder, os.R_OK | os.X_OK):
            return False
        if not self.folder_said:
            why, fix = folder_trouble(folder, err)
            then = "every shape measured and not kept" if measuring else "the static order applies"
            log.warning(
                f"tuning cache folder cannot be read; {then}",
                directory=str(folder),
                why=why,
                fix=fix,
            )
        self.folder_said = True
        return True

    def other_versions(self, about: Mapping[str, Any]) -> list[str]:
        """The JAX and jaxlib versions of entries that time what ``about`` describes, but under
        other versions (``jax 0.10.2, jaxlib 0.10.2``), each once: set aside, rightly, since a
        timing holds for the versions it was measured under; ``explain`` says so rather than
        "not measured yet". Nothing from a folder that is not private; an entry that cannot
        be read is passed over (looking is best effort, and bounded)."""
        same = {k: v for k, v in _as_stored(about).items() if k not in _VERSIONS}
        found: dict[str, None] = {}
        for theirs in self._stored_abouts():
            if {k: v for k, v in theirs.items() if k not in _VERSIONS} != same:
                continue
            if any(theirs.get(k) != about.get(k) for k in _VERSIONS):
                found[", ".join(f"{k} {_shown(theirs.get(k))}" for k in _VERSIONS)] = None
        return list(found)

    def _stored_abouts(self) -> list[Mapping[str, Any]]:
        """The ``about`` of every entry that can be read (at most :data:`_MOST_LOOKED_AT`
        files), read at the first call only: ``explain`` looks once for each shape (an entry
        saved since is of the versions installed now, which :meth:`other_versions` skips)."""
        if self._stored is not None:
            return self._stored
        self._stored = []
        if self.directory is None or self.not_private() is not None:
            return self._stored
        try:
            paths = sorted(self.directory.glob("attention-*.json"))[:_MOST_LOOKED_AT]
        except OSError:
            return self._stored
        for path in paths:
            try:
                if entry_not_private(path) is not None:
                    continue
                entry = TuningEntry.from_json(strict_json(read_regular(path, ENTRY_LIMIT)))
            except (OSError, NotRegularFile, ValueError, RecursionError):
                continue
            self._stored.append(entry.about)
        return self._stored

    def save(self, entry: TuningEntry) -> Path:
        """Write ``entry`` atomically; :class:`TuningCacheUnwritable` when the folder cannot
        be written, :class:`TuningCacheNotPrivate` when it is not the user's alone (the
        caller decides whether either is fatal). A folder it makes is private (0700)."""
        path = self.path(entry.key)  # NoTuningFolder where there is no folder
        folder = path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            refused = self.not_private()
            if refused is not None:
                raise refused
            write_bytes_atomically(path, (json.dumps(entry.to_json(), indent=2) + "\n").encode())
        except OSError as err:
            raise TuningCacheUnwritable(folder, err) from None
        return path


_VERSIONS = ("jax", "jaxlib")
"""The parts of a key that a JAX upgrade changes: an entry differing only there was set aside."""
_MOST_LOOKED_AT = 2000
"""The most cache files :meth:`TuningCache.other_versions` reads."""


_VERSION_SHOWN = 40
"""The most characters of a version read from a cache entry that a message repeats."""


def _shown(version: object) -> str:
    """A version as an entry holds it, for ``explain``'s line and JSON: its control
    characters as "\ufffd", cut at :data:`_VERSION_SHOWN` characters. An entry is a file
    its owner may edit: a hand-edited ``about.jax`` of 3,000 characters with a newline was
    printed whole, and broke the plan's table in two."""
    return cut(visible(str(version)), _VERSION_SHOWN)


def _as_stored(about: Mapping[str, Any]) -> Any:
    """``about`` as an entry's file holds it (tuples read back as lists)."""
    return json.loads(json.dumps(about, sort_keys=True, default=str))


def _check(entry: TuningEntry, key: str, expected: Expected | None) -> None:
    """``ValueError`` when ``entry`` is not the one its file name and ``expected`` promise."""
    if entry.key != key:
        raise ValueError(f"it is the entry of key {entry.key}")
    if expected is None:
        return
    if entry.signature != expected.signature or entry.device_kind != expected.device_kind:
        raise ValueError("its signature or device kind is not its key's")
    strangers = sorted(set(entry.timings) - expected.candidates)
    if strangers:
        named = cut(", ".join(strangers), 120)
        raise ValueError(f"it times {named}: not among the candidates that serve this shape here")


def tuning_key(
    specs: SpecKey,
    serving: Sequence[Attention[Any]],
    infos: Mapping[str, ComponentInfo | None],
) -> tuple[str, dict[str, Any]]:
    """The cache key of timing ``serving`` on ``specs`` here, and what it was made of.

    ``host`` is the machine (:func:`.host.host_identity`): an entry written on another
    one has another key, so it is not found and the shape is measured again.
    """
    candidates = []
    for candidate in sorted(serving, key=lambda c: c.name):
        info = infos.get(candidate.name)
        candidates.append(
            {
                "name": candidate.name,
                "distribution": info.distribution if info is not None else None,
                "version": info.version if info is not None else None,
                "config": candidate.config.model_dump(mode="json"),
            }
        )
    about = {
        "signature": signature_of(specs),
        "device_kind": specs[0].device_kind,
        "host": host_identity(specs[0].platform, len(jax_devices(local=True))),
        "jax": installed_version("jax"),
        "jaxlib": installed_version("jaxlib"),
        "candidates": candidates,
    }
    text = json.dumps(about, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20], about


Measured = Callable[[TuningEntry, bool], None]
"""Told of every entry used: the entry, and whether it came from the cache."""


class MeasuredRanking:
    """Serving candidates in order of measured time, from the cache or measured now.

    ``measure=False`` only reads the cache (``explain``: planning must not run
    kernels); then a shape nobody measured keeps the static order. ``must_save``
    (``seamline tune``) makes a folder that cannot be written a
    :class:`TuningCacheUnwritable` and one that is not private a
    :class:`TuningCacheNotPrivate` (at once, before anything is measured); a run only
    warns, once, and ranks by what it measured.
    ``again`` (``tune --again``) measures each key anew, once, without reading its entry:
    the entry stays until the new one replaces it (the write is atomic).
    """

    def __init__(
        self,
        infos: Mapping[str, ComponentInfo | None],
        cache: TuningCache | None = None,
        *,
        measure: bool = True,
        must_save: bool = False,
        on_entry: Measured | None = None,
        again: bool = False,
    ) -> None:
        self.infos = infos
        self.cache = cache if cache is not None else TuningCache()
        self.measure = measure
        self.again = again
        self.must_save = must_save
        self._on_entry = on_entry
        self._entries: dict[str, tuple[TuningEntry, bool]] = {}
        self._warned = False
        self._warned_unsteady = False
        self.set_aside: dict[str, list[str]] = {}
        """Shape signature -> the versions of timings set aside for it, found where nothing
        is measured now (``explain``): they were measured under another JAX or jaxlib."""
        refused = self.cache.not_private() if must_save else None
        if refused is not None:  # before minutes of measuring that could not be kept
            raise refused

    def times(self, specs: SpecKey, serving: Sequence[Attention[Any]]) -> MeasuredTimes | None:
        """Median seconds of each serving candidate (the planner's view of :meth:`entry`)."""
        found = self.entry(specs, serving)
        if found is None:
            return None
        entry, cached = found
        return MeasuredTimes({n: t.median for n, t in entry.timings.items()}, cached, entry.key)

    def entry(
        self, specs: SpecKey, serving: Sequence[Attention[Any]]
    ) -> tuple[TuningEntry, bool] | None:
        """The timings of ``serving`` on ``specs`` and whether they came from the cache.

        Remembered for the process, else read from the cache, else measured now (and
        saved) unless this ranking only reads.
        """
        if not serving:
            return None
        key, about = tuning_key(specs, serving, self.infos)
        remembered = self._entries.get(key)
        if remembered is not None:
            return remembered
        expected = Expected(
            about["signature"], about["device_kind"], frozenset(c.name for c in serving)
        )
        entry = None if self.again else self.cache.load(key, expected, measuring=self.measure)
        cached = entry is not None
        if entry is None:
            if not self.measure:
                aside = self.cache.other_versions(about)
                if aside:
                    self.set_aside[about["signature"]] = aside
                return None
            entry = self._measure(key, about, specs, serving)
            if self._steady(entry):
                self._save(entry)
        self._entries[key] = (entry, cached)
        if self._on_entry is not None:
            self._on_entry(entry, cached)
        return entry, cached

    def _steady(self, entry: TuningEntry) -> bool:
        """Whether ``entry`` may be kept: a timing whose calls varied as under contention
        (:func:`.measure.unsteady`) ranks this run only, said once a ranking. ``seamline
        tune`` keeps it all the same (writing is its job; the table shows the spread)."""
        noisy = next((n for n, t in entry.timings.items() if unsteady(t)), None)
        if noisy is None:
            return True
        if not self._warned_unsteady:
            timing = entry.timings[noisy]
            then = (
                "kept all the same (tune --again on a quiet machine)"
                if self.must_save
                else "not kept; the next run measures again"
            )
            log.warning(
                f"attention timings varied too much, as when other processes compete for the "
                f"CPU: {then}",
                candidate=noisy,
                signature=entry.signature,
                median_ms=round(timing.median * 1e3, 4),
                fastest_ms=round(timing.fastest * 1e3, 4),
            )
        self._warned_unsteady = True
        return self.must_save

    def _save(self, entry: TuningEntry) -> None:
        """Keep ``entry``; a run whose folder cannot be written ranks by it all the same
        (the cache only saves the next run time) and says so once, not per shape."""
        try:
            self.cache.save(entry)
        except TuningCacheNotPrivate as refused:
            if self.must_save:
                raise
            self.cache.warn_not_private(refused, measuring=True)
        except TuningCacheUnwritable as err:
            if self.must_save:
                raise
            if not self._warned and not self.cache.folder_said:
                log.warning("tuning cache not kept; the next run measures again", why=str(err))
            self._warned = True

    def _measure(
        self, key: str, about: dict[str, Any], specs: SpecKey, serving: Sequence[Attention[Any]]
    ) -> TuningEntry:
        timings = {}
        signature = signature_of(specs)
        for candidate in serving:
            with tracer().start_as_current_span(
                "seamline.measure",
                attributes={ATTENTION_NAME: candidate.name, "seamline.signature": signature},
            ) as span:
                try:
                    timing = time_candidate(candidate, specs)
                except Exception as err:  # it cannot even run here: leave it out of the ranking
                    # Unless the machine ran out: an entry without it would be saved, and
                    # rank it last on every later run (the timings of one set are kept).
                    where = f"timing attention {candidate.name!r} on {signature}"
                    stop = exhausted(err, where, f"{type(err).__name__}: {err}")
                    if stop is not None:
                        raise stop from err
                    log.info(
                        "attention could not be timed",
                        candidate=candidate.name,
                        signature=signature,
                        error=f"{type(err).__name__}: {err}",
                    )
                    continue
                span.set_attribute("seamline.seconds", timing.median)
                timings[candidate.name] = timing
        return TuningEntry(
            key=key,
            signature=signature,
            device_kind=specs[0].device_kind,
            timings=timings,
            measured=datetime.now(UTC).isoformat(timespec="seconds"),
            about=about,
        )
