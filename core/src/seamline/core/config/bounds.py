"""Limits that keep a hostile pipeline file from exhausting the machine.

A pipeline file is a page of settings. YAML can make a short text expand without
bound (an alias names a node that holds aliases: "billion laughs"), never end (an
alias inside the node it names: a cycle), nest deeper than PyYAML's recursive
composer can follow (a ``RecursionError`` instead of a message), or hold an integer
too long for Python to convert (a ``ValueError`` past 4,300 digits). Each limit here
is far above any real pipeline and is checked before the costly step, so a refusal
takes bounded time and memory and names the place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import yaml

from seamline.contracts import ConfigError
from seamline.core.config.place import Place

MAX_BYTES = 1 << 20
"""The largest pipeline file read (1 MiB; the examples are under 2 KiB)."""

MAX_DEPTH = 64
"""The deepest nesting of mappings and lists."""

MAX_VALUES = 100_000
"""The most values (scalars, mappings, lists) the file may expand to, aliases repeated."""

MAX_INTEGER_DIGITS = 100
"""The longest integer literal: no setting needs more, and Python refuses past 4,300."""


class Mark(Protocol):
    """Where PyYAML found something (its pure-Python and C marks both have these)."""

    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...


@dataclass
class ValueBudget:
    """Counts values as they are built; an alias counts again each time it is expanded."""

    source: str
    used: int = 0

    def spend(self, where: str) -> None:
        self.used += 1
        if self.used > MAX_VALUES:
            raise ConfigError(
                f"the pipeline expands to more than {MAX_VALUES:,} values (YAML aliases "
                "repeat everything they name); a pipeline file is a page of settings: "
                "write them out, or remove the aliases",
                where,
            )


def check_size(size: int, source: str) -> None:
    """Refuse text of ``size`` bytes before it is read or parsed.

    The message says "larger than" the limit, not ``size``: a file is read no further than
    one byte past the limit (``read_regular``), so ``size`` is then that, not the file's.
    """
    if size > MAX_BYTES:
        raise ConfigError(
            f"the pipeline file is larger than {MAX_BYTES:,} bytes, the limit for pipeline "
            "files (is this the right file?)",
            Place.in_file(source),
        )


def utf8_text(data: bytes, source: str, what: str = "a pipeline file") -> str:
    """``data`` decoded as UTF-8, or a ``ConfigError`` placed at the first byte that is not.

    A file saved in Latin-1 or UTF-16 fails on its first non-ASCII character; the place
    (``file:line:column``, the column counted in characters) says which one to fix.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line = data.count(b"\n", 0, err.start) + 1
        column = len(data[line_start : err.start].decode("utf-8", "replace")) + 1
        raise ConfigError(
            f"byte 0x{data[err.start]:02x} is not UTF-8 text ({err.reason}): {what} is "
            "read as UTF-8; save it as UTF-8",
            Place.in_file(source, line, column),
        ) from None


def check_structure(text: str, source: str) -> None:
    """Walk the event stream (PyYAML's parser is iterative) to bound nesting and count.

    Runs before ``yaml.compose``, whose recursion a deep document would overflow.
    Syntax errors are left for the composer, which reports them with their place.
    """
    depth = 0
    events = 0
    anchors = _Anchors()
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            events += 1
            anchors.see(event, source)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ConfigError(
                        f"the pipeline nests mappings and lists more than {MAX_DEPTH} "
                        "deep; a pipeline file is a page of settings",
                        mark(source, event.start_mark),
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if events > MAX_VALUES:
                raise ConfigError(
                    f"the pipeline holds more than {MAX_VALUES:,} values; a pipeline "
                    "file is a page of settings (is this the right file?)",
                    mark(source, event.start_mark),
                )
    except yaml.YAMLError:
        return


@dataclass
class _Anchors:
    """Which anchor names which node, and which of those collections are still open.

    PyYAML's composer registers an anchor before it composes the collection's children,
    so an alias inside the collection it names (``pipeline: &x [*x]``) makes the node
    graph a cycle, and building values from it recursed until ``RecursionError``. Seen
    here, in the event stream, such an alias is refused at its own place.
    """

    named: dict[str, int] = field(default_factory=dict)
    """Each anchor and the number of the node it names now (an anchor may be redefined)."""
    open: list[int] = field(default_factory=list)
    """The numbers of the collections started and not yet ended, outermost first."""
    count: int = 0

    def see(self, event: yaml.Event, source: str) -> None:
        """Track ``event``; a ``ConfigError`` at an alias to a collection that holds it."""
        if isinstance(event, yaml.AliasEvent):
            if self.named.get(str(event.anchor)) in self.open:
                raise ConfigError(
                    f"the alias *{event.anchor} is inside the node it refers to (its value "
                    "would never end): an alias may not refer to a node that contains it; "
                    "write the value out, or remove the alias",
                    mark(source, event.start_mark),
                )
            return
        if isinstance(event, yaml.CollectionEndEvent):
            self.open.pop()
            return
        if not isinstance(event, yaml.NodeEvent):
            return
        self.count += 1
        if event.anchor is not None:
            self.named[str(event.anchor)] = self.count
        if isinstance(event, yaml.CollectionStartEvent):
            self.open.append(self.count)


def check_integer(text: str, where: str) -> None:
    """Refuse an integer literal too long to be a setting, before converting it."""
    digits = sum(character.isdigit() for character in text)
    if digits > MAX_INTEGER_DIGITS:
        raise ConfigError(
            f"an integer of {digits:,} digits; settings are limited to {MAX_INTEGER_DIGITS} digits",
            where,
        )


def check_int(value: int, where: str) -> None:
    """Refuse an integer built in code that a file could not hold (:func:`check_integer`),
    without converting it to text: ``str()`` of a 5,000-digit integer raised Python's own
    ``ValueError: Exceeds the limit (4300 digits)``."""
    if abs(value) >= 10**MAX_INTEGER_DIGITS:
        raise ConfigError(
            f"an integer of more than {MAX_INTEGER_DIGITS} digits; settings are limited to "
            f"{MAX_INTEGER_DIGITS} digits",
            where,
        )


def mark(source: str, position: Mark | None) -> Place:
    """``source:line:column`` of a PyYAML mark (1-based), or ``source`` alone."""
    if position is None:
        return Place.in_file(source)
    return Place.in_file(source, position.line + 1, position.column + 1)
