"""``${VAR}`` and ``${VAR:-default}`` in pipeline strings, as in a POSIX shell.

Interpolation happens on the parsed strings, before typing, so ``${N:-8}`` can
fill an integer field. ``$${`` is a literal ``${``. An unset variable without a
default is an error at the string's location, never an empty string. As in a shell,
``:-`` also stands in for a variable that is set but empty: ``SEAMLINE_CORPUS= seamline
run`` takes the default corpus, not "" (which a path field would read as the working
directory). A default that holds another reference is refused: shells expand it,
seamline would have left it as text. Which
variables filled which string is recorded (``Located.interpolated``), so that an
error about that string names the variable and never prints its value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from seamline.contracts import ConfigError
from seamline.core.config.located import Located, Path

_PATTERN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{[^}]*\}?")


def interpolate(located: Located, environ: Mapping[str, str]) -> None:
    """Replace variables in every string of ``located.data``, in place."""
    located.data = _walk(
        located.data, (), lambda text, path: _substitute(text, path, located, environ)
    )


def _walk(value: Any, path: Path, fn: Callable[[str, Path], str]) -> Any:
    if isinstance(value, str):
        return fn(value, path)
    if isinstance(value, dict):
        return {k: _walk(v, (*path, k), fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, (*path, i), fn) for i, v in enumerate(value)]
    return value


def _substitute(text: str, path: Path, located: Located, environ: Mapping[str, str]) -> str:
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        if name is None:
            raise ConfigError(
                f"malformed variable reference {whole!r}: write ${{NAME}} or ${{NAME:-default}}",
                located.where(path),
            )
        if default is not None and "${" in default:
            raise ConfigError(
                f"the default of ${{{name}:-...}} refers to another variable, which is not "
                f"supported: give a plain default, or set {name}",
                located.where(path),
            )
        value = environ.get(name)
        if value is not None and (value or default is None):
            located.interpolated.setdefault(path, {})[name] = value
            return value
        if default is not None:  # unset, or set but empty
            return default
        raise ConfigError(
            f"environment variable {name} is not set: set it, or give a default as "
            f"${{{name}:-value}}",
            located.where(path),
        )

    result = _PATTERN.sub(replace, text)
    if result != text:
        located.templates[path] = (text, result)
    return result
