"""Write a file under a temporary name, then publish it whole or not at all.

A reader must never see half an output, and a failed run must leave no output
behind. So each file is written to a hidden temporary file in the *same*
directory as its destination (``os.replace`` is atomic only within one file
system), flushed and fsynced so that the data is on disk before the name points at
it, and renamed over the destination on success; on failure it is deleted.

Every temporary or partial file is *created* with an unpredictable name, exclusively
and without following links (``tempfile.mkstemp``: ``O_CREAT | O_EXCL | O_NOFOLLOW``,
mode 0600), so a symlink or file someone planted at a name a sink would use is never
written through: the planted link's target is never touched, and the published
output (a rename of our own file) is never a link. A resumable sink records the
names of its partial files in its checkpoint (see :mod:`._checkpoint`), so that a
later process can find them and continue; it reopens them with ``O_NOFOLLOW`` and
accepts only regular files.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from seamline.contracts.errors import RESTART, ResumeRefused, UserError
from seamline.contracts.ownership import describe_user, my_uid, not_yours_alone
from seamline.contracts.sink_kit._deferred import stops_deferred
from seamline.contracts.untrusted import (
    LINE_BREAKS_ESCAPED,
    TooManyEntries,
    kind_of,
    planted_entry,
)

if TYPE_CHECKING:
    from collections.abc import Sequence


class AtomicFile:
    """A binary file that appears under ``destination`` only when :meth:`publish` is called.

    Creates the destination's parent directories. The temporary name starts with a
    dot and ends in ``.tmp`` so that globs for the final outputs do not match it.
    """

    def __init__(
        self,
        destination: Path,
        *,
        purpose: str = "output",
        temporary: Path | None = None,
        resume_at: int | None = None,
        prefix: str | None = None,
        lines: bool = False,
        checkpoint: str = "its checkpoint",
    ) -> None:
        """Create a new temporary file, or reopen the existing ``temporary`` one.

        A new file gets a fresh unpredictable name starting with ``prefix`` (default
        ``.<destination name>.``). ``temporary`` (a resumable sink's partial file, as
        its checkpoint recorded it) must exist and be a regular file, not a link; it is
        cut back to its first ``resume_at`` bytes and written on from there. For a file
        of ``lines`` (one record a line, each ended by a newline) the cut must fall at 0
        or just after a newline, and :attr:`lines` counts the records before it; both
        are checked before the file is cut, and a cut inside a record is refused
        (``ResumeRefused``, naming ``checkpoint``) rather than published glued to the
        next record.
        """
        self.destination = destination
        self.purpose = purpose
        if destination.is_dir() and not destination.is_symlink():
            raise UserError(
                f"cannot write the {purpose} to {str(destination)!r}: it is a directory; "
                "give a file path instead"
            )
        destination.parent.mkdir(parents=True, exist_ok=True)
        if temporary is None:
            fd, name = tempfile.mkstemp(
                prefix=prefix or f".{destination.name}.", suffix=".tmp", dir=destination.parent
            )
            self.temporary = Path(name)
        else:
            self.temporary = temporary
            fd = _reopen_regular(temporary, purpose)
        self.file: IO[bytes] = os.fdopen(fd, "r+b")
        self._done = False
        self.lines: int | None = None
        """A recovered file of ``lines``: how many records it holds before the cut."""
        if resume_at is not None:
            try:
                size = os.fstat(fd).st_size
                if size < resume_at:
                    raise ResumeRefused(
                        f"cannot resume: the partial {purpose} file {str(self.temporary)!r} "
                        f"holds {size} bytes but {checkpoint} recorded {resume_at}; it was "
                        f"changed after the checkpoint. Run again with {RESTART} to start over"
                    )
                if lines:
                    self.lines = _lines_before(fd, resume_at, purpose, self.temporary, checkpoint)
            except BaseException:
                self.file.close()
                raise
            self.file.truncate(resume_at)
            self.file.seek(resume_at)

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def length(self) -> int:
        """Bytes written so far (the position data is appended at)."""
        return self.file.tell()

    def sync(self) -> None:
        """Make everything written so far durable (flush Python's buffer, then fsync)."""
        self.file.flush()
        os.fsync(self.file.fileno())

    def write_json_line(self, obj: Any) -> None:
        """Append one compact JSON object and a newline (JSON Lines).

        UTF-8 as written, except the three characters that Python's ``str.splitlines``
        (and other line readers) take for a line break although JSON does not escape
        them: a text holding one would otherwise read back as two broken lines.
        """
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_to_json)
        self.file.write(line.translate(LINE_BREAKS_ESCAPED).encode("utf-8") + b"\n")

    def publish(self, *, keep: bool = False) -> None:
        """Make the data durable, then atomically replace ``destination`` with it.

        If that fails, the temporary file is deleted, or (``keep``: a resumable sink's
        partial file, which its checkpoint names) kept for a resume: deleting it threw
        away every commit while the error said they were kept. The error names the
        destination, where the rename failed, not the hidden temporary file.
        """
        if self._done:
            return
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            # mkstemp makes the file private (0600): it gets the mode of the file it replaces
            # (yours), or a new file's (0666 less the umask), as `sed -i` does.
            os.chmod(self.temporary, published_mode(self.destination))
            try:
                os.replace(self.temporary, self.destination)
            except OSError as err:
                raise OSError(err.errno, err.strerror, str(self.destination)) from err
        except BaseException:
            self.keep() if keep else self.discard()
            raise
        self._done = True
        fsync_directory(self.destination.parent)

    def take_back(self) -> None:
        """Undo :meth:`publish`: the published file renamed back to its temporary name.

        For a group whose later file failed to publish: the committed partial file is
        again where its checkpoint names it, private, for a resume (best effort)."""
        with contextlib.suppress(OSError):
            os.replace(self.destination, self.temporary)
            os.chmod(self.temporary, 0o600)

    def discard(self) -> None:
        """Delete the temporary file; ``destination`` is left untouched."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            self.file.close()
        self.temporary.unlink(missing_ok=True)

    def keep(self) -> None:
        """Close the temporary file but leave it on disk (a resumable sink's committed state)."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            self.file.close()


_SCAN_BYTES = 1 << 20


def _lines_before(fd: int, cut: int, purpose: str, path: Path, checkpoint: str) -> int:
    """The records (newlines) in the first ``cut`` bytes, which must end with one.

    Read in bounded chunks, never the whole file at once; a cut that splits a record is
    refused: publishing from it would glue half a record to the next.
    """
    if cut == 0:
        return 0
    if os.pread(fd, 1, cut - 1) != b"\n":
        raise ResumeRefused(
            f"cannot resume: {checkpoint} cuts the partial {purpose} file {str(path)!r} at "
            f"byte {cut:,}, inside a record (a record of this file ends with a newline); "
            f"the checkpoint was changed after it was written. Run again with {RESTART} to "
            "start over"
        )
    count = offset = 0
    while offset < cut:
        chunk = os.pread(fd, min(_SCAN_BYTES, cut - offset), offset)
        if not chunk:  # the file shrank under us
            break
        count += chunk.count(b"\n")
        offset += len(chunk)
    return count


def _reopen_regular(path: Path, purpose: str) -> int:
    """Open an existing partial file for writing, never through a link, never creating it.

    Non-blocking, so that a FIFO planted at the name is refused at once, not waited on.
    One that is not the user's alone (another user's, or one others can write: this sink
    makes it 0600) is refused: its content is not what the checkpoint counted.
    """
    flags = os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ResumeRefused(
            f"cannot resume: the partial {purpose} file {str(path)!r} named by the checkpoint "
            f"is gone; run again with {RESTART} to start over"
        ) from None
    except OSError as err:
        if path.is_symlink():
            raise ResumeRefused(
                f"cannot resume: the partial {purpose} file {str(path)!r} is a symbolic link, "
                "not the file this sink wrote; it was not followed. Remove it and run again "
                f"with {RESTART}"
            ) from None
        if path.exists():  # a folder, a socket
            raise _not_regular(path, purpose, os.stat(path).st_mode) from err
        raise err
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise _not_regular(path, purpose, found.st_mode)
    if found.st_nlink > 1:  # a file this sink made has one name: resuming would cut another
        os.close(fd)
        raise ResumeRefused(
            f"cannot resume: the partial {purpose} file {str(path)!r} has {found.st_nlink} "
            "names (hard links), and the file this sink wrote had one: another file was put "
            "in its place, which resuming would cut and publish. It was not written to. "
            f"Remove it and run again with {RESTART}"
        )
    problem = not_yours_alone(path, found)
    if problem is not None:  # ours is made 0600: another's, or one others can write, is not
        os.close(fd)
        raise ResumeRefused(
            f"cannot resume: the partial {purpose} file {str(path)!r} is not the file this "
            f"sink wrote: {problem[0]}, and resuming would publish what is in it. It was not "
            f"written to. Run again with {RESTART} to start over"
        )
    os.set_blocking(fd, True)
    return fd


def _not_regular(path: Path, purpose: str, mode: int) -> ResumeRefused:
    return ResumeRefused(
        f"cannot resume: the partial {purpose} file {str(path)!r} is {kind_of(mode)}, not the "
        f"file this sink wrote; run again with {RESTART} to start over"
    )


def own_directory(path: Path, what: str = "staging folder") -> None:
    """Make ``path`` a directory of this process's making, never a planted link's target.

    A symbolic link (or a file) at ``path`` is removed, not followed, and the directory
    is created private (0700). An existing real directory is kept (a resumed run's) only
    if it is the user's alone (:func:`refuse_unless_yours`): one another user made in
    advance, in a shared folder, had every part written into it, for them to read and
    swap before the run published them.
    """
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if path.is_symlink() or not path.is_dir():  # planted again since the check
            raise UserError(
                f"cannot write to {str(path)!r}: something keeps replacing it with a link or "
                "a file; check who else writes in that folder"
            ) from None
        refuse_unless_yours(path, what)


def refuse_unless_yours(
    path: Path, what: str, *, only_owner: bool = False, resuming: bool = False
) -> None:
    """Refuse the folder at ``path`` (a sink's ``what``) unless it is the user's alone.

    Owned by the user and writable by no one else (:mod:`seamline.contracts.ownership`,
    the rule the compile cache is held to): whoever else can write it can read and swap
    what a run stages there. Nothing at ``path`` (or a link, which the caller handles)
    passes. ``only_owner``: refuse only another user's folder (a fresh run deletes one of
    the user's own and makes it again, private). ``resuming`` raises ``ResumeRefused``.
    """
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    problem = not_yours_alone(path, found) if stat.S_ISDIR(found.st_mode) else None
    if problem is None or (only_owner and problem[1] != "owner"):
        return
    why, kind = problem
    if kind == "owner":
        why = f"it belongs to another user, {describe_user(found.st_uid)}"
        fix = (
            "It is not yours to empty or remove: write the output to a folder of your own, "
            "or have its owner remove it, then run again"
        )
    elif resuming:
        fix = f"Run again with {RESTART}, which deletes it and starts over in a private one"
    else:
        fix = f"Remove it (rm -r {str(path)!r}), then run again"
    error = ResumeRefused if resuming else UserError
    raise error(
        f"cannot {'resume from' if resuming else 'use'} the {what} {str(path)!r}: {why}, so "
        f"what a run stages there could be read or changed by others; nothing was written "
        f"to it. {fix}"
    )


def refuse_a_link(path: Path, what: str) -> None:
    """On a resume: the folder holding the committed state must be the one this sink made.

    A symbolic link planted at its name would have the resume read, change or delete
    whatever it points at (the parquet sink deletes the parts written after its last
    commit; the lancedb sink restores a table version): it is refused, not followed,
    as is anything at the name that is not a folder, and a folder that is not the user's
    alone (:func:`refuse_unless_yours`: its parts could have been swapped).
    """
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        found = "a symbolic link" if path.is_symlink() else "not a folder"
        raise ResumeRefused(
            f"cannot resume: the {what} {str(path)!r} is {found}, not the folder this sink "
            f"made; it was not followed. Remove it, then run again with {RESTART}"
        )
    refuse_unless_yours(path, what, resuming=True)


def refuse_anything_planted(path: Path, what: str) -> None:
    """On a resume: the folder this sink made, holding nothing it did not make either.

    For a folder a library writes whole (a LanceDB staging database): a link inside it
    would lead the library's writes elsewhere. A staging area whose entries the kit
    reads itself (``._parts``) skips a linked entry instead.
    """
    refuse_a_link(path, what)
    planted = planted_inside(path) if path.is_dir() else None
    if planted is not None:
        raise ResumeRefused(
            f"cannot resume: the {what} {str(path)!r} holds {planted}, which this sink did "
            "not make, and a library writing the folder would follow it. Remove the folder, "
            f"then run again with {RESTART}"
        )


PLANTED_SCAN_LIMIT = 1_000_000
"""Entries of a folder looked at for something planted: more is itself refused."""


def planted_inside(folder: Path) -> str | None:
    """What in ``folder`` (at any depth) is neither a regular file nor a folder, or None.

    A library given a folder (LanceDB a table's) writes wherever its names lead: a
    symbolic link planted inside had new data files written to the folder it named,
    outside the output. Only the folder itself was checked before; now all it holds is.
    """
    try:
        found = planted_entry(folder, PLANTED_SCAN_LIMIT)
    except TooManyEntries as err:
        return str(err)
    return None if found is None else f"{found[0]!r}, {kind_of(found[1])}"


def published_mode(destination: Path) -> int:
    """The permissions a file published at ``destination`` gets.

    Those of the regular file of the user's that it replaces, so that a re-run keeps an
    output the user restricted (``chmod 600``) restricted, as ``sed -i`` and ``sponge``
    do; else a new file's, ``0666`` less the umask. Only the permission bits are kept
    (never a set-uid bit), and another user's file, or a link, passes on nothing.
    """
    try:
        found = os.lstat(destination)
    except OSError:
        found = None
    uid = my_uid()
    if found is not None and stat.S_ISREG(found.st_mode) and uid in (None, found.st_uid):
        return stat.S_IMODE(found.st_mode) & 0o777
    return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process umask: from ``/proc/self/status`` where the kernel says it (Linux 4.7
    and later). Elsewhere reading it means setting it, then setting it straight back,
    which another thread creating a file in between would get wrong, so that is the
    fallback only."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def fsync_directory(directory: Path) -> None:
    """Persist a rename: the directory entry, not only the file, must reach the disk."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. platforms that cannot open directories
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _to_json(value: Any) -> Any:
    """Encode metadata values JSON does not know: numpy values, paths, sets; else ``str``."""
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return tolist()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return str(value)


class AtomicGroup:
    """The files of one output, published one by one in the order they were opened.

    Several files cannot be renamed into place as one atomic step, so the order is
    the guarantee instead: a sink opens its primary file last, and a reader who sees
    the primary file can rely on its companions (index, errors) being complete.
    """

    def __init__(self) -> None:
        self._files: list[AtomicFile] = []

    def open(self, destination: Path, *, purpose: str) -> AtomicFile:
        try:
            atomic = AtomicFile(destination, purpose=purpose)
        except BaseException:
            self.discard()
            raise
        self._files.append(atomic)
        return atomic

    def add(self, atomic: AtomicFile) -> None:
        """Publish ``atomic``, opened elsewhere, after the files already in the group."""
        self._files.append(atomic)

    def publish(self) -> None:
        """Publish every file; if one fails, discard those not yet published and re-raise.

        A folder in the way of any of them is refused first (:func:`refuse_in_the_way`),
        before a file is renamed. A stop (Ctrl-C, SIGTERM, SIGHUP) waits for the last
        rename (:func:`stops_deferred`): one in between published some files and deleted
        the rest."""
        try:
            refuse_in_the_way(
                [(atomic.purpose, atomic.destination) for atomic in self._files],
                f"nothing was published: {MOVE_IT}, then run again",
            )
        except BaseException:
            self.discard()
            raise
        with stops_deferred():
            try:
                for atomic in self._files:
                    atomic.publish()
            except BaseException:
                self.discard()
                raise

    def discard(self) -> None:
        for atomic in self._files:
            atomic.discard()


MOVE_IT = "move or remove that folder (it is not deleted for you)"
"""What to do about a folder in the way of a file to publish."""


def refuse_in_the_way(files: Sequence[tuple[str, Path]], outcome: str) -> None:
    """Refuse to publish ``files`` if a folder now stands at one's destination.

    The destination was checked when the run began; a folder made there since (by
    hand, by another program) failed the rename of that one file after the files
    before it were renamed, half publishing the output. Checked for every file before
    the first rename: ``UserError`` (exit code 2) naming the destination and what to
    do, ``outcome`` saying what was kept and how to go on ("move or remove that folder,
    then run again").
    """
    for purpose, place in files:
        if place.is_dir() and not place.is_symlink():
            raise UserError(
                f"cannot publish the {purpose} to {str(place)!r}: a folder is in the "
                f"way there (made after the run began); {outcome}"
            )


def write_json_atomically(path: Path, obj: Any) -> None:
    """Replace ``path`` with ``obj`` as JSON, durably: a reader sees the old file or the new."""
    write_bytes_atomically(path, json.dumps(obj, sort_keys=True, default=str).encode("utf-8"))


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, durably: a reader sees the old file or the new.

    The bytes go to a temporary file of a new random name, created exclusively and never
    through a link (``mkstemp``), then renamed over ``path``. A fixed temporary name
    (``.name.tmp``) in a folder others can write is a name anyone can plant a link at,
    and the write went through it into the file it named.
    """
    hidden = path.name if path.name.startswith(".") else f".{path.name}"
    fd, name = tempfile.mkstemp(prefix=f"{hidden}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
