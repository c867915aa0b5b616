"""A compile cache JAX may read must be the user's alone: the directory and every entry.

An entry of JAX's persistent compilation cache is a compiled program, loaded and run as
it is found: whoever can write one chooses what a run computes. Checking the directory
alone let three ways through, each a run that exited 0 with vectors another user chose
(min cosine 0.40): an entry planted while the directory was open kept being trusted
after ``chmod go-w``; under ``umask 000`` JAX writes its entries ``-rw-rw-rw-``, which
another user overwrote in place; and a POSIX ACL granting another user write shows
only as group write with the owner's group. So, as ssh treats ``~/.ssh``: the directory
and each entry must be owned by this user and writable by no one else (by their group
only where it is their primary group, as with a user-private-group ``umask 002``, and
then with no ACL naming another user or group that may write). A scandir and an lstat
per entry: thousands of entries in milliseconds.

One other cache is trusted, for reading only: one root prepared (an image build's
``seamline run`` as root), where the directory and every entry are root's and writable by
no one else: no group or other write bit, no ACL granting write. A container platform
such as OpenShift runs the image as an arbitrary uid unknown at build time, so a
prepared cache can never be the runtime user's; root can replace any file anyway, and
ssh's ``StrictModes`` accepts root's files likewise. Its group write bit is not
excused as the user's own group is: an arbitrary uid runs with group 0, root's own.
The user cannot write it, so it is only read (:func:`prepared_by_root`).

JAX reads ``$JAX_COMPILATION_CACHE_DIR`` itself, on every path, not only where the CLI
switches the cache on: :func:`check_jax_compile_cache` runs before seamline first asks
JAX for its devices (:func:`seamline.core.devices.jax_devices`, which building a model,
running a pipeline, probing attention or reading the hardware does), so ``search``,
``explain``, ``tune``, ``profile``, the Python API and the rest refuse an unsafe one
too.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from seamline.contracts import UserError
from seamline.contracts.ownership import (
    ACL_XATTRS,
    describe_user,
    my_uid,
    others_write,
    owned_by_another,
)

CACHE_SETTING = "jax_compilation_cache_dir"  # what $JAX_COMPILATION_CACHE_DIR sets

_passed: set[str] = set()
"""Directories JAX was pointed at that passed the check in this process."""


@dataclass(frozen=True)
class NotPrivate:
    """Why others could write a cache's programs, and what kind of fix that takes."""

    why: str
    kind: str  # "owner": not the user's; "root": root's, yet not root's alone (a prepared
    # cache others could write); "open": others can write it; "entries", "loose"

    def fix(self, directory: Path, variable: str) -> str:
        """The fix, in words, ``variable`` being what named the directory (``$NAME``):
        chmod cannot make another user's directory yours, and it leaves what others
        already put in it (the entries must go too)."""
        if self.kind == "owner":
            return f"use a directory of your own: point {variable} at one"
        if self.kind == "root":  # the user's fix, and the image builder's
            return (
                f"use a directory of your own: point {variable} at one; or, where it was "
                f"prepared as root (an image build), make it root's alone, as root: delete "
                f"every entry root does not own, then chmod -R go=rX {directory}"
            )
        if self.kind == "open":
            return (
                f"make it yours alone (chmod go-w {directory}; setfacl -b for an ACL) and "
                "empty it, as others could have put or renamed entries in it, or point "
                f"{variable} at a new directory of your own"
            )
        umask = (
            " (a umask such as 000 lets others write the entries JAX makes: use 022 or 077)"
            if self.kind == "loose"
            else ""
        )
        return (
            f"empty it (delete everything in {directory}: entries others could write cannot "
            f"be trusted) and keep it yours alone{umask}"
        )


