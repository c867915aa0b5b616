"""The staged-parts half of the template (sink contract 1.3): a part per shard, published together.

A run split into shards writes each shard's part through a copy of the sink relocated
into the run's staging area beside the destination; the driver publishes the parts
together when every one is finished (:mod:`._parts` has the layout and the rules).
:class:`StagedParts` is what :class:`~._template.PublishingSink` adds for it: the same
for every sink, except how a sink that copies its parts into one output (a Parquet
file, a table) publishes them, which it overrides.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from seamline.contracts.documents import Shard
from seamline.contracts.errors import RESUME, ContractViolation
from seamline.contracts.sink import StagedRun
from seamline.contracts.sink_kit._atomic import (
    MOVE_IT,
    AtomicFile,
    fsync_directory,
    refuse_in_the_way,
)
from seamline.contracts.sink_kit._config import OutputConfig
from seamline.contracts.sink_kit._deferred import stops_deferred
from seamline.contracts.sink_kit._lock import DestinationLock
from seamline.contracts.sink_kit._parts import (
    PartLock,
    PartStaging,
    part_is_finished,
    previous_folder,
    restore_previous,
)

ConfigT = TypeVar("ConfigT", bound=OutputConfig)


class StagedParts(Generic[ConfigT]):
    """Contract 1.3 on a sink of an :class:`OutputConfig`, over :class:`PartStaging`."""

    name: ClassVar[str]
    keeps_parts: ClassVar[bool] = True
    """Whether a staged run is published as a manifest naming every part's files (False:
    the sink copies the parts into one output, in its own :meth:`publish_parts`)."""
    config: ConfigT
    _part_of: Path | None = None
    """On a part of a staged run: the destination of the whole output."""
    _part_lock: PartLock | None = None
    """On a part: its lock, held from recover (or start) to close."""

    def staging_targets(self) -> tuple[Path, list[tuple[str, Path]]]:
        """``(manifest path, [(purpose, destination), ...])``, primary last."""
        raise NotImplementedError

    def staging(self) -> PartStaging:
        """The staged runs at this destination: their area, parts and publication."""
        manifest_path, targets = self.staging_targets()
        return PartStaging(self.name, manifest_path, targets, keeps_parts=self.keeps_parts)

    def relocated(self, directory: Path) -> Any:
        """A new sink like this one whose files are all in ``directory``, by the same names."""
        return type(self)(self.config.relocated(directory))  # type: ignore[call-arg]

    @contextlib.contextmanager
    def hold_destination(self) -> Iterator[None]:
        """The destination's lock (every name the output is published under) for the
        driver of a staged run (contract 1.6): the one a whole run's sink takes in
        ``start``, so a staged run and any other run on this output exclude each other."""
        lock = DestinationLock(self.name, self.config.published_names())
        lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def begin_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        self.staging().begin(run_id, count, manifest)

    def staged_run(self, manifest: Mapping[str, Any]) -> StagedRun | None:
        return self.staging().staged(manifest)

    def publish_parts(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        self.staging().publish(run_id, count, manifest)

    def part(self, run_id: str, shard: Shard) -> Any:
        staging = self.staging()
        directory = staging.part_directory(run_id, shard)
        run_directory = staging.run_directory(run_id)
        if run_directory.is_symlink() or not run_directory.is_dir():
            raise ContractViolation(
                f"{self.name} sink: no staging area for run {run_id} (begin_parts was not "
                "called, or a fresh run replaced it)"
            )
        if directory.is_symlink():  # planted: the part is written in a folder of its own
            directory.unlink()
        part = self.relocated(directory)
        part._part_lock = PartLock(directory / ".lock")
        part._part_of = self.destination
        return part

    def finished(self) -> bool:
        if not self.is_part:
            return False
        manifest_path, targets = self.staging_targets()
        names = [destination.name for _, destination in targets]
        return part_is_finished(self.config.path.parent, manifest_path.name, names)

    @property
    def is_part(self) -> bool:
        """Whether this sink writes a part of a staged run (see :meth:`part`)."""
        return self._part_lock is not None

    @property
    def destination(self) -> Path:
        """The whole output's ``path`` (a part's own ``path`` is in the staging area)."""
        return self._part_of or self.config.path

    def merged_errors(self, parts: Sequence[Mapping[str, Path]]) -> AtomicFile:
        """The errors files of ``parts``, in order, as one unpublished errors file (for a
        sink that copies its parts into one output when it publishes them)."""
        errors = AtomicFile(self.config.resolved_errors_path(), purpose="errors file")
        try:
            for files in parts:
                errors.write(files["errors"].read_bytes())
        except BaseException:
            errors.discard()
            raise
        return errors


def refuse_blocked_parts(files: Sequence[tuple[str, Path]], root: Path) -> None:
    """Refuse to publish a staged run if a folder stands where one of ``files`` goes:
    before the first rename (and before a sink changes its table), naming it; the
    finished parts stay in ``root`` for ``--resume``."""
    refuse_in_the_way(
        files,
        f"the output was not published, and the finished parts are kept in {str(root)!r}: "
        f"{MOVE_IT}, then run again with {RESUME}",
    )


def publish_staged(
    root: Path, run_id: str, files: Sequence[AtomicFile], manifest: AtomicFile
) -> None:
    """Publish a staged run copied into one output: ``files`` in order, the ``manifest`` last.

    The manifest is the mark that the run is published (a resume then finds no staged
    run to continue), so it goes out only once every file it describes is in place; the
    staging area (the run's finished parts, its "checkpoint") is deleted by the caller
    after. The manifest went out first: a failed or killed rename after it left a new
    manifest beside the previous files (refused by every reader), and ``--resume`` found
    the run published and started over. Each file it replaces is kept (a hard link in
    ``root/.publishing-<run>``) until the manifest is out: a rename that fails puts back
    what the renames before it replaced, so the previous output stays readable, and the
    finished parts stay for ``--resume``. A run killed in between leaves the previous
    files there, which the next attempt puts back first (:func:`restore_previous`).
    A folder in the way is refused before the first rename; a stop (Ctrl-C, SIGTERM)
    waits for the last rename.
    """
    everything = [*files, manifest]
    try:
        refuse_blocked_parts([(a.purpose, a.destination) for a in everything], root)
        ours = [a.temporary for a in everything]
        restore_previous(root, manifest.destination, [a.destination for a in files], ours)
        kept = previous_folder(root, run_id)
        kept.mkdir(mode=0o700, parents=True, exist_ok=True)
    except BaseException:
        for atomic in everything:
            atomic.discard()
        raise
    done: list[AtomicFile] = []
    with stops_deferred():
        try:
            for atomic in files:
                _keep_previous(atomic.destination, kept)
                atomic.publish()
                done.append(atomic)
            manifest.publish()
        except BaseException:
            for atomic in reversed(done):
                _put_back(atomic.destination, kept)
            for atomic in everything:
                atomic.discard()
            shutil.rmtree(kept, ignore_errors=True)
            raise
        shutil.rmtree(kept, ignore_errors=True)


def _keep_previous(destination: Path, kept: Path) -> None:
    """A second name in ``kept`` for the regular file at ``destination`` (none: nothing
    to keep). Best effort: another file system (an errors file elsewhere) keeps nothing."""
    backup = kept / destination.name
    with contextlib.suppress(OSError):
        backup.unlink(missing_ok=True)
        if destination.is_file() and not destination.is_symlink():
            os.link(destination, backup)


def _put_back(destination: Path, kept: Path) -> None:
    """Undo a rename: the file it replaced back at ``destination``, or (none) the new one
    removed."""
    backup = kept / destination.name
    with contextlib.suppress(OSError):
        if os.path.lexists(backup):
            os.replace(backup, destination)
        else:
            destination.unlink(missing_ok=True)
        fsync_directory(destination.parent)
