"""Importing a third party's entry point without letting it harm anything but itself.

A plugin's module runs when it is imported, and it is imported by every command that
discovers components, whether or not a pipeline names it. So whatever it does there
must end as one *broken* entry with its reason, never as the end of the command:

* an entry-point value that is not ``module:attribute`` (``f-hyphen:L``, the
  distribution's name where the module's belongs; ``pkg:L extra``) made
  ``importlib.metadata`` raise ``AttributeError: 'NoneType' object has no attribute
  'group'`` from inside stevedore's failure callback: a traceback from every command;
* ``sys.exit()``, a failed ``assert``, or any other ``BaseException`` at import
  (``pytest.importorskip`` raises ``Skipped``) went through stevedore, which catches
  ``Exception`` only. ``KeyboardInterrupt`` still goes through: it is the user's Ctrl-C
  as often as a plugin's, and the two cannot be told apart;
* what it writes to standard output (``print``, or a C library writing to file
  descriptor 1) went into the middle of a command's ``--format json``: it goes to
  standard error while plugins are imported (:func:`stdout_to_stderr`);
* a ``structlog.configure`` or ``logging.basicConfig`` at import replaced the
  command's logging for the rest of the command (``seamline explain --format json``
  began with a ``key=value`` line on stdout; ``run --log-format json`` wrote its
  warnings to stdout): the logging set before is put back, with a warning naming the
  distribution (:func:`logging_kept`).
"""

from __future__ import annotations

import contextlib
import importlib.metadata as metadata
import logging
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import structlog

ENTRY_POINT_VALUE = re.compile(r"^\s*[\w.]+\s*(:\s*[\w.]+\s*)?(\[.*\]\s*)?$")
"""What ``importlib.metadata`` can read as ``module:attribute [extras]``."""


class ImportStopped(RuntimeError):
    """A plugin that stopped the process, failed an ``assert``, or raised another
    ``BaseException`` while it was imported: made an ordinary failure, so it is listed as
    ``broken`` and harms no other component. ``sys.exit()`` at import ended
    ``seamline validate`` of pipelines that never named it, and raised ``SystemExit`` out
    of ``Pipeline.from_yaml``."""


class MalformedEntryPoint(ValueError):
    """An entry-point value that names no ``module:attribute``: never imported."""


def check_value(ep: metadata.EntryPoint) -> None:
    """Raise :class:`MalformedEntryPoint` when ``ep``'s value cannot name what to import."""
    if not ENTRY_POINT_VALUE.match(ep.value):
        raise MalformedEntryPoint(
            f"the entry point's value {ep.value!r} is not 'module:attribute' (a module is "
            "named with letters, digits, '_' and '.', as it is imported: no '-' or spaces)"
        )


@contextlib.contextmanager
def stopped_as_failures() -> Iterator[None]:
    """Turn every ``BaseException`` but ``KeyboardInterrupt`` raised inside into
    :class:`ImportStopped` (an ``Exception``, which stevedore reports as a failure)."""
    try:
        yield
    except KeyboardInterrupt:
        raise
    except SystemExit as stop:
        raise ImportStopped(f"it called sys.exit({stop.code!r}) while imported") from None
    except AssertionError as err:  # stevedore lets these through: one plugin, every command
        raise ImportStopped(f"an assertion failed while it was imported: {err}") from None
    except Exception:
        raise
    except BaseException as err:
        raise ImportStopped(
            f"it raised {type(err).__name__} while imported: {_first_line(err)}"
        ) from None


def import_failure(
    group: str, ep: metadata.EntryPoint, distribution: str, err: BaseException
) -> str:
    """Why importing ``ep`` failed, naming its target, and where to fix it when it is wrong.

    "No module named 'x'" alone does not say whether a dependency is missing or the
    entry point itself names a module or class that is not there (a typo in the
    distribution's pyproject.toml); the target tells them apart, and the latter is
    fixed in the entry-point table, not by installing anything.
    """
    if isinstance(err, MalformedEntryPoint):
        return f"{err}; {pyproject_hint(group, distribution)}"
    reason = f"import failed: {type(err).__name__}: {err} (entry point target {ep.value!r})"
    if not _target_missing(ep, err):
        return reason
    return f"{reason}; {pyproject_hint(group, distribution)}"