def not_private(directory: Path) -> NotPrivate | None:
    """Why someone other than this user could write ``directory``'s programs, or None.

    Raises ``OSError`` when the directory cannot be read.
    """
    problem = folder_not_private(directory)
    if problem is not None:
        return _unprepared(directory, problem)
    bad = _bad_entries(directory, MAX_DEPTH)
    return None if bad is None else NotPrivate(f"its entry {bad[0]} {bad[1]}", bad[2])


def folder_not_private(directory: Path) -> NotPrivate | None:
    """Why someone other than this user could write in ``directory`` itself (its owner, its
    mode, its ACLs), its entries aside; or None. Raises ``OSError`` when it cannot be read.

    The conformance record store asks this too: a record decides what a pipeline trusts.
    """
    found = os.stat(directory)
    owner = owned_by_another(found)
    if owner is not None:
        return NotPrivate(owner, "owner")
    who = others_write(directory, found, ACL_XATTRS)
    return None if who is None else NotPrivate(f"{who[0]} can write it ({who[1]})", "open")


def _unprepared(directory: Path, problem: NotPrivate) -> NotPrivate:
    """``problem`` with, for a compile cache root owns, why it is no prepared cache either
    (:func:`prepared_by_root`) and the image builder's fix beside the user's: refused
    for a group-writable entry, it offered only "use a directory of your own", when
    the fix was root's at the image build. (The tuning cache and the records never
    trust root's folders: their refusals stay as :func:`folder_not_private` says.)"""
    if problem.kind != "owner" or os.stat(directory).st_uid != ROOT:
        return problem
    trouble = root_trouble(directory)
    if trouble is None:  # root's alone: a prepared cache (or the user is root)
        return problem
    return NotPrivate(
        f"{problem.why}, and a cache root owns is read only where no one else can write it "
        f"or its entries, but {trouble}",
        "root",
    )


def prepared_by_root(directory: Path) -> bool:
    """Whether ``directory`` is a cache root prepared for others to read: it and every
    entry (four levels deep) root's, a regular file or a folder, and writable by no one
    but root. False for root itself (its own caches are checked as anyone's), and when
    anything cannot be read."""
    return my_uid() not in (None, ROOT) and root_trouble(directory) is None


ROOT = 0


def root_trouble(directory: Path) -> str | None:
    """Why ``directory`` is not root's alone (see :func:`prepared_by_root`), or None."""
    try:
        found = os.stat(directory)
        if found.st_uid != ROOT:
            return "it is not root's"
        why = _root_only(directory, found, ACL_XATTRS)
        return f"it {why}" if why is not None else _root_entries(directory, MAX_DEPTH)
    except OSError as err:
        return f"it cannot be read ({err.strerror})"


def _root_only(path: Path, found: os.stat_result, acls: tuple[str, ...]) -> str | None:
    """Why ``path`` is not root's, with no group or other write bit and no ACL letting
    another write; None when it is. A group write bit is not excused as the user's own
    group's is: an arbitrary uid runs with group 0, root's."""
    mode = stat.S_IMODE(found.st_mode)
    if found.st_uid != ROOT:
        return f"is owned by {describe_user(found.st_uid)}"
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        writer = "every user" if mode & stat.S_IWOTH else "its group"
        return f"can be written by {writer} (mode {mode:o})"
    who = others_write(path, found, acls)  # the ACLs: a default one is what entries get
    return None if who is None else f"can be written by {who[0]} ({who[1]})"


def _root_entries(directory: Path, depth: int) -> str | None:
    """Why an entry under ``directory`` fails :func:`_root_only`, or None."""
    with os.scandir(directory) as entries:
        for entry in entries:
            path = Path(entry.path)
            found = entry.stat(follow_symlinks=False)
            folder = stat.S_ISDIR(found.st_mode)
            if not (folder or stat.S_ISREG(found.st_mode)):
                return f"its entry {entry.name} is not a regular file or a folder"
            why = _root_only(path, found, ACL_XATTRS if folder else ACL_XATTRS[:1])
            if why is not None:
                return f"its entry {entry.name} {why}"
            if folder and depth == 0:
                return f"its entry {entry.name} holds folders deeper than seamline checks"
            inner = _root_entries(path, depth - 1) if folder else None
            if inner is not None:
                return inner.replace("its entry ", f"its entry {entry.name}/", 1)
    return None


