"""JAX's persistent compilation cache, switched on at the edge for command-line runs.

Compiling each shape bucket costs seconds; with the cache, a second run of the
same pipeline loads the compiled executables instead. It is an application's
choice (it writes to disk), so the CLI makes it, not the core.

The directory is ``$SEAMLINE_CACHE_DIR``, else JAX's own ``$JAX_COMPILATION_CACHE_DIR``
where the user set one (seamline's default must not override a place they chose for
every JAX program), else ``$XDG_CACHE_HOME/seamline/jax`` (``~/.cache/seamline/jax``;
none where there is no home, as for an arbitrary uid in a container: the run goes on
uncached, with a warning).
One the user named that cannot be used (a regular file, say) is a
:class:`~seamline.contracts.UserError`: they asked for it. The default
location that cannot be made (a read-only home) only costs speed, so the run goes on
without the cache and a warning says why and how to choose another place.

An entry of the cache is a compiled program, which JAX loads and runs as it finds it:
whoever can write the directory chooses what a run computes (an entry swapped for
another pipeline's gave every vector of a run the other pooling, and exit 0). So the
directory must be the user's own, as ssh requires of ``~/.ssh``: it and every entry
in it owned by them and writable by no one else (:func:`seamline.core.not_private`),
or one root prepared at an image build, root's alone, which is only read
(:func:`seamline.core.prepared_by_root`: a container platform runs the image as a uid
unknown when it was built).
The default one is made private (0700). One that is not is refused for a named
directory and turned off, with a warning, for the default, never used. (JAX reads
``$JAX_COMPILATION_CACHE_DIR`` itself without this module; core checks that one before
its first use of JAX in any command: :func:`seamline.core.check_jax_compile_cache`.)
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

from seamline.adapters.compile_cache_warnings import route_cache_warnings
from seamline.contracts import UserError
from seamline.contracts.home import no_home_reason
from seamline.contracts.logs import get_logger
from seamline.core import (
    NotPrivate,
    cache_home,
    named_directory,
    not_private,
    prepared_by_root,
    try_writing,
)

log = get_logger("seamline.adapters.compile_cache")

CACHE_VARIABLE = "SEAMLINE_CACHE_DIR"
JAX_VARIABLE = "JAX_COMPILATION_CACHE_DIR"
NAMING_VARIABLES = (CACHE_VARIABLE, JAX_VARIABLE)  # the first set wins
CACHE_SETTING = "jax_compilation_cache_dir"  # what $JAX_COMPILATION_CACHE_DIR sets


def naming_variable() -> str | None:
    """The environment variable that names the cache directory, if the user set one."""
    return next((v for v in NAMING_VARIABLES if os.environ.get(v)), None)


def default_cache_dir() -> Path | None:
    """``$SEAMLINE_CACHE_DIR``, else ``$JAX_COMPILATION_CACHE_DIR``, else the XDG place;
    None where none is named and there is no home.

    Raises :class:`~seamline.contracts.UserError` when the variable that names it
    names something that is not a directory.
    """

    def default() -> Path | None:
        base = cache_home()
        return None if base is None else base / "seamline" / "jax"

    variable = naming_variable()
    return default() if variable is None else named_directory(variable, default)


def set_in_code() -> Path | None:
    """The cache directory the application set in ``jax.config`` itself, if it did.

    ``$JAX_COMPILATION_CACHE_DIR`` sets the same setting (JAX reads it): that one is the
    variable's, named as such. A JAX application's own ``jax.config.update(
    "jax_compilation_cache_dir", ...)`` was silently replaced by seamline's default.
    """
    value = getattr(jax.config, CACHE_SETTING)
    if not value or value == os.environ.get(JAX_VARIABLE):
        return None
    return Path(value)


def enable_compile_cache(directory: Path | None = None, *, api: bool = False) -> Path | None:
    """Point JAX's persistent cache at ``directory`` and cache every compilation.

    Without ``directory``, one an application (``api``) already set in ``jax.config`` is
    kept (:func:`set_in_code`), else the variables' or the default. Every compilation is
    cached, the process's own too: JAX's minimum compile time and entry size are set to
    0 (python.md says so). Returns the directory, or None when the default one cannot
    be made (warned). ``api``: called by an application
    (``seamline.api.enable_compile_cache``), whose errors name its argument and say not
    to call it, not a variable and a flag it has not.
    """
    variable = naming_variable()
    # An application's own setting; the command sets none (the test suite's is its own).
    configured = set_in_code() if api and directory is None else None
    chosen = directory or configured or default_cache_dir()
    named_by = (
        "the directory passed to enable_compile_cache()"
        if api and directory is not None
        else f"jax.config's {CACHE_SETTING}"
        if configured is not None
        else f"${variable or CACHE_VARIABLE}"
    )
    turn_off = _api_turn_off(variable) if api else _turn_off(variable)
    if chosen is None:
        log.warning(
            "compile cache off: it has no default directory",
            why=no_home_reason(),
            fix=f"set {CACHE_VARIABLE} to a directory you can write",
        )
        return None
    try:
        chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
        unsafe = not_private(chosen)
    except OSError as err:
        if directory is not None or configured is not None or variable is not None:
            raise UserError(
                f"the compile cache directory {chosen} cannot be made ({err.strerror}): "
                f"point {named_by} at a directory you can write, or {turn_off}"
            ) from None
        log.warning(
            "compile cache off: its default directory cannot be made",
            directory=str(chosen),
            error=err.strerror,
            fix=f"set {CACHE_VARIABLE} to a directory you can write",
        )
        return None
    prepared = unsafe is not None and prepared_by_root(chosen)
    if unsafe is not None and not prepared:
        named = directory is not None or configured is not None or variable is not None
        _refuse_shared(chosen, unsafe, named_by, turn_off, named=named)
        return None
    read_only = prepared or not _writable(chosen)
    if prepared:  # as meant: nothing to fix (see _say_prepared)
        _say_prepared(chosen)
    elif read_only:
        log.warning(
            f"compile cache {chosen} is read-only: compiled programs will not be kept",
            directory=str(chosen),
            fix=f"make it writable, or set {CACHE_VARIABLE} to a directory you can write",
        )
    jax.config.update(CACHE_SETTING, str(chosen))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    route_cache_warnings(chosen, read_only=read_only)
    return chosen


def _say_prepared(directory: Path) -> None:
    """One info line for a cache root prepared (:func:`seamline.core.prepared_by_root`).

    It is read-only to this user by design (reliability.md: ``chmod -R go=rX``), yet every
    start warned that it was read-only and told the user to make it writable or choose
    another, the opposite of what the image's builder meant: it is read, not written.
    """
    log.info(
        f"compile cache {directory} was prepared by root: read, not written",
        directory=str(directory),
    )


def _writable(directory: Path) -> bool:
    """Whether a file can be made in ``directory``, tried (a mode says nothing for root,
    a read-only mount or an ACL): else each program compiled warned that its entry
    could not be written, when the cache can only be read."""
    try:
        try_writing(directory, mode=0o700)  # made 0700 already; never made otherwise
    except OSError:
        return False
    return True


def _refuse_shared(
    directory: Path, problem: NotPrivate, named_by: str, turn_off: str, *, named: bool
) -> None:
    """A directory others can write is never used: an error if named, else a warning."""
    fix = problem.fix(directory, named_by)
    if named:
        raise UserError(
            f"the compile cache directory {directory} is not private: {problem.why}, and its "
            f"entries are compiled programs that run as they are found; {fix}, or {turn_off}"
        )
    log.warning(
        "compile cache off: its directory is not private, and its entries are compiled "
        "programs that run as they are found",
        directory=str(directory),
        why=problem.why,
        fix=fix,
    )


def _turn_off(variable: str | None) -> str:
    """How to run without the cache: ``--no-compile-cache`` leaves JAX's own variable
    in force (JAX reads it itself), so a directory that one names is left by unsetting it."""
    return f"unset {JAX_VARIABLE}" if variable == JAX_VARIABLE else "run with --no-compile-cache"


def _api_turn_off(variable: str | None) -> str:
    """How an application goes on without the cache: it called for it, so not calling it
    (and unsetting JAX's own variable, which JAX reads itself, where that named it)."""
    also = f" and unset {JAX_VARIABLE}" if variable == JAX_VARIABLE else ""
    return f"do not call enable_compile_cache(){also}"
