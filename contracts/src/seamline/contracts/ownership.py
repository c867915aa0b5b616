"""Whether a file or folder is this user's alone: owned by them, writable by no one else.

What another user owns, or can write, holds what they chose: a compiled program in a
compile cache, a part in a sink's staging folder, a span in a traces file. One rule,
as ssh applies it to ``~/.ssh``, for every place seamline trusts what it finds or
writes what only the user may read: the thing is owned by the user running seamline
(the *effective* uid, which a file this process creates gets) and writable by no other
user — by its group only where that is the user's own primary group (a user-private
group under ``umask 002``), and then with no POSIX ACL letting a named user or group
write. The compile cache (:mod:`seamline.core.private_cache`), the tuning cache, a
sink's staging folder and working files (:mod:`seamline.contracts.sink_kit`) and the
traces file all ask it here, so that the rule is the same everywhere.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from pathlib import Path

ACL_XATTRS = ("system.posix_acl_access", "system.posix_acl_default")
"""A file's access ACL, and a folder's default ACL (what entries made in it get)."""
_NAMED_TAGS = (0x02, 0x08)  # ACL_USER, ACL_GROUP: a user or group other than the owner's
_ACL_WRITE = 0x02
_NO_ACL = (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)


def my_uid() -> int | None:
    """The user a file must belong to: this process's effective uid (None: no uids here).

    The one place the checks learn who "we" are (a test stands another user in here)."""
    geteuid = getattr(os, "geteuid", None)
    return None if geteuid is None else int(geteuid())


def _my_gid() -> int | None:
    getegid = getattr(os, "getegid", None)
    return None if getegid is None else int(getegid())


def owned_by_another(found: os.stat_result) -> str | None:
    """Whose ``found`` is when it is not this user's (``it is owned by user root (uid 0)``,
    ``it is owned by another user (uid 4002)`` for a uid without a name), else None.

    Named as :func:`describe_user` names it, as the staging, lock and traces refusals do:
    a cache's said "another user (uid 0)" where theirs said "user root (uid 0)".
    """
    uid = my_uid()
    if uid is None or found.st_uid == uid:
        return None
    name = _user_name(found.st_uid)
    if name is None:
        return f"it is owned by another user (uid {found.st_uid})"
    return f"it is owned by user {name} (uid {found.st_uid})"


def others_write(
    path: Path, found: os.stat_result, acls: tuple[str, ...] = ACL_XATTRS
) -> tuple[str, str] | None:
    """Who other than the owner can write ``path`` (``found``: its stat), and what says so.

    With an access ACL, the group bits are its mask, the most any named user or group
    gets: an ACL grants another user write only where they show group write. A default
    ACL (a directory's) is what new entries get, whatever the mode; pass ``acls`` without
    it for a file.
    """
    mode = stat.S_IMODE(found.st_mode)
    if mode & stat.S_IWOTH:
        return "every user", f"mode {mode:o}"
    gid = _my_gid()
    if mode & stat.S_IWGRP and gid is not None and found.st_gid != gid:
        return f"group {found.st_gid}", f"mode {mode:o}"
    for name in acls:
        if name == ACL_XATTRS[0] and not mode & stat.S_IWGRP:
            continue
        named = _acl_grants_write(path, name)
        if named is not None:
            return named, f"its ACL {name}"
    return None


def not_yours_alone(path: Path, found: os.stat_result) -> tuple[str, str] | None:
    """Why ``path`` (``found``: its ``lstat`` or ``fstat``) is not this user's alone, and
    the kind of problem: ``"owner"`` (another user's: only they can fix it) or ``"open"``
    (the user's, but others can write it); None when it is the user's alone."""
    owner = owned_by_another(found)
    if owner is not None:
        return owner, "owner"
    folder = stat.S_ISDIR(found.st_mode)
    who = others_write(path, found, ACL_XATTRS if folder else ACL_XATTRS[:1])
    return None if who is None else (f"{who[0]} can write it ({who[1]})", "open")


def describe_user(uid: int) -> str:
    """``uid`` in words: ``user bob (uid 4002)`` where the system knows its name, else
    ``uid 4002``."""
    name = _user_name(uid)
    return f"uid {uid}" if name is None else f"user {name} (uid {uid})"


def _user_name(uid: int) -> str | None:
    """The system's name for ``uid``, or None (none known, or no user database here)."""
    try:
        import pwd
    except ImportError:  # no such database on this platform
        return None
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _acl_grants_write(path: Path, name: str) -> str | None:
    """Which named user or group the POSIX ACL ``name`` lets write ``path``, or None.

    The kernel's binary form: a version (2), then (tag, permissions, id) entries. One
    that cannot be read or parsed is counted as granting write: it cannot be vouched for.
    """
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None
    try:
        data = getxattr(path, name)  # the directory a link names; entries are plain files
    except OSError as err:
        return None if err.errno in _NO_ACL else f"someone (unreadable: {err.strerror})"
    if len(data) < 4 or (len(data) - 4) % 8 or struct.unpack_from("<I", data)[0] != 2:
        return "someone (an ACL seamline cannot read)"
    for tag, permissions, ident in struct.iter_unpack("<HHI", data[4:]):
        if tag in _NAMED_TAGS and permissions & _ACL_WRITE:
            return f"{'user' if tag == 0x02 else 'group'} {ident}"
    return None
