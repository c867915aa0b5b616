"""The user's home folder, where there is one: ``$HOME`` when it is an absolute path, else
the user database's entry for this uid.

A container run as an arbitrary uid (OpenShift gives each pod one) often has neither a
``$HOME`` nor an entry in ``/etc/passwd``: ``Path.home()`` then raises ``RuntimeError``,
and every command (``validate`` too) ended in a traceback, though only the *default*
places of caches and of the user config need a home. So seamline asks here, and None
means there is none: each place that would be under it is simply unavailable (said
once, the run goes on), and a variable that names a place is used without a home.

A relative ``$HOME`` was taken relative to the working directory (a cache landed in
``./home/.cache``), where a relative ``$XDG_CACHE_HOME`` is ignored, as the XDG
specification says: a relative (or empty) ``$HOME`` is ignored alike, as an unset one is.

A home that does not exist is none for the *default* places (:func:`default_home`):
Debian gives system users ``/nonexistent`` as their home so that nothing is ever put
there, yet a command run as root with that ``$HOME`` made ``/nonexistent/.cache/
seamline/jax``, parents and all, at the root of the filesystem. A folder seamline makes
by default goes under a home that is there, or nowhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def home_directory(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$HOME`` when absolute, else the user database's home of this uid; None: no home."""
    env = os.environ if environ is None else environ
    value = env.get("HOME", "")
    if os.path.isabs(value):
        return Path(value)
    try:
        import pwd
    except ImportError:  # no user database on this platform
        return None
    try:
        found = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # an arbitrary uid, as OpenShift runs a pod
        return None
    return Path(found) if os.path.isabs(found) else None


def default_home(environ: Mapping[str, str] | None = None) -> Path | None:
    """:func:`home_directory` when it is a directory that exists, else None: the home the
    default places (caches, records, the user config) go under, never made for them."""
    home = home_directory(environ)
    return home if home is not None and home.is_dir() else None


def xdg_directory(
    variable: str, fallback: str, environ: Mapping[str, str] | None = None
) -> Path | None:
    """``$variable`` when absolute (the XDG specification ignores a relative one), else
    ``fallback`` under :func:`default_home`; None where there is no such home."""
    env = os.environ if environ is None else environ
    value = env.get(variable, "")
    if os.path.isabs(value):
        return Path(value)
    home = default_home(env)
    return None if home is None else home / fallback


def cache_home(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$XDG_CACHE_HOME``, else ``~/.cache``; None where there is no home.

    Here, below core, so that a component that keeps a cache of its own (``split-zip:``
    weights) follows the same rule as core's caches rather than a copy of it."""
    return xdg_directory("XDG_CACHE_HOME", ".cache", environ)


def no_home_reason(environ: Mapping[str, str] | None = None) -> str:
    """Why :func:`default_home` (or :func:`home_directory`) found none, in words for a
    message."""
    env = os.environ if environ is None else environ
    home = home_directory(env)
    if home is not None:  # there is one, but not as a directory
        named = "$HOME names" if os.path.isabs(env.get("HOME", "")) else "the home is"
        return f"{named} {home}, which is not a directory that exists"
    value = env.get("HOME")
    said = "$HOME is unset" if value is None else f"$HOME ({value!r}) is not an absolute path"
    getuid = getattr(os, "getuid", None)
    uid = "this user" if getuid is None else f"uid {getuid()}"
    return f"there is no home directory ({said}, and {uid} has no home in the user database)"


def expand_tilde(text: str, environ: Mapping[str, str] | None = None) -> str | None:
    """``text`` with a leading ``~`` or ``~/`` made :func:`home_directory`; ``text`` as it is
    when it does not start so (``~user`` included: ``os.path.expanduser``'s); None when it
    does and there is no home."""
    if text != "~" and not text.startswith("~/"):
        return text
    home = home_directory(environ)
    if home is None:
        return None
    return str(home) if text == "~" else os.path.join(home, text[2:])
