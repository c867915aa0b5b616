"""Exclusive ``flock`` locks beside an output: one writer per destination, one per part.

Two runs writing one destination at once would overwrite each other's partial files
and manifest. So a sink holds a lock on a hidden file beside its destination
(``out/.emb.jsonl.lock``) from ``start`` (or ``recover``) to ``close``, and a second
run refuses at once, naming the destination and the pid that holds it
(:class:`DestinationLock`). The lock covers every name the output is published
under, not only its ``path``: two outputs whose paths share a stem (``emb.jsonl``
and ``emb.npy``) share ``emb.manifest.json`` and ``emb.errors.jsonl``, and two runs
writing them at once wiped each other's partial errors file and replaced each
other's manifest, so the manifest and the errors file are locked too
(``out/.emb.manifest.json.lock``). The driver of a staged run holds the same lock
from before it opens the staging area until it has published the parts (sink
contract 1.6, ``hold_destination``). A part of a staged run is locked the same way,
but its replacement waits for a holder that is about to die (``._parts.PartLock``).

``flock`` is the kernel's: it is released when the holder's process ends, however
it ends, so a run killed with SIGKILL leaves no stale lock. The lock file is deleted
by the holder when it releases the lock (while still holding it), and a process that
locked a file that was deleted meanwhile tries again, so two processes never hold
locks on two different files of one name.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path
from typing import IO, TYPE_CHECKING

from seamline.contracts import ownership
from seamline.contracts.errors import RESUME, UserError
from seamline.contracts.untrusted import NotRegularFile, kind_of, read_regular

if TYPE_CHECKING:
    from collections.abc import Sequence

_PID_BYTES = 32
"""A pid is at most 20 digits: a lock file holding more is not one this sink wrote."""


def lock_path(destination: Path) -> Path:
    """``out/emb.jsonl`` -> ``out/.emb.jsonl.lock``: the lock of that destination."""
    return destination.with_name(f".{destination.name}.lock")


class FileLock:
    """A non-blocking exclusive ``flock`` on ``path``, which holds the holder's pid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None
        self._made: list[Path] = []
        """The folders :meth:`try_acquire` made for the lock file, deepest first: a run that
        fails before it writes anything takes them away again on release, rather than leave
        an empty ``out/new/`` behind (a folder that holds anything stays)."""

    @property
    def held(self) -> bool:
        return self._file is not None

    def try_acquire(self) -> bool:
        """Take the lock if no other process holds it; True if this process holds it now."""
        if self._file is not None:
            return True
        self._made = _make_folder(self.path.parent)
        while True:
            handle = self._open()
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                self._made = []  # the holder's lock file is in them: not ours to take away
                return False
            if self._still_named(handle):
                break
            handle.close()  # the holder deleted it as we opened it: lock the new one
        # Held from here: a pid that cannot be written (a full disk) lets it go again, its
        # file deleted, rather than leave the file, the flock and the handle behind.
        self._file = handle
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()).encode())
            handle.flush()
        except BaseException:
            self.release()
            raise
        return True

    def _open(self) -> IO[bytes]:
        """The lock file, opened never through a link planted at its name (O_NOFOLLOW).

        Opened non-blocking, and refused unless it is a regular file: a FIFO, a socket, a
        device or a folder at its name is not a lock this sink made, and no lock can be
        held on it (a FIFO's open may wait for a writer forever).
        """
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            descriptor = os.open(self.path, flags, 0o600)
        except OSError as err:
            if not self.path.is_symlink():
                if self.path.exists():  # a folder or a socket: not a file a lock can be on
                    raise self._not_a_lock_file(os.stat(self.path).st_mode) from err
                raise
            # A lock file of ours is never a link: one planted at its name is removed, not
            # followed (as a staging folder found to be a link is), and ours made instead.
            self.path.unlink()
            try:
                descriptor = os.open(self.path, flags | os.O_EXCL, 0o600)
            except OSError as err:
                raise UserError(
                    f"the lock file {str(self.path)!r} was a symbolic link and could not be "
                    "replaced; it was not followed. Remove it, then run again"
                ) from err
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            os.close(descriptor)
            raise self._not_a_lock_file(found.st_mode)
        if found.st_nlink > 1:
            # Another name of some other file (a hard link planted at the lock's name): the
            # lock's pid would be written over that file. Its name here is removed, the file
            # left as it was, and ours made in its place, as for a symbolic link.
            os.close(descriptor)
            self.path.unlink()
            return self._open()
        if ownership.owned_by_another(found) is not None:
            os.close(descriptor)
            raise UserError(
                f"the lock file {str(self.path)!r} belongs to another user, "
                f"{ownership.describe_user(found.st_uid)}: it is not one your runs made, and "
                "its owner could take or remove it while your run writes. Nothing was written. "
                "Have it removed (by its owner), or write the output to a folder of your own"
            )
        return os.fdopen(descriptor, "a+b")  # held until release()

    def _not_a_lock_file(self, mode: int) -> UserError:
        return UserError(
            f"the lock file {str(self.path)!r} is {kind_of(mode)}, not a file seamline made; "
            "no lock can be held on it, so nothing was written. Remove it, then run again"
        )

    def _still_named(self, handle: IO[bytes]) -> bool:
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(handle.fileno())
        return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)

    def holder(self) -> str:
        """The pid recorded by the process holding the lock, or ``?``.

        Read as untrusted (whoever can open the file can hold its ``flock``, and write
        anything in it): its first bytes only, never through a link nor waiting on a FIFO,
        shown only if they are a pid.
        """
        try:
            text = read_regular(self.path, _PID_BYTES, follow=False)
        except (OSError, NotRegularFile):
            return "?"
        pid = text.decode("ascii", errors="replace").strip()
        return pid if len(text) <= _PID_BYTES and pid.isascii() and pid.isdigit() else "?"

    def release(self) -> None:
        """Delete the lock file (still holding it), then let go."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
        with contextlib.suppress(OSError):  # closed even so (a pid not flushed: a full disk)
            self._file.close()
        self._file = None
        for folder in self._made:
            try:
                folder.rmdir()  # only while empty: the output, or anyone's files, keep it
            except OSError:
                break
        self._made = []


def _make_folder(folder: Path) -> list[Path]:
    """Make ``folder`` and its missing parents; return those made, deepest first."""
    missing = [parent for parent in (folder, *folder.parents) if not parent.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing


class DestinationLock:
    """One run at a time per output: a second one refuses, naming the holder.

    ``names`` are the output's published files as ``(what, path)``, the destination
    first (``("the manifest", out/emb.manifest.json)``): each is locked, so a run
    writing another output that shares one of them is refused too.
    """

    def __init__(self, sink: str, names: Sequence[tuple[str, Path]]) -> None:
        self.sink = sink
        self.names = list(names)
        self.destination = self.names[0][1]
        self.locks = [FileLock(lock_path(path)) for _, path in self.names]
        self.refused = False
        """Whether :meth:`acquire` found another run there: then this sink must touch nothing,
        not even to clean up on ``close``."""

    def acquire(self) -> None:
        """Hold every name's lock, or none: refuse at the first another run holds."""
        for (what, path), lock in zip(self.names, self.locks, strict=True):
            if lock.try_acquire():
                continue
            self.release()
            self.refused = True
            raise UserError(self._refusal(what, path, lock))
        self.refused = False

    def _refusal(self, what: str, path: Path, lock: FileLock) -> str:
        holder = lock.holder()
        held = (
            f"another run in this process (pid {holder}: another thread, or a run not closed)"
            if holder == str(os.getpid())  # an operator looked for another process
            else f"another run (pid {holder})"
        )
        if path == self.destination:
            return (
                f"{held} is writing to {str(path)!r} (the {self.sink} sink's lock "
                f"{str(lock.path)!r} is held); "
                f"wait for it to finish, or stop it and run again with {RESUME} to continue "
                "from its last commit. Its output was not touched"
            )
        return (
            f"{held} is writing {str(path)!r}, which this {self.sink} sink publishes too "
            f"({what} of {str(self.destination)!r}; the lock {str(lock.path)!r} is held): "
            "two outputs must not share a file. Wait for that run to finish, or give this "
            "output a path whose stem no other output uses (and its own errors_path, if "
            "set). Nothing was written"
        )

    def release(self) -> None:
        for lock in reversed(self.locks):
            lock.release()