def pyproject_hint(group: str, distribution: str) -> str:
    """Where an entry point is declared, so that a wrong one is fixed where it is written."""
    table = f'[project.entry-points."{group}"]'
    return f"check the {table} table of {distribution}'s pyproject.toml, then reinstall it"


def described(plugin: object) -> str:
    """What an entry point loaded, named without its memory address (``<function f at
    0x7f…>`` changed from run to run, so two listings never compared equal)."""
    name = getattr(plugin, "__qualname__", None)
    module = getattr(plugin, "__module__", None)
    kind = "class" if isinstance(plugin, type) else type(plugin).__name__
    if isinstance(name, str) and isinstance(module, str):
        return f"the {kind} {module}.{name}"
    return f"a {kind} object"


def _target_missing(ep: metadata.EntryPoint, err: BaseException) -> bool:
    """Whether ``err`` says the entry point's own module or attribute does not exist."""
    if isinstance(err, ModuleNotFoundError) and err.name:
        return ep.module == err.name or ep.module.startswith(f"{err.name}.")
    if isinstance(err, AttributeError) and ep.attr:
        return err.name == ep.attr.split(".")[0] and getattr(err.obj, "__name__", None) == ep.module
    return False


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "(no message)"


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Standard output sent to standard error, at the file descriptor too, while inside.

    ``contextlib.redirect_stdout`` moves Python's ``print`` only; a C extension or a
    plugin writing ``os.write(1, ...)`` still reached stdout. Where descriptor 1 cannot be
    duplicated (closed, or a host without descriptors), only Python's stream is moved.
    """
    if sys.stdout is not None:
        sys.stdout.flush()
    saved = _moved_descriptor()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved >= 0:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.flush()
            os.dup2(saved, 1)
            os.close(saved)


def _moved_descriptor() -> int:
    """A copy of descriptor 1 once 1 is made a copy of 2, or -1 when either cannot be."""
    try:
        saved = os.dup(1)
    except OSError:
        return -1
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        return -1
    return saved


@contextlib.contextmanager
def logging_kept(distribution: str) -> Iterator[None]:
    """The process's logging (structlog's configuration, the root logger's handlers and
    level) as it was before, once ``distribution``'s plugin is imported inside.

    Logging is the application's to configure (the command line's, or a program's that
    uses seamline); a plugin that configures it when imported changes it for every
    command that discovers components, whether or not a pipeline names the plugin.
    What it changed is put back and said once, naming the distribution, so its author
    can be asked to configure logging only where an application starts.
    """
    root = logging.getLogger()
    configured = structlog.is_configured()
    before: dict[str, Any] = {**structlog.get_config()}
    before["processors"] = list(before["processors"])
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        changed = [
            *(["structlog.configure"] if _structlog_changed(configured, before) else []),
            *(["the root logger"] if (root.handlers, root.level) != (handlers, level) else []),
        ]
        if changed:
            if configured:
                structlog.configure(**before)
            else:
                structlog.reset_defaults()
            root.handlers[:] = handlers
            root.setLevel(level)
            structlog.get_logger(__name__).warning(
                "plugin_changed_logging",
                distribution=distribution,
                changed=changed,
                note=(
                    f"{distribution} changed the process's logging ({' and '.join(changed)}) "
                    "when it was imported; seamline put it back: ask its author to configure "
                    "logging only where an application starts, not at import"
                ),
            )


def _structlog_changed(configured: bool, before: dict[str, Any]) -> bool:
    """Whether structlog's configuration is no longer ``before`` (or configured now, when it
    was not)."""
    now = structlog.get_config()
    return structlog.is_configured() != configured or any(
        list(now[key]) != value if key == "processors" else now[key] is not value
        for key, value in before.items()
    )
