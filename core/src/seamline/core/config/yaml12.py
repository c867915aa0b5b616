"""YAML 1.2's core schema for plain scalars, the one reading of every settings text.

PyYAML resolves plain scalars by YAML 1.1's rules, which read some numbers silently
wrong: ``010`` was 8 (octal), ``0127`` 87, ``1:00`` 60 (base 60), ``1_0`` 10, so
``run: {buckets: [010, 1:00]}`` ran buckets 8 and 60, with ``validate`` saying ok. Here a
plain scalar is what YAML 1.2's core schema says it is, and nothing else:

* null: ``null``, ``Null``, ``NULL``, ``~`` and nothing;
* a boolean: ``true``, ``True``, ``TRUE``, ``false``, ``False``, ``FALSE`` (``yes``, ``on``
  and ``off`` are words);
* an integer: decimal ``[-+]?[0-9]+``, octal ``0o[0-7]+``, hexadecimal ``0x[0-9a-fA-F]+``;
* a float: ``1.5``, ``.5``, ``1e3``, ``-1.5E-3``, ``.inf``, ``-.inf``, ``.nan``;
* everything else is text: ``12:30``, ``1_0``, ``0b101``, ``2024-01-01``, ``=``, ``<<``.

A decimal with a leading zero (``010``) is 10 in YAML 1.2 and 8 in YAML 1.1, and which a
writer meant cannot be known; both readings are in use (a file written for another tool,
a habit from C), so it is refused with the spellings that say it (:data:`AMBIGUOUS`).

:class:`Yaml12Loader` serves the pipeline file, ``--set`` values and the user config file
(:mod:`.located`); :class:`Yaml12Dumper` quotes every string that either YAML reads as
something else, so ``Pipeline.to_yaml`` reads back as it was.
"""

from __future__ import annotations

import math
import re

import yaml
from yaml.constructor import ConstructorError

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$"
)

AMBIGUOUS = re.compile(r"[-+]?0[0-9]+")
"""A decimal integer with a leading zero: 8 to YAML 1.1 (``010``), 10 to YAML 1.2."""


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's core schema (see the module's docstring)."""


Yaml12Loader.yaml_implicit_resolvers = {}  # none of YAML 1.1's
for _tag, _pattern, _first in (
    ("null", _NULL, ["~", "n", "N", ""]),
    ("bool", _BOOL, list("tTfF")),
    ("int", _INT, list("-+0123456789")),  # before float, whose pattern matches `10` too
    ("float", _FLOAT, list("-+.0123456789")),
):
    Yaml12Loader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", _pattern, _first)


def ambiguity(text: str) -> str:
    """Why ``text``, an integer with a leading zero, is refused, and the spellings that say it."""
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text.lstrip("+"))
    decimal = f"{sign}{int(digits, 10)}"
    if set(digits) - set("01234567"):  # `09`: text to YAML 1.1, 9 to YAML 1.2
        read, octal = f"YAML 1.1 reads as text and YAML 1.2 as {decimal}", ""
    else:
        read = f"YAML 1.1 reads as octal ({sign}{int(digits, 8)}) and YAML 1.2 as {decimal}"
        octal = f" or {sign}0o{digits.lstrip('0') or '0'} for octal,"
    return (
        f"{text!r} has a leading zero, which {read}: write {decimal} for decimal,{octal} "
        f"or quote it ('\"{text}\"') for text"
    )


def _construct_int(loader: Yaml12Loader, node: yaml.ScalarNode) -> int:
    """An integer as YAML 1.2 spells it (``0o17``, ``0x1F``); a leading zero is refused."""
    text = str(loader.construct_scalar(node))
    if AMBIGUOUS.fullmatch(text):
        raise ConstructorError(None, None, ambiguity(text), node.start_mark)
    if not _INT.match(text):  # an explicit `!!int` on text that is no integer
        raise ConstructorError(None, None, f"{text!r} is not an integer", node.start_mark)
    sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
    return sign * int(digits[2:] if base != 10 else digits, base)


def _construct_float(loader: Yaml12Loader, node: yaml.ScalarNode) -> float:
    """A float as YAML 1.2 spells it (``1e3``, ``-.inf``, ``.nan``)."""
    text = str(loader.construct_scalar(node))
    if not _FLOAT.match(text):  # an explicit `!!float` on text that is no float
        raise ConstructorError(None, None, f"{text!r} is not a float", node.start_mark)
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if lowered.startswith("-") else math.inf
    return math.nan if lowered == ".nan" else float(text)


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


class Yaml12Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting a string that YAML 1.1 *or* 1.2 reads as another type.

    ``yaml.safe_dump`` asks YAML 1.1's rules only: it wrote the text ``1e3`` plain, which
    YAML 1.2 reads as a float, and a leading-zero ``010``, refused here, is quoted by 1.1.
    """


for _tag, _pattern, _first in (
    ("int", _INT, list("-+0123456789")),
    ("float", _FLOAT, list("-+.0123456789")),
):
    Yaml12Dumper.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", _pattern, _first)