def entry_not_private(path: Path) -> NotPrivate | None:
    """Why someone other than this user could have written the entry ``path`` (a link or
    another special file, another user's file, one others can write), or None. Raises
    ``FileNotFoundError`` when there is none, ``OSError`` when it cannot be read.

    The tuning cache asks this of each entry before reading it: an entry decides which
    attention kernel runs, as the compile cache's entries decide what runs.
    """
    bad = _bad_entry(path, os.lstat(path))
    return None if bad is None else NotPrivate(f"it {bad[0]}", bad[1])


MAX_DEPTH = 4
"""How deep folders inside the cache are checked. JAX points XLA's GPU autotuning cache
at a folder inside it (``xla_gpu_per_fusion_autotune_cache_dir``): a folder of the
user's own is checked as the cache is, entry by entry, never refused for being one."""


def _bad_entries(directory: Path, depth: int) -> tuple[str, str, str] | None:
    """The first entry under ``directory`` that cannot be trusted: its path from the
    cache, why, and the kind of problem; None when every one can."""
    with os.scandir(directory) as entries:
        for entry in entries:
            path = Path(entry.path)
            found = entry.stat(follow_symlinks=False)
            bad = _bad_entry(path, found)
            if bad is not None:
                return entry.name, *bad
            if stat.S_ISDIR(found.st_mode):
                if depth == 0:
                    return entry.name, "holds folders deeper than seamline checks", "entries"
                inner = _bad_entries(path, depth - 1)
                if inner is not None:
                    return f"{entry.name}/{inner[0]}", inner[1], inner[2]
    return None


def _bad_entry(path: Path, found: os.stat_result) -> tuple[str, str] | None:
    """Why an entry cannot be trusted (a link, which JAX would follow, or another special
    file; not the user's; writable by others), and the kind of problem, or None."""
    folder = stat.S_ISDIR(found.st_mode)
    if not stat.S_ISREG(found.st_mode) and not folder:
        return "is not a regular file or a folder", "entries"
    owner = owned_by_another(found)
    if owner is not None:
        return owner.removeprefix("it "), "entries"
    who = others_write(path, found, ACL_XATTRS if folder else ACL_XATTRS[:1])
    return None if who is None else (f"can be written by {who[0]} ({who[1]})", "loose")


def check_jax_compile_cache() -> None:
    """Refuse JAX's persistent cache directory, wherever it was named, if others can write it.

    Raises :class:`~seamline.contracts.UserError` naming the variable (or setting) that
    named it and the fix. A directory that does not exist yet is JAX's to make.
    """
    import jax

    value = getattr(jax.config, CACHE_SETTING)
    if not value or value in _passed:
        return
    directory = Path(value)
    try:
        problem = not_private(directory)
    except FileNotFoundError:
        return
    except OSError as err:
        problem = NotPrivate(f"it cannot be read ({err.strerror})", "owner")
    if problem is None or prepared_by_root(directory):  # root's: read, never written
        _passed.add(value)
        return
    variable, unset = _named_by(directory)
    raise UserError(
        f"the compile cache directory {directory} (named by {variable}) is not private: "
        f"{problem.why}, and its entries are compiled programs that run as they are found; "
        f"{problem.fix(directory, variable)}, or {unset}"
    )


def _named_by(directory: Path) -> tuple[str, str]:
    """The variable that named ``directory``, and how to stop using it."""
    for variable in ("SEAMLINE_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR"):
        value = os.environ.get(variable)
        if value and Path(os.path.expanduser(value)) == directory:
            return f"${variable}", f"unset {variable}"
    return "jax_compilation_cache_dir", "set jax.config's jax_compilation_cache_dir to None"
