"""Safe YAML parsing that remembers where every value came from.

PyYAML's composer gives a node tree with source marks; we build plain Python
values from it ourselves (with the safe constructor for scalars) and keep a map
from each value's path to its ``file:line:column``. That map is what lets a
validation error deep inside a component's config point at the offending node.
Duplicate keys, which PyYAML would silently resolve last-wins, are errors here, and
plain scalars are read by YAML 1.2's core schema (:mod:`.yaml12`), not PyYAML's YAML 1.1:
only ``true``/``false`` are booleans, not ``yes``/``no``/``on``/``off``; ``12:30`` and
``2024-01-01`` are text; ``010`` is refused, neither 8 nor 10.
The limits of ``bounds`` apply before and while values are built.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from seamline.contracts import ConfigError
from seamline.contracts.untrusted import a_type
from seamline.core.config import bounds
from seamline.core.config.place import Place
from seamline.core.config.yaml12 import Yaml12Loader

Path = tuple[str | int, ...]

_SAFE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


@dataclass
class Located:
    """Plain data plus the location of every value and every mapping key in it."""

    data: Any
    source: str
    values: dict[Path, str] = field(default_factory=dict)
    keys: dict[Path, str] = field(default_factory=dict)
    interpolated: dict[Path, dict[str, str]] = field(default_factory=dict)
    """The strings filled from environment variables, with each variable's name and
    value: a value may be a secret, so messages name the variable instead of echoing it."""
    scalars: dict[Path, str] = field(default_factory=dict)
    """Each value YAML read as a number, a boolean or null, as the file spells it (``0x10``,
    ``~``): a message that asks to quote it shows what was typed (:mod:`.quoting`)."""
    typed: dict[Path, str] = field(default_factory=dict)
    """Each ``--set`` value as typed after its ``=`` (whole, its spaces kept), where YAML read
    it as something else than text: a message that asks to quote it quotes exactly that
    (``query: `` is a mapping to YAML, and a hint that dropped its space was wrong)."""
    templates: dict[Path, tuple[str, str]] = field(default_factory=dict)
    """Each string that held ``${...}``: as written, and as filled in. A pipeline written
    back out (``Pipeline.to_yaml``) writes what was written, never a variable's value."""

    def where(self, path: Path, *, key: bool = False) -> str:
        """The location of the value (or key) at ``path``, else of its nearest ancestor."""
        table = self.keys if key else self.values
        probe = tuple(path)
        while probe:
            if probe in table:
                return table[probe]
            if probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
        return self.values.get((), Place.in_file(self.source))


_mark = bounds.mark


@dataclass(frozen=True)
class _Alias:
    """An alias (``*n``) being built: where it is written, and the anchor it names."""

    place: Place
    anchor: str
    anchored: yaml.Mark


