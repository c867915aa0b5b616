"""Staged parts: a run split into shards writes one part per shard, published together.

Shards run on different workers, in parallel, so they cannot append to one file.
Each shard writes its *part* through a sink of its own (the same sink, relocated)
into the run's staging area beside the destination::

    out/emb.jsonl                                       (the destination, as configured)
    out/.emb.jsonl.shards/<run_id>/run.json             the run: its id, shard count, model
    out/.emb.jsonl.shards/<run_id>/part-00001-of-00004/ one part: the sink's own files,
        .emb.jsonl.partial.tmp  .emb.jsonl.checkpoint   while it is written (resumable),
        emb.manifest.json  emb.errors.jsonl  emb.jsonl  once it is finished (primary last)

A part commits and resumes exactly as a whole output does (:mod:`._checkpoint`), and
"finished" means its primary file has been renamed into place (it is renamed last).
When every part is finished, the driver publishes the run by writing one manifest,
``out/emb.manifest.json``, that lists every part's files in shard order: one atomic
rename, so a reader sees the previous output or the new one, whole. The manifest is
the only way in: readers (``seamline search``, :mod:`.readers`) follow it.

A run directory that the published manifest does not name is *unpublished*: a later
``begin`` deletes it (a fresh run), or ``staged`` finds it (a resumed run continues
it, with its run id and shard count). A published run's directory stays until a
later publication replaces it, for the sinks whose manifest names the parts' files
(``jsonl``, ``npy``). The ``parquet`` and ``lancedb`` sinks instead copy every
part's rows into one file or one table when they publish (``keeps_parts = False``):
their manifest names that output and the run (``outputs.run_id``), and the run's
directory is of no further use and deleted. Each part is locked (``flock``) while a process writes
it, so a worker left over from a killed driver cannot write beside its replacement.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from seamline.contracts.documents import Shard
from seamline.contracts.errors import RESTART, RESUME, ContractViolation, ResumeRefused, UserError
from seamline.contracts.executor import union_served
from seamline.contracts.manifest import MAX_SERVED_SHAPES, Manifest
from seamline.contracts.sink import StagedRun
from seamline.contracts.sink_kit._atomic import (
    AtomicFile,
    own_directory,
    refuse_a_link,
    write_json_atomically,
)
from seamline.contracts.sink_kit._checkpoint import first_problem, manifest_bytes
from seamline.contracts.sink_kit._deferred import stops_deferred
from seamline.contracts.sink_kit._lock import FileLock
from seamline.contracts.sink_kit._made_by import (
    changed_inputs,
    environment_of,
    made_by_another,
    resume_or_restart,
)
from seamline.contracts.untrusted import (
    NotRegularFile,
    OutsideFolder,
    count_lines,
    read_regular,
    within,
)

RUN_FORMAT = 1
RUN_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
"""What a run id may be: one plain name, since it names a folder of the staging area (the
core makes 12 hex digits). One read from disk (``run.json``, the published manifest's
``outputs.run_id``) is checked against it before it is joined to a path, so no file
can make a sink look, write or delete outside its staging area."""
RunId = Annotated[str, Field(pattern=f"^{RUN_ID}$")]
MAX_RECORD_BYTES = 1 << 20
"""The largest ``run.json`` or published manifest read back here (both are small)."""
LOCK_TIMEOUT = 120.0
"""Seconds a part waits for another process that still holds it (a worker of a killed
driver, which its cluster ends within seconds) before giving up with an error."""


STAGED_UNRECORDED = (
    "a seamline that did not record its versions in a staged run (from before 2026-12-06)"
)
"""Who made parts whose ``run.json`` has no ``versions``: it began to record them then."""


def staging_root(primary: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/.emb.jsonl.shards``: where the parts of staged runs live."""
    return primary.with_name(f".{primary.name}.shards")


def part_name(shard: Shard) -> str:
    return f"part-{shard.index:05d}-of-{shard.count:05d}"


