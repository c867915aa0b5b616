"""The directories seamline keeps things in: named by a variable, else the XDG default.

``$SEAMLINE_CACHE_DIR`` (the compile cache), ``$SEAMLINE_TUNING_DIR`` (the tuning
cache) and ``$SEAMLINE_CONFORMANCE_DIR`` (conformance records) each name a directory,
created when missing. A variable the user sets is an instruction, so one that names
something other than a directory (a regular file, a FIFO) is a mistake reported in one
line, as Hugging Face's ``HF_HOME`` or pip's ``--cache-dir`` report it, not worked
around by writing elsewhere. The XDG base directories follow the XDG specification:
a relative ``$XDG_CACHE_HOME`` (or ``_DATA_``, ``_CONFIG_``) is ignored, and so is a
relative ``$HOME`` (:func:`seamline.contracts.home.home_directory`), and a home that does
not exist (:func:`seamline.contracts.home.default_home`). Where there is no home
(an arbitrary uid with no ``$HOME``, as OpenShift runs a pod), a default under it is None:
that place is unavailable, and its caller goes on without it; a variable that names a
place is used as it is, the default never computed first.

A folder an option names for a command's output (``profile -o DIR``, ``check
--record-dir DIR``) is :func:`output_directory`'s: made and tried before the work whose
results would go there, so that a regular file or a read-only place is the same one line.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from seamline.contracts import UserError
from seamline.contracts.home import cache_home as cache_home  # the rule split-zip: follows too
from seamline.contracts.home import expand_tilde, no_home_reason, xdg_directory


def data_home(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_DATA_HOME``, else ``~/.local/share``; None where there is no home."""
    return xdg_directory("XDG_DATA_HOME", os.path.join(".local", "share"), environ)


def config_home(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_CONFIG_HOME``, else ``~/.config``; None where there is no home."""
    return xdg_directory("XDG_CONFIG_HOME", ".config", environ)


def under(base: Path | None, *parts: str) -> Path | None:
    """``base / parts``, None where ``base`` is (no home to put it under)."""
    return None if base is None else base.joinpath(*parts)


def named_directory(
    variable: str, default: Callable[[], Path | None], environ: Mapping[str, str] | None = None
) -> Path | None:
    """The directory ``$variable`` names (``~`` expanded), else ``default()`` (None: no home).

    ``default`` is called only when the variable is unset: computing a default that
    needs a home first made a set variable useless where there is none. Raises
    :class:`~seamline.contracts.UserError` when the variable names a path that exists and
    is not a directory, or starts with ``~`` where there is no home (nothing is created
    or read here).
    """
    env = os.environ if environ is None else environ
    value = env.get(variable, "")
    if not value:
        return default()
    expanded = expand_tilde(value, env)
    if expanded is None:
        raise UserError(
            f"${variable} names {value}, but {no_home_reason(env)} to put in place of ~: "
            f"write the directory out in full"
        )
    path = Path(os.path.expanduser(expanded))  # ~user
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):  # mkdir would say only "File exists"
            raise UserError(
                f"${variable} names {path}, a dangling link (to {os.readlink(path)}, which "
                f"does not exist): make that directory, point {variable} elsewhere, or unset "
                f"{variable}"
            ) from None
        return path  # created when first needed
    except OSError as err:
        raise UserError(
            f"${variable} names {path}, which cannot be used ({err.strerror}): point it at "
            f"a directory, or unset {variable}"
        ) from None
    if not stat.S_ISDIR(mode):
        raise UserError(
            f"${variable} names {path}, which is {_kind(mode)}: point it at a directory (it "
            f"is created when missing), or unset {variable}"
        )
    return path


def try_writing(directory: Path, *, mode: int = 0o777) -> None:
    """Make ``directory`` (with its parents) and a file in it, which leaves nothing behind
    (``O_TMPFILE`` where it can); the ``OSError`` says why it cannot be written. Tried,
    not read from a mode, which says nothing for root, a read-only mount or an ACL.

    ``mode`` is the one ``directory`` is made with (less the umask), when it is made: a
    private cache passes 0o700. ``seamline tune`` checked its folder this way before
    measuring, and so made ``~/.cache/seamline/tuning`` 0755, though the docs promise that
    a folder seamline makes for it is the user's alone."""
    directory.mkdir(mode=mode, parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=directory):
        pass


def _kind(mode: int) -> str:
    """What a path that is not a directory is, for a message."""
    return "a regular file" if stat.S_ISREG(mode) else "not a directory"


WRITABLE_FIX = "name a directory you can write to (it is created when missing)"
"""What :func:`output_directory`'s message asks for, unless its caller says otherwise."""


def output_directory(path: Path, named: str, fix: str = WRITABLE_FIX) -> Path:
    """``path``, a directory a command is about to write into: made (with its parents) when
    missing, and tried with a nameless temporary file.

    Called before the work whose results go there: a results folder that turns out to be
    a regular file, or on a read-only disk, would otherwise cost the whole run and end in
    a traceback. Raises :class:`~seamline.contracts.UserError`, one line that says
    ``{named} {path}`` (``named``: how the user gave it, such as ``--out names``), what is
    wrong and ``fix``.
    """
    try:
        try_writing(path)
    except FileExistsError:  # something other than a directory is there
        try:
            what = _kind(os.stat(path).st_mode)
        except OSError:  # a dangling link
            what = "not a directory"
        raise UserError(f"{named} {path}, which is {what}: {fix}") from None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise UserError(f"{named} {path}, which cannot be written to ({reason}): {fix}") from None
    return path
