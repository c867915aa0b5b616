"""Resumable output: partial files under stable hidden names, and a checkpoint beside them.

A resumable sink (sink contract 1.1) must survive the process dying at any moment
and continue where its last commit left off, writing nothing twice. So each file
of an output is written to ``.<name>.partial.<random>.tmp`` in its destination's
directory — hidden and ending in ``.tmp`` like every unpublished file, and created
exclusively under a name no one can plant a link at in advance (see :mod:`._atomic`)
— and a commit records, in ``.<primary name>.checkpoint``, the loader cursor and the
name and byte length of every partial file, which is how the next process finds them:

1. flush and fsync every partial file (and, once, their directories), so the bytes
   the checkpoint will count are on disk;
2. write the checkpoint to a temporary file, fsync it and rename it over the old
   one, so a crash leaves either the previous checkpoint or the new one, whole.

Recovering cuts each partial file back to its recorded length, which drops
whatever was written after the commit, and appends from there. Publishing deletes
the checkpoint first and then renames the manifest, the companions and the primary
file into place, in that order (see :class:`._atomic.AtomicGroup`); a crash while
publishing therefore leaves no checkpoint to resume from, and the next run starts
over. Only one run at a time may write to one destination.
"""

from __future__ import annotations

import glob
import json
from glob import escape as glob_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamline.components.sinks._atomic import (
    AtomicFile,
    AtomicGroup,
    fsync_directory,
    write_json_atomically,
)
from seamline.contracts import ResumeRefused, UserError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

CHECKPOINT_FORMAT = 1


def partial_path(destination: Path) -> Path:
    """``out/emb.parquet`` -> ``out/.emb.parquet.partial.tmp``: a sink's staging *folder*.

    Partial *files* get unpredictable names instead (:func:`partial_prefix`); a sink
    that stages in a folder of this name makes it with :func:`._atomic.own_directory`.
    """
    return destination.with_name(f".{destination.name}.partial.tmp")


def partial_prefix(destination: Path) -> str:
    """``out/emb.jsonl`` -> ``.emb.jsonl.partial.``: how its partial files' names begin."""
    return f".{destination.name}.partial."


def is_partial_of(path: Path, destination: Path) -> bool:
    """Whether ``path`` is a name this group gives ``destination``'s partial file.

    A checkpoint's names are trusted only this far: in the destination's folder, with
    its prefix and ``.tmp``, so a checkpoint cannot make a resumed run write elsewhere.
    """
    return (
        path.parent == destination.parent
        and path.name.startswith(partial_prefix(destination))
        and path.name.endswith(".tmp")
        and "/" not in path.name
    )


def _partials(destination: Path) -> list[Path]:
    """Every partial file of ``destination`` on disk (interrupted runs may leave several)."""
    pattern = glob.escape(partial_prefix(destination)) + "*.tmp"
    return [p for p in destination.parent.glob(pattern) if not p.is_dir() or p.is_symlink()]