def _json_value(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


class PartStaging:
    """The staged runs at one sink destination: begin, find, lay out and publish them.

    ``targets`` are the sink's ``(purpose, destination)`` pairs, primary last, as the
    sink's :class:`._checkpoint.ResumableGroup` has them; a part keeps each file's name
    inside its own directory.
    """

    def __init__(
        self,
        sink: str,
        manifest_path: Path,
        targets: Sequence[tuple[str, Path]],
        *,
        keeps_parts: bool = True,
    ) -> None:
        self.sink = sink
        self.keeps_parts = keeps_parts
        self.manifest_path = manifest_path
        self.targets = list(targets)
        self.primary = self.targets[-1][1]
        self.root = staging_root(self.primary)
        names = [destination.name for _, destination in self.targets]
        if len(set(names)) != len(names) or self.manifest_path.name in names:
            raise UserError(
                f"the {sink} sink cannot stage parts: its files ({', '.join(names)}) do not "
                "all have different names, and a part keeps them side by side in one "
                "directory; give them different file names"
            )

    # -- layout --------------------------------------------------------------------------

    def run_directory(self, run_id: str) -> Path:
        """The folder of run ``run_id``; a ContractViolation if it is not a plain name."""
        if not re.fullmatch(RUN_ID, run_id):
            raise ContractViolation(
                f"{self.sink} sink: run id {run_id!r} is not a plain name ({RUN_ID}); a run "
                "id names a folder of the staging area"
            )
        return self.root / run_id

    def part_directory(self, run_id: str, shard: Shard) -> Path:
        return self.run_directory(run_id) / part_name(shard)

    def part_files(self, run_id: str, shard: Shard) -> dict[str, Path]:
        """Where a part's files are once it is finished, by purpose."""
        directory = self.part_directory(run_id, shard)
        return {purpose: directory / destination.name for purpose, destination in self.targets}

    def is_finished(self, run_id: str, shard: Shard) -> bool:
        """Whether the part of ``shard`` is one its sink finished (:func:`part_is_finished`)."""
        names = [destination.name for _, destination in self.targets]
        return part_is_finished(self.part_directory(run_id, shard), self.manifest_path.name, names)

    # -- the driver ----------------------------------------------------------------------

    def begin(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """A fresh staged run: earlier unpublished runs are deleted, this one's area made."""
        published = self._published_run() if self.keeps_parts else None
        if not self.keeps_parts:  # a publication killed before its manifest: undone first
            restore_previous(self.root, self.manifest_path, [d for _, d in self.targets])
        own_directory(self.root, "staging area")  # a link is removed, another's refused
        for child in self.root.iterdir():
            if child.name != published:
                remove_tree(child)
        directory = self.run_directory(run_id)
        directory.mkdir(parents=True, exist_ok=True)
        record = {
            "seamline_staged_run": RUN_FORMAT,
            "sink": self.sink,
            "run_id": run_id,
            "count": count,
            "model": _json_value(manifest.get("model")),
            "versions": _json_value(manifest.get("versions")),
            "environment": environment_of(manifest),
            "inputs": _json_value(manifest.get("inputs")),
        }
        write_json_atomically(directory / "run.json", record)

    def staged(self, manifest: Mapping[str, Any]) -> StagedRun | None:
        """The unpublished run here, if any, with the shards whose parts are finished."""
        if not os.path.lexists(self.root):
            return None
        refuse_a_link(self.root, "staging area")
        published = self._published_run()
        candidates = []
        for child in self.root.iterdir():
            if child.name == published or child.is_symlink() or not (child / "run.json").is_file():
                continue  # a run this sink staged is a folder of its own, never a link
            candidates.append(child)
        if not candidates:
            return None
        newest = max(candidates, key=lambda child: (child / "run.json").stat().st_mtime)
        where = str(newest / "run.json")
        try:
            record = _StagedRunRecord.model_validate_json(
                _read_small(newest / "run.json", MAX_RECORD_BYTES)
            )
            if record.run_id != newest.name or record.sink != self.sink:
                raise ValueError(f"it names run {record.run_id!r} of a {record.sink} sink")
        except (ValueError, OSError, NotRegularFile) as err:  # ValidationError is a ValueError
            why = first_problem(err) if isinstance(err, ValidationError) else str(err)
            raise ResumeRefused(
                f"cannot resume: {where!r} is not a staged run this {self.sink} sink wrote "
                f"({why}); delete it, or run again with {RESTART} to start over"
            ) from None
        made = {
            "model": record.model,
            "versions": record.versions,
            "environment": record.environment,
        }
        # The rule of a checkpoint's --resume; a staged run's record began to keep the
        # versions a day after outputs did.
        maker = made_by_another(made, manifest, unrecorded=STAGED_UNRECORDED)
        if maker is not None:
            raise ResumeRefused(
                f"cannot resume: the parts staged in {str(newest)!r} were made by "
                f"{maker.made}; resuming would {maker.harm}. "
                f"{resume_or_restart(maker, RESUME, RESTART)}"
            )
        changed = changed_inputs(record.inputs, _json_value(manifest.get("inputs")))
        if changed:  # a finished shard has no checkpoint of its own to refuse it
            raise ResumeRefused(
                f"cannot resume the run staged in {str(newest)!r}: {'; '.join(changed)} "
                "changed since it began, and resuming would splice two different outputs "
                "into one (documents written twice, others missing). Restore them, or run "
                f"again with {RESTART} to start over"
            )
        count = record.count
        finished = frozenset(
            index for index in range(count) if self.is_finished(record.run_id, Shard(index, count))
        )
        for index in sorted(finished):  # about to be published as they are: counted once
            self._check_counted(self.part_directory(record.run_id, Shard(index, count)))
        return StagedRun(record.run_id, count, finished)

    def _check_counted(self, directory: Path) -> None:
        """Refuse the resume if a finished part's file of lines does not hold the records
        its own manifest counted: a part is published as it is, never written again, so a
        record file cut or swapped since would be published short and the run end well."""
        manifest = read_published_manifest(directory / self.manifest_path.name) or {}
        outputs = manifest.get("outputs")
        lines = outputs.get("lines") if isinstance(outputs, dict) else None
        for name, counted in (lines or {}).items() if isinstance(lines, dict) else ():
            try:
                within(directory, str(name))  # a name leading out is read from nowhere
                found = _lines_in(directory / str(name))
            except OutsideFolder:
                found = None
            if found != counted:
                raise ResumeRefused(
                    f"cannot resume: the finished part {str(directory)!r} was changed since "
                    f"it was written ({str(name)[:80]!r} holds {found} records where its "
                    f"manifest counted {str(counted)[:20]}); delete that part's folder to have "
                    f"its shard run again, or run again with {RESTART} to start over"
                )

    def finished_parts(self, run_id: str, count: int) -> list[dict[str, Path]]:
        """Every part's files, in shard order; a ContractViolation if one is not finished."""
        shards = [Shard(index, count) for index in range(count)]
        missing = [shard.index for shard in shards if not self.is_finished(run_id, shard)]
        if missing:
            raise ContractViolation(
                f"{self.sink} sink: asked to publish run {run_id} while parts {missing} of "
                f"{count} are not finished; nothing was published"
            )
        return [self.part_files(run_id, shard) for shard in shards]

    def publish(self, run_id: str, count: int, manifest: Mapping[str, Any]) -> None:
        """Write the one manifest naming every part; then tidy what it replaced."""
        self.finished_parts(run_id, count)
        shards = [Shard(index, count) for index in range(count)]
        base = self.manifest_path.parent
        parts = [
            {
                "shard": [shard.index, shard.count],
                "files": {
                    purpose: _relative(path, base)
                    for purpose, path in self.part_files(run_id, shard).items()
                },
            }
            for shard in shards
        ]
        outputs = {"sink": self.sink, "run_id": run_id, "parts": parts}
        manifest = {**manifest, "attention_served": self._served(run_id, shards, manifest)}
        previous = self._published_run()
        target = AtomicFile(self.manifest_path, purpose="manifest")
        try:
            target.write(manifest_bytes({**manifest, "run_id": run_id, "outputs": outputs}))
        except BaseException:
            target.discard()
            raise
        with stops_deferred():  # the files it replaces go with the rename, not after a stop
            target.publish()  # the moment of publication: one rename
            # What the new manifest no longer names: a whole output published here before,
            # and the parts of the run it replaced.
            for _, destination in self.targets:
                destination.unlink(missing_ok=True)
        if previous is not None and previous != run_id:
            shutil.rmtree(self.run_directory(previous), ignore_errors=True)

    def _served(
        self, run_id: str, shards: Sequence[Shard], manifest: Mapping[str, Any]
    ) -> dict[str, str | list[str]]:
        """The run's ``attention_served`` (the driver's, over its shards' reports) with each
        part's own: a shard an earlier driver finished reports nothing this time, and its
        rows were left out of the published manifest's record of what computed them."""
        parts = [
            _served_in(
                read_published_manifest(self.part_directory(run_id, s) / self.manifest_path.name)
            )
            for s in shards
        ]
        served = union_served(_served_in(manifest), *parts)
        return {key: served[key] for key in sorted(served)[:MAX_SERVED_SHAPES]}

    def discard_all(self) -> None:
        """Delete every staged run here (a whole output was published over them)."""
        remove_tree(self.root)

    def _published_run(self) -> str | None:
        """The run id of the staged run the published manifest names, if it names one.

        A manifest of parts names it (``outputs.run_id`` beside ``outputs.parts``), and so
        does the manifest of a staged run copied into one output (parquet, lancedb). The
        manifest is read as untrusted (:func:`published_run_id`): this id decides which
        staging folder is kept, and which is deleted once a new run is published.
        """
        return published_run_id(self.manifest_path)


class _StagedRunRecord(BaseModel):
    """``run.json``: a staged run, as :meth:`PartStaging.begin` writes it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    seamline_staged_run: int = Field(ge=RUN_FORMAT, le=RUN_FORMAT)
    sink: str
    run_id: RunId
    count: PositiveInt = Field(le=1 << 20)
    model: Any = None
    versions: Any = None
    """What computed the parts (the manifest's ``versions``): a finished part has no
    checkpoint of its own, so a resume after an upgrade once published parts of two
    seamlines (or two JAX) as one output. Absent in a record from before 2026-12-06."""
    inputs: Any = None
    """The run's pipeline section hashes and input fingerprint (``changed_inputs``)."""
    environment: Any = None
    """The numerics variables the parts were computed under (``XLA_FLAGS``, ...): finished
    parts have no checkpoint to refuse a resume under others. Absent before 2026-12-06."""


def _served_in(manifest: Mapping[str, Any] | None) -> dict[str, str | list[str]]:
    """A manifest's ``attention_served``, read as untrusted (a part's file can be edited): {}
    when it has none or one not of the schema (:class:`~seamline.contracts.manifest.Manifest`)."""
    try:
        found = Manifest.model_validate(
            {"attention_served": (manifest or {}).get("attention_served")}
        )
    except ValidationError:
        return {}
    return dict(found.attention_served or {})


def part_is_finished(directory: Path, manifest_name: str, names: Sequence[str]) -> bool:
    """Whether ``directory`` holds a part its sink finished and nobody replaced.

    A part's sink publishes its manifest, then its other files, its primary last: a
    finished part has them all, each a file (a LanceDB table: a folder) of its own. The
    folder itself is a folder, never a link (a part is never followed: a resume does not
    adopt one planted there), and so is each of its files. A primary alone (an empty
    file put there) is not a finished part: its shard runs again.
    """
    if not _plain(directory, folder=True):
        return False
    return all(_plain(directory / name) for name in (manifest_name, *names)) and (
        read_published_manifest(directory / manifest_name) is not None
    )


def _plain(path: Path, *, folder: bool = False) -> bool:
    """Whether ``path`` is there, a regular file or a folder (``folder``: a folder), not a link."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or (not folder and stat.S_ISREG(mode))


def _lines_in(path: Path) -> int | None:
    """The lines of the regular file at ``path`` (never through a link); None if unreadable."""
    try:
        return count_lines(path)
    except (OSError, NotRegularFile):
        return None


def _read_small(path: Path, limit: int) -> bytes:
    """A small regular file this module wrote (``read_regular``, bounded); ValueError if larger."""
    data = read_regular(path, limit, follow=False)
    if len(data) > limit:
        raise ValueError(f"larger than {limit:,} bytes")
    return data


def read_published_manifest(manifest_path: Path) -> dict[str, Any] | None:
    """The published manifest at ``manifest_path`` as JSON, read as untrusted input.

    None when there is none, or it is not a regular file (never followed through a
    link, never a FIFO waited on), larger than :data:`MAX_RECORD_BYTES`, or not a JSON
    object (arrays nested thousands deep, which ``json`` answers with ``RecursionError``,
    included). What the caller takes from it, it checks.
    """
    try:
        manifest = json.loads(_read_small(manifest_path, MAX_RECORD_BYTES))
    except (OSError, ValueError, RecursionError, NotRegularFile):
        return None
    return manifest if isinstance(manifest, dict) else None


def published_run_id(manifest_path: Path) -> str | None:
    """The staged run a published manifest names (``outputs.run_id``), if it is one a run has.

    None when there is no manifest, or it is unreadable, or it names no run id or one
    that is not a plain name (:data:`RUN_ID`): a manifest can be edited by anyone who can
    write the folder, and this id is joined to a path.
    """
    manifest = read_published_manifest(manifest_path) or {}
    outputs = manifest.get("outputs")
    run_id = outputs.get("run_id") if isinstance(outputs, dict) else None
    return run_id if isinstance(run_id, str) and re.fullmatch(RUN_ID, run_id) else None


def previous_folder(root: Path, run_id: str) -> Path:
    """Where the publication of staged run ``run_id`` into one output keeps the files it
    replaces until its manifest is out (not a run id: a leading dot, so neither a resume's
    search for a staged run nor a fresh run's ``begin`` takes it for one)."""
    return root / f".publishing-{run_id}"


def restore_previous(
    root: Path, manifest_path: Path, destinations: Sequence[Path], keep: Sequence[Path] = ()
) -> None:
    """Put back the files that a publication killed before its manifest went out replaced.

    The previous output is then whole again (its manifest was never replaced). Only for a
    publication whose run the published manifest does not name: once it does, the run is
    published, and what it replaced is of no more use (deleted, not put back). The
    temporaries such a publication had not renamed yet are deleted too (all but ``keep``,
    the caller's own): nothing else deleted them, a whole output's size each, for ever.
    """
    sweep_temporaries([*destinations, manifest_path], keep)
    if not root.is_dir() or root.is_symlink():
        return
    published = published_run_id(manifest_path)
    for folder in root.glob(".publishing-*"):
        ours = folder.is_dir() and not folder.is_symlink()
        if ours and folder.name.removeprefix(".publishing-") != published:
            for destination in destinations:
                backup = folder / destination.name
                if backup.is_file() and not backup.is_symlink():
                    with contextlib.suppress(OSError):
                        os.replace(backup, destination)
        remove_tree(folder)


def sweep_temporaries(destinations: Sequence[Path], keep: Sequence[Path] = ()) -> None:
    """Delete the temporaries (``.<name>.<random>.tmp``, an :class:`AtomicFile`'s) that a
    killed publication left beside each of ``destinations``, except those in ``keep``.

    Only one run writes a destination at a time (its lock), so none belongs to a live run;
    a whole run's partial files (``.<name>.partial.<random>.tmp``) do not match.
    """
    kept = {path.name for path in keep}
    names: dict[Path, list[str]] = {}  # each folder listed once, for all its destinations
    for destination in destinations:
        names.setdefault(destination.parent, []).append(re.escape(f".{destination.name}."))
    for folder, prefixes in names.items():
        pattern = re.compile(f"(?:{'|'.join(prefixes)})" + r"[a-z0-9_]{8}\.tmp")
        with contextlib.suppress(OSError):
            for stale in folder.iterdir():
                if pattern.fullmatch(stale.name) and stale.name not in kept:
                    stale.unlink(missing_ok=True)  # a link is removed, not followed


def remove_tree(path: Path) -> None:
    """Delete the folder at ``path`` with what it holds; a link there is removed, not followed."""
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


class PartLock:
    """An exclusive ``flock`` on a part, held while one process writes it (see :mod:`._lock`).

    The kernel releases it when the holder dies, so a part left by a crashed or killed
    worker is free again at once, while a worker that is still alive (one of a driver
    killed a moment ago) keeps its replacement waiting instead of writing beside it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    def acquire(self, timeout: float = LOCK_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not self._lock.try_acquire():
            if time.monotonic() > deadline:
                raise UserError(
                    f"another process is still writing the part in {str(self.path.parent)!r} "
                    f"after {timeout:.0f}s (pid {self._lock.holder()}); stop it, then run "
                    f"again with {RESUME}"
                ) from None
            time.sleep(0.1)

    def release(self) -> None:
        self._lock.release()
