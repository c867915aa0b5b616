"""Resumable output: partial files under stable hidden names, and a checkpoint beside them.

A resumable sink (sink contract 1.1) must survive the process dying at any moment
and continue where its last commit left off, writing nothing twice. So each file
of an output is written to ``.<name>.partial.<random>.tmp`` in its destination's
directory — hidden and ending in ``.tmp`` like every unpublished file, and created
exclusively under a name no one can plant a link at in advance (see :mod:`._atomic`)
— and a commit records, in ``.<primary name>.checkpoint``, the loader cursor and the
*name* (never a path) and byte length of every partial file, which is how the next
process finds them in the destination's folder:

1. flush and fsync every partial file (and, once, their directories), so the bytes
   the checkpoint will count are on disk;
2. write the checkpoint to a temporary file, fsync it and rename it over the old
   one, so a crash leaves either the previous checkpoint or the new one, whole.

Recovering cuts each partial file back to its recorded length, which drops
whatever was written after the commit, and appends from there. Publishing renames
the companions, the primary file and then the manifest (the mark of a published
output) into place, in that order, and only then deletes the checkpoint: a rename
that fails (a folder made at the destination since the run began) renames back
those before it and keeps the checkpoint, and a crash while publishing leaves the
checkpoint, which names each file's inode, so the next ``--resume`` takes back the
files already renamed (:func:`_take_back`) and goes on from the last commit. (It
deleted the checkpoint first, and a failed rename deleted the partial files: all
committed work was lost while the error said it was kept.) Only one run at a time
may write to one destination.

A checkpoint on disk is not trusted: anyone who can write the output folder can
edit it. Reading it is bounded (:data:`MAX_CHECKPOINT_BYTES`, a regular file only,
never a link or a FIFO), and it must match a pydantic schema (:class:`_Checkpoint`,
and the sink's own :class:`SinkState`): every partial file a name with this
destination's prefix, in the destination's folder (never a path, so no checkpoint
can make a resumed run write anywhere else, and moving the folder or the working
directory cannot break one). Anything else is refused with ``ResumeRefused``, naming
the checkpoint and what to do; ``--restart`` then starts over.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import stat
from collections.abc import Mapping
from glob import escape as glob_escape
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError

from seamline.contracts.errors import RESTART, RESUME, ResumeRefused
from seamline.contracts.formats import CHECKPOINT_FORMAT
from seamline.contracts.logs import get_logger
from seamline.contracts.ownership import describe_user, not_yours_alone
from seamline.contracts.sink_kit._atomic import (
    MOVE_IT,
    AtomicFile,
    fsync_directory,
    refuse_in_the_way,
    write_json_atomically,
)
from seamline.contracts.sink_kit._deferred import stops_deferred
from seamline.contracts.sink_kit._made_by import (
    Maker,
    changed_inputs,
    environment_of,
    json_value,
    made_by_another,
    resume_or_restart,
)
from seamline.contracts.untrusted import NotRegularFile, open_regular, read_at_most
from seamline.contracts.untrusted import count_lines as untrusted_count_lines

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from pathlib import Path

log = get_logger("seamline.sink")

MAX_CHECKPOINT_BYTES = 16 << 20
"""The largest checkpoint read. A parquet sink's lists one part per commit, about 60
bytes each: 16 MiB is some 280,000 commits."""


def partial_path(destination: Path) -> Path:
    """``out/emb.parquet`` -> ``out/.emb.parquet.partial.tmp``: a sink's staging *folder*.

    Partial *files* get unpredictable names instead (:func:`partial_prefix`); a sink
    that stages in a folder of this name makes it with :func:`._atomic.own_directory`.
    """
    return destination.with_name(f".{destination.name}.partial.tmp")


def partial_prefix(destination: Path) -> str:
    """``out/emb.jsonl`` -> ``.emb.jsonl.partial.``: how its partial files' names begin."""
    return f".{destination.name}.partial."


