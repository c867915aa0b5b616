"""What to do when YAML read a value as a number, a boolean or null where text goes.

A folder named ``2024``, ``true``, ``null``, ``0x10`` or ``~`` is not text to YAML:
``--set loader.with.root=2024`` and ``root: 2024`` gave pydantic's "Input is not a valid
path for <class 'pathlib.Path'> (got 2024)", which says neither what happened nor how
to say what was meant, where ``--set loader.with.root=#notes`` already got the quoting it
needs (:mod:`.overrides`). :func:`quoting_fix` says both for a text or path setting given
a value of another type: quoted, in the file's spelling or the command line's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seamline.contracts.untrusted import a_type
from seamline.core.config.overrides import PREFIX, is_override, set_quoted

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from seamline.core.config.located import Located
    from seamline.core.config.located import Path as DataPath

_TEXT = {"string_type": "text", "path_type": "a path, which is text"}
"""pydantic's error types for a value that is not text where text goes, and the setting's
kind in words."""


def quoting_fix(error: ErrorDetails, located: Located, path: DataPath) -> str:
    """What YAML read the value at ``path`` as, and how to quote it; "" when that is not
    the problem (the value is text, a list, a mapping; or the error is another)."""
    given = error.get("input")
    setting = _TEXT.get(error["type"])
    if setting is None or not path:
        return ""
    dotted = ".".join(str(step) for step in path)
    where = located.where(path)
    said = f"this setting is {setting}"
    given_here = is_override(where) and where.startswith(f"{PREFIX}{dotted}=")
    if given_here and isinstance(given, dict | list):  # `query: ` is a mapping to YAML
        typed = located.typed.get(path, where.partition("=")[2])
        fix = f"quote it for YAML inside the shell's quotes: {set_quoted(dotted, typed)}"
        return f"{said}, and YAML reads {typed!r} as {_collection(given, typed)}: {fix}"
    if not _scalar(given):
        return ""
    if given_here:
        typed = located.typed.get(path, where.partition("=")[2]).strip()
        quoted = _quotable(typed, error)
        fix = f"quote it for YAML inside the shell's quotes: {set_quoted(dotted, quoted)}"
    elif path in located.scalars or is_override(where):  # the file, or a --set above it
        typed = located.scalars.get(path, _as_yaml(given))
        if not typed:
            return f"{said}, and it is empty (YAML reads that as no value): give it a value"
        fix = f'quote it: {path[-1]}: "{_quotable(typed, error)}"'
    else:  # built in code (Pipeline.from_dict): no YAML read it
        return f"{said}, not {a_type(given)}: give it as a str ({str(_as_yaml(given))!r})"
    return f"{said}, and YAML reads {typed} as {_kind(given)}: {fix}"


def _quotable(typed: str, error: ErrorDetails) -> str:
    """``typed`` as it is to be quoted: a path that starts with ``~`` would be the home
    folder even quoted, so a folder really named ``~`` is ``./~``."""
    return f"./{typed}" if error["type"] == "path_type" and typed.startswith("~") else typed


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float)


def _collection(value: dict[Any, Any] | list[Any], typed: str) -> str:
    """What YAML read ``typed`` as, and what in it made it so, in the characters it holds:
    ``query:`` (a shell's unquoted word, its space gone) was said to hold a ``': '``."""
    if isinstance(value, list):
        return "a list"
    text = typed.strip()
    if text.startswith("{"):
        made = "its braces make one"
    elif ": " in typed:
        made = "a ': ' makes a key and its value"
    elif text.endswith(":"):
        made = "a ':' at its end makes a key with no value"
    else:  # an explicit key (`? x`), rare: no part to point at
        return "a mapping"
    return f"a mapping ({made})"


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "no value (null)"
    return "a boolean" if isinstance(value, bool) else "a number"


def _as_yaml(value: Any) -> str:
    """``value`` as YAML writes it (``true``, ``null``, ``2024``)."""
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)
