"""The folders a local Ray writes as it starts, and what to tell a user who cannot write them.

``ray.init`` starting Ray on this machine writes an authentication token in
``$HOME/.ray`` (Ray 2.5x and later make one for every new local cluster) and its
session files (sockets, logs) under ``$RAY_TMPDIR/ray``, else ``$TMPDIR/ray``, else
``/tmp/ray``. In a container with a read-only root file system, either fails with
an ``OSError`` before any work: seamline said ``error: Read-only file system
(/.ray): the output was not published, and what the sink last committed is kept:
fix that, then run again with --resume``, of a run that had not begun, without
naming what Ray writes there or the variable that moves it. :func:`start_refused`
says both.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping

from seamline.contracts import UserError

_CANNOT_WRITE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
"""A folder this process may not write to: the user's to move, not the machine running out."""


def ray_temporary_folder(environ: Mapping[str, str]) -> str:
    """The folder a local Ray keeps its session files in, as Ray 2.x decides it
    (``ray._common.utils.get_default_ray_temp_dir`` on Linux)."""
    system = environ.get("RAY_TMPDIR") or environ.get("TMPDIR") or "/tmp"
    return os.path.join(system, "ray")


def start_refused(error: OSError, where: str, environ: Mapping[str, str]) -> UserError | None:
    """``error``, which left ``ray.init`` starting Ray on this machine, as a refusal that
    names what Ray writes where and the variable to set (``where``: the pipeline's place
    of the executor); None when it is not a folder this process may not write to (a full
    disk stays the machine's failure, told as such)."""
    if error.errno not in _CANNOT_WRITE:
        return None
    path = str(error.filename or "")
    home = environ.get("HOME") or os.path.expanduser("~")
    temporary = ray_temporary_folder(environ)
    token = os.path.join(home, ".ray")
    fixes = []
    if not path or _inside(path, token):
        fixes.append(
            f"Ray writes its authentication token in $HOME/.ray (HOME={home!r}): set HOME "
            "to a folder this process can write to"
        )
    if not path or _inside(path, temporary):
        fixes.append(
            f"Ray writes its session files in $RAY_TMPDIR/ray ($TMPDIR/ray, or /tmp/ray, when "
            f"it is unset; here {temporary!r}): set RAY_TMPDIR to a folder this process can "
            "write to (mkdir -p ray-tmp && export RAY_TMPDIR=$PWD/ray-tmp)"
        )
    if not fixes:
        return None
    said = error.strerror or type(error).__name__
    named = f" ({path})" if path else ""
    return UserError(
        f"{where}: Ray could not start on this machine: {said}{named}. {'; or '.join(fixes)}; "
        "then run again. The run had not begun, so it committed nothing and its output is as "
        "it was"
    )


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies in it (neither resolved: Ray names its own)."""
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