def is_partial_name(name: str, destination: Path) -> bool:
    """Whether ``name`` is a name this group gives ``destination``'s partial file.

    A checkpoint's names are trusted only this far: one plain name (no folder, no
    ``..``, no NUL) with the destination's prefix and ``.tmp``; the file opened is that
    name in the destination's folder, so a checkpoint cannot make a resumed run write
    elsewhere.
    """
    return (
        name.startswith(partial_prefix(destination))
        and name.endswith(".tmp")
        and not any(character in name for character in "/\\\0")
    )


def _partials(destination: Path) -> list[Path]:
    """Every partial file of ``destination`` on disk (interrupted runs may leave several).

    With the one name seamline gave them before 2026-12-01 (``.emb.jsonl.partial.tmp``):
    a run that starts over after an older version's killed run deletes them too, where
    they stayed for good, hidden, as large as the output they were to become. (A folder
    of that name is a sink's store, :func:`partial_path`: not a partial file.)
    """
    pattern = glob.escape(partial_prefix(destination)) + "*.tmp"
    found = list(destination.parent.glob(pattern))
    legacy = destination.parent / f"{partial_prefix(destination)}tmp"
    if legacy.is_symlink() or legacy.is_file():
        found.append(legacy)
    return [p for p in found if not p.is_dir() or p.is_symlink()]