class _LocatingLoader(Yaml12Loader):
    """The YAML 1.2 loader, each alias given a node of its own, placed where it is written.

    PyYAML's composer gives an alias the very node its anchor names, and so the anchor's
    place: ``run: {prefetch: *n}`` with ``max_length: &n 128`` had its ``run.prefetch``
    error placed at the model's (valid) ``max_length``. A shallow copy (the anchor's
    children shared) carries the alias's own place; :attr:`aliases` names its anchor.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.aliases: dict[int, tuple[str, yaml.Mark]] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if not self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        event: yaml.AliasEvent = self.peek_event()  # type: ignore[no-untyped-call]
        anchored = super().compose_node(parent, index)
        if anchored is None:  # never: PyYAML refuses an alias that names no node
            return None
        alias = copy.copy(anchored)
        alias.start_mark, alias.end_mark = event.start_mark, event.end_mark
        self.aliases[id(alias)] = (str(event.anchor), anchored.start_mark)
        return alias


def _placed(source: str, mark: yaml.Mark, via: _Alias | None) -> Place:
    """The place of a value at ``mark``; inside an alias, the alias's, naming its anchor and
    (for a value inside the anchored node) where that value is written."""
    if via is None:
        return _mark(source, mark)
    anchor = f"{via.anchored.line + 1}:{via.anchored.column + 1}"
    value = f"{mark.line + 1}:{mark.column + 1}"
    inside = "" if value == f"{via.place.line}:{via.place.column}" else f", this value at {value}"
    return Place(
        f"{via.place} (alias of &{via.anchor} at {anchor}{inside})",
        file=via.place.file,
        line=via.place.line,
        column=via.place.column,
    )


def _syntax_fix(problem: str, text: str, mark: yaml.Mark | None) -> str:
    """The fix for two mistakes whose YAML message does not say it: a tab that indents, and
    a ``${VAR}`` left unquoted inside ``{ }`` (where YAML reads its braces as a mapping)."""
    if "'\\t'" in problem:
        return "; indent with spaces: YAML does not allow a tab there"
    at = mark.index if mark is not None else -1
    if 0 < at < len(text) and text[at - 1 : at + 1] == "${":
        return '; quote a value that names a variable inside { } or [ ]: "${VAR}"'
    return ""


def parse_located(text: str, source: str) -> Located:
    """Parse one YAML document into :class:`Located`; errors become located ConfigErrors."""
    bounds.check_size(len(text.encode("utf-8", "surrogatepass")), source)
    bounds.check_structure(text, source)
    try:  # the reader checks a text whole when it is made: a NUL is refused here
        loader = _LocatingLoader(text)
    except yaml.reader.ReaderError as err:
        raise _unreadable(err, text, source) from None
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        where = _mark(source, err.problem_mark or err.context_mark)
        problem = err.problem or "invalid YAML"
        context = f" ({err.context})" if err.context else ""
        fix = _syntax_fix(problem, text, err.problem_mark)
        raise ConfigError(f"YAML syntax error: {problem}{context}{fix}", where) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"YAML error: {err}", source) from None
    finally:
        loader.dispose()
    located = Located(data=None, source=source)
    if root is None:
        raise ConfigError("the pipeline file is empty", _mark(source, None))
    budget = bounds.ValueBudget(source)
    located.data = _build(root, (), located, loader, budget)
    return located


def _unreadable(err: yaml.reader.ReaderError, text: str, source: str) -> ConfigError:
    """A character YAML does not allow (NUL, a raw control character), placed at its
    ``line:column``: PyYAML says "position 196" of "<unicode string>", on two lines."""
    at = max(0, min(int(err.position), len(text)))
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    code = err.character if isinstance(err.character, int) else ord(str(err.character)[:1] or " ")
    escape = f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    fix = f"remove it, or write it as the escape {escape} inside a double-quoted string"
    if 0xDC80 <= code <= 0xDCFF:  # a byte of an argument that is not UTF-8 (surrogateescape)
        # The escape names a file or folder to read; a sink refuses it in an output's name
        # (the manifest cannot list it), so that is said here, not after a second try.
        fix = (
            f"it stands for the byte 0x{code - 0xDC00:02X}, which is not UTF-8: to name a file "
            f"or folder whose name holds it, write it as the escape {escape} inside a "
            "double-quoted string (an output's own name cannot hold it: name the output in "
            "UTF-8); else remove it"
        )
    return ConfigError(
        f"character U+{code:04X} is not allowed in a YAML file ({err.reason}): {fix}",
        Place.in_file(source, line, column),
    )


def _build(
    node: yaml.Node,
    path: Path,
    located: Located,
    constructor: _LocatingLoader,
    budget: bounds.ValueBudget,
    via: _Alias | None = None,
) -> Any:
    alias = constructor.aliases.get(id(node))
    if alias is not None and via is None:  # an alias inside an alias: placed at the outer one
        via = _Alias(_mark(located.source, node.start_mark), alias[0], alias[1])
    located.values[path] = _placed(located.source, node.start_mark, via)
    budget.spend(located.values[path])
    if node.tag not in _SAFE_TAGS:
        raise ConfigError(
            f"YAML tag {node.tag!r} is not allowed: pipeline files are plain data "
            "(strings, numbers, booleans, null, lists, mappings)",
            located.values[path],
        )
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise ConfigError(
                    "mapping keys must be plain strings",
                    _placed(located.source, key_node.start_mark, via),
                )
            key = str(key_node.value)
            where = _placed(located.source, key_node.start_mark, via)
            if key == "<<":
                raise ConfigError(
                    "YAML merge keys ('<<') are not supported: write the keys it would merge "
                    "in this mapping",
                    where,
                )
            if key in result:
                first = located.keys[(*path, key)]
                raise ConfigError(f"duplicate key {key!r} (first given at {first})", where)
            located.keys[(*path, key)] = where
            result[key] = _build(value_node, (*path, key), located, constructor, budget, via)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, (*path, i), located, constructor, budget, via)
            for i, item in enumerate(node.value)
        ]
    if node.tag == "tag:yaml.org,2002:int":
        bounds.check_integer(str(node.value), located.values[path])
    if node.tag != "tag:yaml.org,2002:str":
        located.scalars[path] = str(node.value)
    try:
        return constructor.construct_object(node, deep=True)
    except ConstructorError as err:
        raise ConfigError(f"invalid value: {err.problem}", located.values[path]) from None


def locate_data(data: Any, source: str) -> Located:
    """Plain data built in code, as :class:`Located`: each value's place is its key path.

    A pipeline given as a ``dict`` is validated exactly as a file is; its problems are
    located by the path of keys that leads to them (``Pipeline.from_dict['model']['with']``)
    instead of a line and a column. Only what a YAML file could hold is accepted (string
    keys; strings, numbers, booleans, None, lists and mappings), within the same bounds.
    """
    located = Located(data=None, source=source)
    budget = bounds.ValueBudget(source)
    located.data = _copy_data(data, (), located, budget, ())
    if not isinstance(located.data, dict):
        raise ConfigError(
            f"a pipeline is a mapping, not {described(located.data)}", located.where(())
        )
    return located


_KINDS = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list"}


def described(value: Any) -> str:
    """What a document that should be a mapping is, in YAML's words: "a string", "empty
    (null)", where Python's type names said "a str" and "a NoneType"."""
    return "empty (null)" if value is None else _KINDS.get(type(value), a_type(value))