def checkpoint_path(primary: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/.emb.jsonl.checkpoint``: the last commit of that output."""
    return primary.with_name(f".{primary.name}.checkpoint")


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest file's content: the run's manifest as indented, sorted JSON."""
    return json.dumps(dict(manifest), indent=2, sort_keys=True, default=str).encode() + b"\n"


def _json_value(value: Any) -> Any:
    """``value`` as it reads back from JSON, so a stored value compares equal to a fresh one."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def changed_inputs(recorded: Any, current: Any) -> list[str]:
    """What differs between a checkpoint's manifest ``inputs`` and this run's, in words.

    ``inputs`` (written by the core at start) holds ``pipeline``: one hash per section
    of the pipeline file, and ``input``: the loader's paths and a hash of their files.
    A checkpoint without them (an older one) is not compared.
    """
    if not isinstance(recorded, dict) or not isinstance(current, dict):
        return []
    said: list[str] = []
    before, now = recorded.get("pipeline") or {}, current.get("pipeline") or {}
    sections = [section for section in before if before.get(section) != now.get(section)]
    if sections:
        said.append(f"the pipeline file's {', '.join(sections)} section{'s' * (len(sections) > 1)}")
    if recorded.get("input") != current.get("input"):
        paths = (current.get("input") or recorded.get("input") or {}).get("paths", [])
        where = f" under {', '.join(map(repr, paths))}" if paths else ""
        said.append(f"the input files{where} (added, removed or modified)")
    return said


class ResumableGroup:
    """The files of one output, their commits, and their publication.

    ``files`` are ``(purpose, destination)`` pairs in publication order, primary
    file last; the manifest is written at ``manifest_path`` when publishing, before
    them all. A sink whose primary output is not a byte stream this group can cut
    back (a Parquet file of row groups, a LanceDB table) names it as ``primary``
    instead: the checkpoint is named after it and the manifest lists it, but the
    sink writes, recovers and publishes it itself, with whatever state it needs in
    the checkpoint's ``state``.
    """

    def __init__(
        self,
        sink: str,
        manifest_path: Path,
        files: Sequence[tuple[str, Path]],
        *,
        primary: tuple[str, Path] | None = None,
    ) -> None:
        self.sink = sink
        self.manifest_path = manifest_path
        self.targets = list(files)
        self.primary = primary
        self.details: dict[str, Any] = {}
        """More for the manifest's ``outputs`` (the lancedb sink: its index settings)."""
        self.checkpoint = checkpoint_path((primary or self.targets[-1])[1])
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

    def commit(self, cursor: str, state: Mapping[str, Any]) -> None:
        """Make the partial files durable, then record ``cursor``, their lengths and ``state``."""
        files = self.open()
        for atomic in files.values():
            atomic.sync()
        if not self._directories_synced:  # the new files' names must survive a crash too
            for directory in {d.parent for _, d in self.targets}:
                fsync_directory(directory)
            self._directories_synced = True
        lengths = {purpose: atomic.length() for purpose, atomic in files.items()}
        write_json_atomically(self.checkpoint, self._record(cursor, lengths, state))
        self.committed = True

    def _record(
        self, cursor: str | None, lengths: Mapping[str, int], state: Mapping[str, Any]
    ) -> dict[str, Any]:
        return {
            "seamline_checkpoint": CHECKPOINT_FORMAT,
            "sink": self.sink,
            "cursor": cursor,
            "model": _json_value(self.manifest.get("model")),
            "inputs": _json_value(self.manifest.get("inputs")),
            "files": {
                purpose: {"partial": self._partial_name(purpose), "bytes": lengths[purpose]}
                for purpose, _ in self.targets
            },
            "state": _json_value(dict(state)),
        }

    def _partial_name(self, purpose: str) -> str:
        """The partial file's name, "" while none is open (a checkpoint covering nothing)."""
        return str(self.files[purpose].temporary) if self.files is not None else ""

    def annotate(self, **state: Any) -> None:
        """Add ``state`` to the checkpoint without changing what it covers.

        The cursor and the lengths stay those of the last commit; without one, the
        checkpoint covers nothing (cursor None, empty files), and a resume starts from
        the beginning. A sink records here what it is about to do that a crash must
        undo (the lancedb sink: publishing into a table).
        """
        record = self._load()
        if record is None:
            record = self._record(None, dict.fromkeys((p for p, _ in self.targets), 0), {})
        record["state"] = _json_value({**record["state"], **state})
        write_json_atomically(self.checkpoint, record)
        self.committed = True

    def recorded_state(self) -> dict[str, Any] | None:
        """The state of this sink's checkpoint on disk, whatever model or files it was for.

        None when there is none, or it is unreadable or another sink's: a fresh run
        deletes such a checkpoint anyway, and a resume reports it (:meth:`recover`).
        """
        try:
            record = json.loads(self.checkpoint.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("sink") != self.sink:
            return None
        state = record.get("state")
        return dict(state) if isinstance(state, dict) else None

    def recover(self, manifest: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]] | None:
        """Reopen the files as the last commit left them: ``(cursor, state)``, or None.

        With no checkpoint, any partial files are deleted and None is returned (the
        run starts from the beginning, and the files are created on first use). The
        cursor is None when the checkpoint covers nothing (see :meth:`annotate`).
        """
        self.manifest = manifest
        record = self._read()
        if record is None:
            self.clear()
            return None
        self.sweep()
        recorded = {
            purpose: (str(entry["partial"]), int(entry["bytes"]))
            for purpose, entry in record["files"].items()
        }
        self.files = self._open_files(recorded)
        self.committed = True
        self._directories_synced = True
        cursor = record["cursor"]
        return (None if cursor is None else str(cursor)), dict(record["state"])

    def _read(self) -> dict[str, Any] | None:
        """The checkpoint, checked against this output and this run's model; None if absent."""
        record = self._load()
        if record is None:
            return None
        if record.get("model") != _json_value(self.manifest.get("model")):
            raise ResumeRefused(
                f"cannot resume: the output committed in {str(self.checkpoint)!r} was made by "
                f"another model configuration ({record.get('model')}); resuming would mix "
                "vectors of two models. Run again with --restart (or without --resume) to "
                "start over"
            )
        changed = changed_inputs(record.get("inputs"), _json_value(self.manifest.get("inputs")))
        if changed:
            raise ResumeRefused(
                f"cannot resume from {str(self.checkpoint)!r}: {'; '.join(changed)} changed "
                "since that checkpoint, and resuming would splice two different outputs into "
                "one. Restore them, or run again with --restart to start over"
            )
        return record

    def _load(self) -> dict[str, Any] | None:
        """The checkpoint, checked to be this sink's for these files; None if absent."""
        try:
            text = self.checkpoint.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        where = str(self.checkpoint)
        try:
            record = json.loads(text)
            files = record["files"]
            valid = (
                record["seamline_checkpoint"] == CHECKPOINT_FORMAT
                and isinstance(record["cursor"], str | None)
                and isinstance(record["state"], dict)
                and isinstance(files, dict)
            )
        except (ValueError, KeyError, TypeError):
            valid = False
        if not valid:
            raise UserError(
                f"cannot resume: the checkpoint {where!r} is not one this {self.sink} sink "
                "wrote; delete it, or run again without resuming to start over"
            )
        destinations = dict(self.targets)
        recorded = {purpose: entry.get("partial") for purpose, entry in files.items()}
        ours = set(recorded) == set(destinations) and all(
            isinstance(name, str)
            and (name == "" or is_partial_of(Path(name), destinations[purpose]))
            for purpose, name in recorded.items()
        )
        if record.get("sink") != self.sink or not ours:
            raise UserError(
                f"cannot resume: the checkpoint {where!r} was written by a {record.get('sink')} "
                f"sink for other files ({', '.join(map(str, recorded.values()))}); run again "
                "without resuming to start over"
            )
        return dict(record)

    def _open_files(self, recorded: Mapping[str, tuple[str, int]] | None) -> dict[str, AtomicFile]:
        """New partial files (``recorded`` None), or those a checkpoint names, reopened.

        A checkpoint that covers nothing names no file (""): a new one is made for it.
        """
        files: dict[str, AtomicFile] = {}
        fresh: set[str] = set()
        try:
            for purpose, destination in self.targets:
                name, length = recorded[purpose] if recorded is not None else ("", 0)
                if name:
                    files[purpose] = AtomicFile(
                        destination, purpose=purpose, temporary=Path(name), resume_at=length
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
        """Delete the checkpoint, then publish the manifest, every file, and ``last``, in order."""
        files = self.open()
        self.checkpoint.unlink(missing_ok=True)
        self.committed = False
        group = AtomicGroup()
        try:
            target = group.open(self.manifest_path, purpose="manifest")
        except BaseException:
            self.discard()
            raise
        target.write(manifest_bytes({**self.manifest, "outputs": self.outputs()}))
        for atomic in [*files.values(), *last]:
            group.add(atomic)
        group.publish()

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