def checkpoint_path(primary: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/.emb.jsonl.checkpoint``: the last commit of that output."""
    return primary.with_name(f".{primary.name}.checkpoint")


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest file's content: the run's manifest as indented, sorted, strict JSON.

    Python's ``json`` writes a float that is not finite as ``NaN`` or ``Infinity``, which
    no strict reader takes (``seamline search`` refuses such a manifest): a published
    output would be unreadable. Such a value (a figure a component measured, or read from
    a record) is written as its name, a string.
    """
    text = json.dumps(_finite(dict(manifest)), indent=2, sort_keys=True, default=str)
    return text.encode() + b"\n"


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by its name (``'inf'``)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


# -- what a checkpoint may hold ----------------------------------------------------------


class SinkState(BaseModel):
    """What a sink adds to its checkpoint (rows written, a schema, ...): a schema of its own.

    Strict and closed like the checkpoint around it: a value of another type, a negative
    count or a field no sink writes is refused, never coerced.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoState(SinkState):
    """The state of a sink whose files say everything (``jsonl``)."""


S = TypeVar("S", bound=SinkState)


class _PartialFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    partial: str
    """The partial file's name in its destination's folder; "" when none was opened."""
    bytes: NonNegativeInt
    """Its length at the commit: what a resume cuts it back to."""
    inode: NonNegativeInt | None = None
    """Its inode number: a file at the destination with it is this partial file, renamed
    there by a publication that was interrupted (None: a checkpoint from before)."""


class _InputFiles(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    paths: list[str]
    files: str


class _Hashes(BaseModel):
    """The hashes of the settings as they run (``inputs.resolved``)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    pipeline: dict[str, str] | None = None
    settings: dict[str, str] | None = None


class _Inputs(BaseModel):
    """What the run's manifest recorded of its inputs (``changed_inputs`` reads it)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    pipeline: dict[str, str] | None = None
    resolved: _Hashes | None = None
    """None in checkpoints from before it was recorded (compared as written)."""
    input: _InputFiles | None = None


class _Checkpoint(BaseModel):
    """A checkpoint file, as this module writes it (``state`` checked by the sink's schema)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    seamline_checkpoint: int
    sink: str
    cursor: str | None
    model: Any = None
    """Compared with this run's, never interpreted."""
    inputs: _Inputs | None = None
    versions: dict[str, str] | None = Field(default=None, max_length=64)
    """What computed the output (the manifest's ``versions``); None: a checkpoint written
    before they were recorded."""
    environment: dict[str, str] | None = Field(default=None, max_length=64)
    """The numerics variables it was computed under (the manifest's
    ``provenance.environment``); None: a checkpoint written before 2026-12-06."""
    files: dict[str, _PartialFile]
    state: dict[str, Any]


def first_problem(err: ValidationError, *within: str) -> str:
    """The first thing pydantic found wrong, as ``where: what`` (``files.errors.bytes: ...``);
    ``within``: the fields the validated value was found under (``state``)."""
    first = err.errors()[0]
    where = ".".join(str(part) for part in (*within, *first["loc"]))
    return f"{where}: {first['msg']}" if where else str(first["msg"])


class CheckpointFile(Generic[S]):
    """One output's checkpoint on disk, read back as untrusted input.

    Anyone who can write the output's folder can edit it, so it is read bounded (a
    regular file, never followed through a link, at most :data:`MAX_CHECKPOINT_BYTES`),
    as strict JSON of the schema (:class:`_Checkpoint`, and the sink's ``state``), and
    must be this sink's, for these files (each named as one of their partial files).
    """

    def __init__(
        self, sink: str, path: Path, targets: Sequence[tuple[str, Path]], state: type[S]
    ) -> None:
        self.sink = sink
        self.path = path
        self.targets = list(targets)
        self.state_type = state

    def refused(self, why: str, *, exposed: bool = False) -> ResumeRefused:
        """The refusal of a checkpoint that is not one this sink wrote for these files, or
        (``exposed``) that someone else could have changed: another user's, or one others
        can write (the sink wrote it, 0600; its mode was changed since)."""
        what = (
            "could have been changed by someone else, so it is not trusted"
            if exposed
            else f"is not one this {self.sink} sink wrote for these files"
        )
        return ResumeRefused(
            f"cannot resume: the checkpoint {str(self.path)!r} {what}: {why}. Delete it, or "
            f"run again with {RESTART} to start over"
        )

    def load(self) -> tuple[dict[str, Any], S] | None:
        """The checkpoint as JSON and its state, checked to be this sink's for these files.

        None if there is none; ``ResumeRefused`` (naming the checkpoint and what is wrong
        with it) if it is not a regular file, not the user's alone (this sink writes it
        0600), too large, not JSON or not of the schema, another sink's, or names files
        that are not this output's partial files.
        """
        try:
            with open_regular(self.path, follow=False) as handle:
                found = os.fstat(handle.fileno())
                problem = not_yours_alone(self.path, found)
                data = read_at_most(handle, MAX_CHECKPOINT_BYTES)
        except FileNotFoundError:
            return None
        except NotRegularFile as err:
            raise self.refused(f"it is {err}, not a file") from None
        except OSError as err:
            raise self.refused(f"it cannot be read ({err.strerror or err})") from None
        if problem is not None:  # this sink writes it 0600: another's, or its mode changed
            why, kind = problem
            if kind == "owner":  # named as the staging folder's and the lock's refusals name it
                why = f"it belongs to another user, {describe_user(found.st_uid)}"
            raise self.refused(why, exposed=True)
        if len(data) > MAX_CHECKPOINT_BYTES:
            raise self.refused(f"it is larger than {MAX_CHECKPOINT_BYTES:,} bytes")
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError):  # also a UnicodeDecodeError; nesting too deep
            raise self.refused("it is not JSON") from None
        if isinstance(raw, dict) and raw.get("seamline_checkpoint") not in (
            CHECKPOINT_FORMAT,
            None,
        ):
            raise self.refused(
                f"it is of format {raw.get('seamline_checkpoint')!r}, this version of seamline "
                f"reads format {CHECKPOINT_FORMAT}"
            )
        try:
            checkpoint = _Checkpoint.model_validate(raw)
        except ValidationError as err:
            raise self.refused(first_problem(err)) from None
        if checkpoint.sink != self.sink:  # before its state, which is that sink's schema
            raise self.refused(f"it was written by a {checkpoint.sink!r} sink")
        try:
            state = self.state_type.model_validate(checkpoint.state)
        except ValidationError as err:
            raise self.refused(first_problem(err, "state")) from None
        destinations = dict(self.targets)
        if set(checkpoint.files) != set(destinations):
            raise self.refused(
                f"it records the files {sorted(checkpoint.files)}, this sink writes "
                f"{sorted(destinations)}"
            )
        strange = {
            purpose: entry.partial
            for purpose, entry in checkpoint.files.items()
            if entry.partial and not is_partial_name(entry.partial, destinations[purpose])
        }
        if strange:
            names = ", ".join(f"{purpose}: {name!r}" for purpose, name in strange.items())
            raise self.refused(
                f"it names files that are not this output's partial files ({names}); a "
                "checkpoint names a partial file in the destination's folder, by a name "
                f"starting with {partial_prefix(destinations[next(iter(strange))])!r}"
            )
        return checkpoint.model_dump(mode="json"), state


class ResumableGroup(Generic[S]):
    """The files of one output, their commits, and their publication.

    ``files`` are ``(purpose, destination)`` pairs in publication order, primary
    file last; the manifest is written at ``manifest_path`` when publishing, before
    them all. A sink whose primary output is not a byte stream this group can cut
    back (a Parquet file of row groups, a LanceDB table) names it as ``primary``
    instead: the checkpoint is named after it and the manifest lists it, but the
    sink writes, recovers and publishes it itself, with whatever it needs in the
    checkpoint's ``state`` (of the sink's schema ``state``). Every path is absolute
    (the sinks' configs make them so: :mod:`._paths`).
    """

    def __init__(
        self,
        sink: str,
        manifest_path: Path,
        files: Sequence[tuple[str, Path]],
        *,
        state: type[S],
        primary: tuple[str, Path] | None = None,
        lines: Collection[str] = (),
        digested: Collection[str] = (),
    ) -> None:
        self.sink = sink
        self.lines = frozenset(lines)
        """The files (by purpose) of one record a line: a resume cuts them only after a
        newline, and counts their records (:meth:`recovered_lines`)."""
        self.digested = frozenset(digested)
        """The files (by purpose) whose sha256 the manifest records (``outputs.sha256``)."""
        self.manifest_path = manifest_path
        self.targets = list(files)
        self.primary = primary
        self.state_type = state
        self.details: dict[str, Any] = {}
        """More for the manifest's ``outputs`` (the lancedb sink: its index settings)."""
        self.checkpoint = checkpoint_path((primary or self.targets[-1])[1])
        self._file = CheckpointFile(sink, self.checkpoint, self.targets, state)
        self.manifest: Mapping[str, Any] = {}
        self.files: dict[str, AtomicFile] | None = None
        self.committed = False
        """Whether a checkpoint of this output is on disk (made or recovered here)."""
        self._directories_synced = False

    # -- fresh runs --------------------------------------------------------------------

    def clear(self) -> None:
        """Forget an earlier run's partial state: its checkpoint first, then its files."""
        self.checkpoint.unlink(missing_ok=True)
        self.sweep()
        for _, destination in self.targets:
            for partial in _partials(destination):  # unlink removes a link, not its target
                partial.unlink(missing_ok=True)
        self.committed = False

    def sweep(self) -> None:
        """Delete the temporary files of commits and publications a killed process left.

        A commit writes the new checkpoint to a temporary file beside it and renames it
        into place, and publishing writes the manifest the same way; a process killed
        between the two leaves that file behind. Only one run writes a destination at
        a time (the sinks lock it), so none of them belongs to a live run.
        """
        for final in (self.checkpoint, self.manifest_path):
            hidden = final.name if final.name.startswith(".") else f".{final.name}"
            for stale in final.parent.glob(f"{glob_escape(hidden)}.*.tmp"):
                stale.unlink(missing_ok=True)

    def open(self) -> dict[str, AtomicFile]:
        """The partial files, created empty on first use (any stale checkpoint is deleted)."""
        if self.files is None:
            # No checkpoint may describe files that are being emptied.
            self.checkpoint.unlink(missing_ok=True)
            self.committed = False
            self.files = self._open_files(None)
        return self.files

    # -- commits -----------------------------------------------------------------------

    def commit(self, cursor: str, state: S) -> None:
        """Make the partial files durable, then record ``cursor``, their lengths and ``state``."""
        files = self.open()
        for atomic in files.values():
            atomic.sync()
        if not self._directories_synced:  # the new files' names must survive a crash too
            for directory in {d.parent for _, d in self.targets}:
                fsync_directory(directory)
            self._directories_synced = True
        lengths = {purpose: atomic.length() for purpose, atomic in files.items()}
        _write_checkpoint(self, self._record(cursor, lengths, state))

    def _record(self, cursor: str | None, lengths: Mapping[str, int], state: S) -> dict[str, Any]:
        return {
            "seamline_checkpoint": CHECKPOINT_FORMAT,
            "sink": self.sink,
            "cursor": cursor,
            "model": json_value(self.manifest.get("model")),
            "inputs": json_value(self.manifest.get("inputs")),
            "versions": json_value(self.manifest.get("versions")),
            "environment": environment_of(self.manifest),
            "files": {
                purpose: {
                    "partial": self._partial_name(purpose),
                    "bytes": lengths[purpose],
                    "inode": self._inode(purpose),
                }
                for purpose, _ in self.targets
            },
            "state": state.model_dump(mode="json"),
        }

    def _partial_name(self, purpose: str) -> str:
        """The partial file's name, "" while none is open (a checkpoint covering nothing)."""
        return self.files[purpose].temporary.name if self.files is not None else ""

    def _inode(self, purpose: str) -> int | None:
        """The partial file's inode number (None while none is open)."""
        return os.fstat(self.files[purpose].file.fileno()).st_ino if self.files else None

    def annotate(self, **fields: Any) -> None:
        """Set ``fields`` of the checkpoint's state without changing what it covers.

        The cursor and the lengths stay those of the last commit; without one, the
        checkpoint covers nothing (cursor None, empty files), and a resume starts from
        the beginning. A sink records here what it is about to do that a crash must
        undo (the lancedb sink: publishing into a table).
        """
        loaded = self._file.load()
        if loaded is None:
            lengths = dict.fromkeys((p for p, _ in self.targets), 0)
            record = self._record(None, lengths, self.state_type.model_validate(fields))
        else:
            record, state = loaded
            changed = self.state_type.model_validate({**state.model_dump(mode="json"), **fields})
            record = {**record, "state": changed.model_dump(mode="json")}
        write_json_atomically(self.checkpoint, record)
        self.committed = True

    def recorded_state(self) -> S | None:
        """The state of this sink's checkpoint on disk, whatever model or files it was for.

        None when there is none, or it is unreadable, invalid or another sink's: a fresh
        run deletes such a checkpoint anyway, and a resume reports it (:meth:`recover`).
        """
        try:
            loaded = self._file.load()
        except ResumeRefused:
            return None
        return None if loaded is None else loaded[1]

    def recover(self, manifest: Mapping[str, Any]) -> tuple[str | None, S] | None:
        """Reopen the files as the last commit left them: ``(cursor, state)``, or None.

        With no checkpoint, any partial files are deleted and None is returned (the
        run starts from the beginning, and the files are created on first use). The
        cursor is None when the checkpoint covers nothing (see :meth:`annotate`).
        """
        self.manifest = manifest
        loaded = self._read()
        if loaded is None:
            self.clear()
            return None
        record, state = loaded
        self.sweep()
        for purpose, destination in self.targets:
            _take_back(destination, record["files"][purpose], self.checkpoint)
        recorded = {
            purpose: (entry["partial"], entry["bytes"])
            for purpose, entry in record["files"].items()
        }
        self.files = self._open_files(recorded)
        self.committed = True
        self._directories_synced = True
        return record["cursor"], state

    def recovered_lines(self) -> dict[str, int]:
        """After :meth:`recover`: the records each file of lines holds up to the last commit.

        A file the checkpoint names no partial file for holds none.
        """
        files = self.files or {}
        return {
            purpose: (files[purpose].lines or 0) if purpose in files else 0
            for purpose in self.lines
        }

    def _read(self) -> tuple[dict[str, Any], S] | None:
        """The checkpoint, checked against this output and this run's model; None if absent."""
        loaded = self._file.load()
        if loaded is None:
            return None
        record = loaded[0]
        maker = made_by_another(record, self.manifest)
        if maker is not None:
            raise self._made_by(maker)
        changed = changed_inputs(record["inputs"], json_value(self.manifest.get("inputs")))
        if changed:
            raise ResumeRefused(
                f"cannot resume from {str(self.checkpoint)!r}: {'; '.join(changed)} changed "
                "since that checkpoint, and resuming would splice two different outputs into "
                f"one. Restore them, or run again with {RESTART} to start over"
            )
        return loaded

    def _made_by(self, maker: Maker) -> ResumeRefused:
        """The refusal of a checkpoint whose output ``maker`` made, not this run: resuming
        would do its harm (reinstalling the versions it was made with is offered, where
        that would do)."""
        return ResumeRefused(
            f"cannot resume: the output committed in {str(self.checkpoint)!r} was made by "
            f"{maker.made}; resuming would {maker.harm}. "
            f"{resume_or_restart(maker, RESUME, RESTART)}"
        )

    def _open_files(self, recorded: Mapping[str, tuple[str, int]] | None) -> dict[str, AtomicFile]:
        """New partial files (``recorded`` None), or those a checkpoint names, reopened.

        A checkpoint names each file by its name in its destination's folder (checked by
        :meth:`CheckpointFile.load`); one that covers nothing names no file (""): a new one is made.
        """
        files: dict[str, AtomicFile] = {}
        fresh: set[str] = set()
        try:
            for purpose, destination in self.targets:
                name, length = recorded[purpose] if recorded is not None else ("", 0)
                if name:
                    files[purpose] = AtomicFile(
                        destination,
                        purpose=purpose,
                        temporary=destination.parent / name,
                        resume_at=length,
                        lines=purpose in self.lines,
                        checkpoint=f"the checkpoint {str(self.checkpoint)!r}",
                    )
                else:
                    fresh.add(purpose)
                    files[purpose] = AtomicFile(
                        destination, purpose=purpose, prefix=partial_prefix(destination)
                    )
        except BaseException:
            for purpose, atomic in files.items():
                # A fresh file is of no use to anyone; a recovered one still is.
                if purpose in fresh:
                    atomic.discard()
                else:
                    atomic.keep()
            raise
        return files

    # -- the end -----------------------------------------------------------------------

    def publish(self, last: Sequence[AtomicFile] = ()) -> None:
        """Publish every file, and ``last``, then the manifest; then delete the checkpoint.

        The files are read for the manifest's checks first; see :func:`_publish_in_order`.
        """
        files = self.open()
        outputs = self.outputs()
        outputs.update(published_checks(files, outputs["files"], self.lines, self.digested))
        try:
            manifest = AtomicFile(self.manifest_path, purpose="manifest")
        except BaseException:
            for atomic in last:
                atomic.discard()
            raise
        manifest.write(manifest_bytes({**self.manifest, "outputs": outputs}))
        _publish_in_order(self, [*files.values(), *last], manifest, fresh=last)
        self.committed = False

    def outputs(self) -> dict[str, Any]:
        """What the manifest says about the files: which sink wrote them, and where they are.

        Paths are relative to the manifest's folder when they lie under it, so a reader
        (``seamline search``) finds every file from the manifest alone, also after the
        whole folder was moved; others stay as configured.
        """
        base = self.manifest_path.parent
        files = {}
        for purpose, destination in [*self.targets, *([self.primary] if self.primary else [])]:
            try:
                files[purpose] = destination.relative_to(base).as_posix()
            except ValueError:
                files[purpose] = str(destination)
        return {"sink": self.sink, "files": files, **self.details}

    def abandon(self) -> None:
        """End without publishing: keep the committed state if there is one, else delete all."""
        if self.files is None:
            return
        for atomic in self.files.values():
            if self.committed:
                atomic.keep()
            else:
                atomic.discard()

    def discard(self) -> None:
        """Delete the partial files and the checkpoint."""
        for atomic in (self.files or {}).values():
            atomic.discard()
        self.clear()


def _publish_in_order(
    group: ResumableGroup[Any],
    data: Sequence[AtomicFile],
    manifest: AtomicFile,
    fresh: Collection[AtomicFile],
) -> None:
    """Rename ``data`` into place in order, then ``manifest``; then delete the checkpoint.

    A folder in the way of any of them is refused before the first rename (exit code
    2, naming it). A rename that fails renames back those before it (the destination
    they replaced is gone with the rename, but the committed partial files are again
    where the checkpoint names them): what was committed is kept, and the error says
    so only when it was. The ``fresh`` files (not a checkpoint's) and the manifest are
    deleted. A stop (Ctrl-C, SIGTERM) waits for the last rename (:func:`stops_deferred`).
    """
    keep = group.committed  # without a commit, a partial file is no one's: deleted
    done: list[AtomicFile] = []
    with stops_deferred():  # a stop it held is raised at its end: the output published
        try:
            refuse_blocked(group, [(a.purpose, a.destination) for a in [*data, manifest]])
            for atomic in data:
                atomic.publish(keep=keep and atomic not in fresh)
                done.append(atomic)
            manifest.publish()
            done.append(manifest)
            group.checkpoint.unlink(missing_ok=True)
        except BaseException:
            for atomic in reversed(done):
                atomic.take_back()
            for atomic in [*data, manifest]:
                if keep and atomic not in fresh and atomic is not manifest:
                    atomic.keep()
                    continue
                if atomic in done:
                    atomic.temporary.unlink(missing_ok=True)
                atomic.discard()
            raise


def refuse_blocked(group: ResumableGroup[Any], more: Sequence[tuple[str, Path]] = ()) -> None:
    """Refuse to publish ``group`` (and ``more``: a file the sink makes last, named by
    purpose) if a folder stands where a file goes.

    Checked before a sink makes its last files (a parquet sink's one file) and changes
    anything (a lancedb sink's table), and again before the first rename; the message
    says what was kept: the last commit when there is one."""
    if group.committed:
        outcome = (
            f"the output was not published, and what the sink last committed is kept "
            f"({str(group.checkpoint)!r}): {MOVE_IT}, then run again with {RESUME}"
        )
    else:
        outcome = (
            f"the output was not published, and nothing was committed: {MOVE_IT}, then run again"
        )
    refuse_in_the_way([*group.targets, *more, ("manifest", group.manifest_path)], outcome)


def _take_back(destination: Path, recorded: Mapping[str, Any], checkpoint: Path) -> None:
    """Before a resume: rename back a partial file that an interrupted publication renamed.

    Publishing keeps the checkpoint until every file is in place, so a crash there
    leaves a checkpoint whose partial file is gone, at ``destination`` now: the file
    there with the recorded inode, a regular file, is it (a file of another inode, an
    older output, is left alone, and the resume is refused as the file is gone).
    """
    name, inode = recorded.get("partial"), recorded.get("inode")
    if not name or inode is None:
        return
    partial = destination.parent / name
    try:
        if os.path.lexists(partial):
            return
        found = os.lstat(destination)
        if not stat.S_ISREG(found.st_mode) or found.st_ino != inode:
            return
        os.replace(destination, partial)
        os.chmod(partial, 0o600, follow_symlinks=False)
    except OSError:
        return  # the resume then says what is missing
    log.warning(
        f"resume: the publication of {str(destination)!r} was interrupted; the file was "
        f"taken back, to go on from the checkpoint {str(checkpoint)!r}"
    )


def _write_checkpoint(group: ResumableGroup[Any], record: dict[str, Any]) -> None:
    """Write ``group``'s checkpoint: committed once it is on disk, however the write ends.

    A checkpoint on disk is this run's (opening the files deleted any older one), even
    when the write was stopped after its rename: a Ctrl-C there left ``committed`` False,
    closing deleted the partial files that checkpoint names, and ``--resume`` was refused
    ("the partial records file ... named by the checkpoint is gone").
    """
    try:
        write_json_atomically(group.checkpoint, record)
    finally:
        group.committed = group.committed or group.checkpoint.exists()


def published_checks(
    files: Mapping[str, AtomicFile],
    names: Mapping[str, str],
    lines: Collection[str],
    digested: Collection[str],
) -> dict[str, dict[str, Any]]:
    """What a reader checks the files it reads against, for the manifest's ``outputs``:
    ``lines``, the records of each file of ``lines`` (:func:`count_lines`), and ``sha256``,
    the sha256 of each file ``digested`` (a reader of files it pairs row by row, which a
    republish renames one after the other, tells one publish's file from another's by it;
    an output's identity is its content, so a copied or moved folder keeps it). By file
    name, one sequential read of each. Not the errors file, which every sink has: a
    columnar sink embeds its manifest in its own file before its count is known."""
    counted: dict[str, Any] = {}
    sha256: dict[str, Any] = {}
    for purpose, atomic in files.items():
        name = names.get(purpose)
        if name is None or purpose == "errors":
            continue
        if purpose in digested:
            sha256[name], count = digest_lines(atomic)
            if purpose in lines:
                counted[name] = count
        elif purpose in lines:
            counted[name] = count_lines(atomic)
    return {key: value for key, value in (("lines", counted), ("sha256", sha256)) if value}


def digest_lines(atomic: AtomicFile) -> tuple[str, int]:
    """The sha256 of a file about to be published, and its newlines, in one read a MiB at
    a time (read through the open file: it is this process's own)."""
    atomic.file.flush()
    digest = hashlib.sha256()
    count = offset = 0
    fd = atomic.file.fileno()
    while block := os.pread(fd, 1 << 20, offset):
        digest.update(block)
        count += block.count(b"\n")
        offset += len(block)
    return digest.hexdigest(), count


def count_lines(atomic: AtomicFile) -> int:
    """The records of a file of lines about to be published (its newlines), for the
    manifest's ``outputs.lines``: a reader that finds another count was handed a file cut
    short, or added to, since (a JSON-lines output cut at a line boundary read as a
    smaller, valid one). One sequential read of what was just written."""
    atomic.file.flush()
    return untrusted_count_lines(atomic.temporary)


def warn_discarding(group: ResumableGroup[Any]) -> None:
    """Before a fresh run clears ``group`` (its ``manifest`` set): warn if its checkpoint
    holds a commit a resume of this run would go on from. A notebook cell run again
    without ``resume=True`` discarded minutes of committed work without a word; one of
    another model or input, or one that covers nothing, is no loss (a resume refuses it)."""
    try:
        loaded = group._read()
    except ResumeRefused:
        return
    if loaded is not None and loaded[0]["cursor"] is not None:
        log.warning(
            f"starting over: the checkpoint {str(group.checkpoint)!r} an interrupted run "
            "left is discarded, and what it committed with it; to go on from it instead, "
            f"run with {RESUME}"
        )