def _data_place(source: str, path: Path) -> str:
    return source + "".join(f"[{step!r}]" for step in path)


def _copy_data(
    value: Any, path: Path, located: Located, budget: bounds.ValueBudget, inside: tuple[int, ...]
) -> Any:
    """``value`` copied as plain data, within the bounds of a file.

    ``inside`` holds the ids of the lists and mappings that hold ``value``: a list that
    holds itself never ends, and data nested deeper than a file may be raised
    ``RecursionError`` here, not a located message, as a file's is (``bounds``).
    """
    where = located.values[path] = _data_place(located.source, path)
    budget.spend(where)
    if isinstance(value, dict | list | tuple):
        _check_nesting(value, path, where, inside)
        inside = (*inside, id(value))
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"mapping keys must be strings, not {key!r}", where)
            located.keys[(*path, key)] = _data_place(located.source, (*path, key))
            result[key] = _copy_data(item, (*path, key), located, budget, inside)
        return result
    if isinstance(value, list | tuple):
        return [
            _copy_data(item, (*path, i), located, budget, inside) for i, item in enumerate(value)
        ]
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        bounds.check_int(value, where)
        return value
    raise ConfigError(
        f"a {type(value).__name__} is not pipeline data (strings, numbers, booleans, None, "
        "lists and mappings only)",
        where,
    )


def _check_nesting(value: Any, path: Path, where: str, inside: tuple[int, ...]) -> None:
    """Refuse a list or mapping that holds itself, or one nested deeper than a file may be."""
    if id(value) in inside:
        raise ConfigError(
            f"this {type(value).__name__} holds itself (its value would never end): "
            "pipeline data is a tree; give a copy instead of the same object",
            where,
        )
    if len(inside) >= bounds.MAX_DEPTH:
        raise ConfigError(
            f"the pipeline nests mappings and lists more than {bounds.MAX_DEPTH} deep; a "
            "pipeline is a page of settings",
            where,
        )
