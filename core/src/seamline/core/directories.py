"""The directories seamline keeps things in: named by a variable, else the XDG default.

``$SEAMLINE_CACHE_DIR`` (the compile cache), ``$SEAMLINE_TUNING_DIR`` (the tuning
cache) and ``$SEAMLINE_CONFORMANCE_DIR`` (conformance records) each name a directory,
created when missing. A variable the user sets is an instruction, so one that names
something other than a directory (a regular file, a FIFO) is a mistake reported in one
line, as Hugging Face's ``HF_HOME`` or pip's ``--cache-dir`` report it, not worked
around by writing elsewhere. The XDG base directories follow the XDG specification:
a relative ``$XDG_CACHE_HOME`` (or ``_DATA_``, ``_CONFIG_``) is ignored.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from seamline.contracts import UserError


def _xdg(variable: str, fallback: str, environ: Mapping[str, str] | None) -> Path:
    env = os.environ if environ is None else environ
    value = env.get(variable, "")
    return Path(value) if os.path.isabs(value) else Path.home() / fallback


def cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache``."""
    return _xdg("XDG_CACHE_HOME", ".cache", environ)


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME``, else ``~/.local/share``."""
    return _xdg("XDG_DATA_HOME", os.path.join(".local", "share"), environ)


def config_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME``, else ``~/.config``."""
    return _xdg("XDG_CONFIG_HOME", ".config", environ)


def named_directory(variable: str, default: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The directory ``$variable`` names (``~`` expanded), else ``default``.

    Raises :class:`~seamline.contracts.UserError` when the variable names a path that
    exists and is not a directory (nothing is created or read here).
    """
    env = os.environ if environ is None else environ
    value = env.get(variable, "")
    if not value:
        return default
    path = Path(value).expanduser()
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return path  # created when first needed
    except OSError as err:
        raise UserError(
            f"${variable} names {path}, which cannot be used ({err.strerror}): point it at "
            f"a directory, or unset {variable}"
        ) from None
    if not stat.S_ISDIR(mode):
        what = "a regular file" if stat.S_ISREG(mode) else "not a directory"
        raise UserError(
            f"${variable} names {path}, which is {what}: point it at a directory (it is "
            f"created when missing), or unset {variable}"
        )
    return path
