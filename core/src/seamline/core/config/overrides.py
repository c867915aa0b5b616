"""Command-line overrides: ``--set model.with.max_length=128``.

The path is dotted (list items by index, ``monitors.0.use``); the value is
parsed as a YAML scalar or flow collection, so ``128`` is an integer and
``[a, b]`` a list, by the same rules and within the same bounds as the file
(``parse_located``: safe tags, YAML 1.2 booleans, no 5,000-digit integers). A
value that is not valid YAML (``**/*.md``, which YAML reads as an alias) is the
plain string the user typed.
Errors name the override itself, since it has no file line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from seamline.contracts import ConfigError
from seamline.contracts.untrusted import a_type, cut, is_count
from seamline.core.config.located import Located, parse_located
from seamline.core.config.place import Place
from seamline.core.config.spec import SHORT_FORMS

PREFIX = "--set "
"""How an override's location begins (it has no file line)."""


def is_override(location: str) -> bool:
    """Whether a value's location is a ``--set`` override: the user's command line."""
    return location.startswith(PREFIX)


def apply_overrides(located: Located, overrides: Sequence[str]) -> None:
    """Apply each ``path=value`` to ``located.data`` in order; record its origin as location."""
    for override in checked_overrides(overrides):
        where = Place.given(f"{PREFIX}{cut(override, SHOWN_CHARACTERS)}")
        path_text, sep, value_text = override.partition("=")
        if not sep or not path_text.strip():
            raise ConfigError(
                "an override must look like path.to.field=value: write it as --set "
                "path.to.field=value (model.with.max_length=128)",
                where,
            )
        _refuse_brackets(path_text.strip(), value_text, where)
        value = _value(path_text.strip(), value_text, where)
        keys = [part.strip() for part in path_text.strip().split(".")]
        if any(not part for part in keys):
            raise ConfigError(f"empty segment in path {path_text!r}", where)
        landed = _assign(located, keys, value, where)
        if not isinstance(value, str):  # YAML read it as something else: kept as typed
            located.typed[landed] = value_text


_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")
"""A list index in brackets, as jq or Python write it (``monitors[0]``)."""


def _refuse_brackets(path: str, value_text: str, where: str) -> None:
    """Refuse a path with a list index in brackets, naming the dotted path that means it.

    ``--set 'monitors[0].with.x=1'`` was answered ``unknown field 'monitors[0]' (did you
    mean 'monitors'?)``, and ``--set monitors.with.x=1`` then failed too. A pipeline's keys
    never hold brackets, so the meaning is plain.
    """
    if not _BRACKETED.search(path):
        return
    dotted = _BRACKETED.sub(r".\1", path).replace("..", ".")
    word = f"{dotted}={value_text}"
    given = (
        "--set '" + word.replace("'", "'\\''") + "'"
        if re.search(r"[^\w./=:-]", word)
        else f"--set {word}"
    )
    raise ConfigError(
        f"a list item is given by its index after a dot, not in brackets: write {given}",
        where,
    )


def overrides_below(located: Located, path: tuple[str | int, ...]) -> list[str]:
    """The ``--set`` overrides that gave a value inside the one at ``path`` (not ``path``
    itself), as typed, in the order given."""
    below = (
        where
        for at, where in located.values.items()
        if len(at) > len(path) and at[: len(path)] == tuple(path) and is_override(where)
    )
    return list(dict.fromkeys(below))


def with_overrides(where: str, overrides: Sequence[str]) -> str:
    """``where``, a place in the file, naming the ``overrides`` that changed a value inside
    it: ``p.yaml:3:34 (with --set model.with.max_length=16)``. A problem of a whole section
    placed at the file alone would send the user looking in the file for a value they
    typed on the command line."""
    if isinstance(where, Place):
        return where.with_overrides(overrides)
    return f"{where} (with {', '.join(overrides)})" if overrides else where


def checked_overrides(overrides: object) -> list[str]:
    """``overrides`` as a list of str, refused with a ``TypeError`` if they are not one.

    A caller from Python who writes ``Pipeline.from_yaml(path, "run.batch_tokens=256")``
    passed a str, which is a sequence too: each of its characters was taken for an
    override, and the error named the first one (``--set r``), not the mistake.
    """
    if isinstance(overrides, str | bytes) or not isinstance(overrides, Iterable):
        raise TypeError(
            f"overrides must be a list of 'path.to.field=value' strs, not a "
            f"{type(overrides).__name__}: pass {_as_list(overrides)}"
        )
    listed = list(overrides)
    for index, override in enumerate(listed):
        if not isinstance(override, str):
            raise TypeError(f"overrides[{index}] is {a_type(override)}, not a str")
    return listed


def _as_list(overrides: object) -> str:
    """How to pass ``overrides`` as a list, for a message (one shortened str)."""
    if isinstance(overrides, str):
        return f"[{cut(overrides, SHOWN_CHARACTERS)!r}]"
    return "a list, such as ['run.batch_tokens=256']"


SHOWN_CHARACTERS = 120
"""How much of an override a message repeats as its place (its value may be huge)."""


def set_quoted(path: str, text: str) -> str:
    """The ``--set`` that passes ``text`` to ``path`` as a string, as a POSIX shell takes it:
    ``text`` double-quoted for YAML (a JSON string is one: its ``"``, ``\\`` and control
    characters escaped, its spaces kept), the whole in the shell's single quotes (a ``'``
    in it written ``'\\''``). A hint that put the text between ``"`` as it was gave YAML
    that does not parse for a value holding ``"``, and dropped a value's edge spaces."""
    word = f"{path}={json.dumps(text, ensure_ascii=False)}"
    return "--set '" + word.replace("'", "'\\''") + "'"


def _value(path: str, text: str, where: str) -> Any:
    """The override's value: a YAML scalar or flow collection, else the text as a string.

    A shell passes ``--set loader.with.glob='**/*.md'`` as ``**/*.md``, which YAML reads
    as an alias (``*``) and refuses; what the user meant is plain: the string. So text
    that is not valid YAML is taken as it is, unless it opens a flow collection (``[``,
    ``{``), whose syntax error is reported with how to quote it.
    """
    if not text.strip():
        return ""
    try:
        value = parse_located(text, where).data
    except ConfigError as err:
        stripped = text.strip()
        if not err.detail.startswith("YAML syntax error"):
            _refuse_dropped(path, text, where)  # `#x` read as nothing: "the file is empty"
            raise ConfigError(_in_value(err, where), where) from None
        if stripped[0] in "[{":
            raise ConfigError(
                f"{err.detail}; to pass it as a string, quote it for YAML inside the shell's "
                f"quotes: {set_quoted(path, stripped)}",
                where,
            ) from None
        return text
    _refuse_dropped(path, text, where)  # only text YAML reads can lose a part to it
    return value


def _in_value(err: ConfigError, where: str) -> str:
    """``err``, raised while reading an override's value, as said at the override: its
    column in the value, when it has one. Placed where the value was parsed, it named a
    "file" ``--set run={...}`` with a line and a column (and ``--format json`` so)."""
    place = err.location
    column = place.column if isinstance(place, Place) and place.line == 1 else None
    column = column if column != 1 else None  # the whole value: nothing to point at
    detail = re.sub(re.escape(where) + r":1:(\d+)", r"column \1 of the value", err.detail)
    return f"{detail} (at column {column} of the value)" if column else detail


def _refuse_dropped(path: str, text: str, where: str) -> None:
    """A ``ConfigError`` if YAML drops a part of ``text`` (:func:`_dropped_by_yaml`)."""
    dropped = _dropped_by_yaml(text)
    if dropped:
        raise ConfigError(
            f"YAML reads {dropped} and drops it from the value: leave it out, or, to pass the "
            f"text as it is, quote it for YAML inside the shell's quotes: "
            f"{set_quoted(path, text.strip())}",
            where,
        )


def _dropped_by_yaml(text: str) -> str:
    """What YAML would silently drop from ``text`` ("" if nothing), in words.

    ``--set 'sink.with.path=out/a #1.jsonl'`` published ``out/a``: ``#1.jsonl`` was a
    comment; ``&a out/b.jsonl`` lost its ``&a`` (an anchor). Text YAML cannot read at all
    is taken whole already; this is text it reads, and shortens.
    """
    try:
        tokens = list(yaml.scan(text))
    except yaml.YAMLError:
        return ""
    # An anchor no alias of the value names is dropped; one an alias names is YAML at work
    # (refused, when it loops, by the parse). An alias alone (`*txt`) fails the parse, and
    # is then the text typed, as a glob is.
    if not any(isinstance(token, yaml.AliasToken) for token in tokens):
        for token in tokens:
            if isinstance(token, yaml.AnchorToken):
                return f"{text[token.start_mark.index : token.end_mark.index]!r} as an anchor"
    content = [t for t in tokens if not isinstance(t, yaml.StreamStartToken | yaml.StreamEndToken)]
    end = content[-1].end_mark.index if content else 0
    rest = text[end:].strip()
    return f"{rest!r} as a comment" if rest.startswith("#") else ""


def _assign(located: Located, keys: list[str], value: Any, where: str) -> tuple[str | int, ...]:
    """Put ``value`` at ``keys`` (the path of a ``--set``); where it landed (a list's items
    by index; a short form's section, ``precision=bfloat16``, at its ``use``)."""
    if not isinstance(located.data, dict):
        raise ConfigError("the pipeline is not a mapping, so it cannot be overridden", where)
    node: Any = located.data
    path: tuple[str | int, ...] = ()
    for depth, key in enumerate(keys):
        last = depth == len(keys) - 1
        step: str | int = key
        if isinstance(node, list):
            if not is_count(key) or int(key) >= len(node):  # isdigit() alone accepted '²'
                raise ConfigError(
                    f"{'.'.join(keys[:depth]) or 'the pipeline'} is a list of {len(node)}: "
                    f"{cut(key, 40)!r} is not an index in it",
                    where,
                )
            step = int(key)
        elif not isinstance(node, dict):
            raise ConfigError(f"{'.'.join(keys[:depth])} is {a_type(node)}, not a mapping", where)
        if not last and depth == 0 and isinstance(node.get(step), str | list):
            node[step] = _expanded(str(step), node[step])
        if last and depth == 0 and _short_into_mapping(str(step), node.get(step), value):
            node, step = node[step], SHORT_FORMS[str(step)]  # only its `use`: see below
            path = (*path, keys[0])
        path = (*path, step)
        if last:
            node[step] = value
            _forget(located, path)
            located.values[path] = where
            if path in located.keys:
                # The file's key stays written, but what is under it is the override's: an
                # unknown key inside `--set 'precision={gates: {}}'` was placed at the
                # file's `precision:` line, where no such key was ever written.
                located.keys[path] = where
        else:
            if isinstance(node, dict) and (step not in node or node[step] is None):
                if is_count(keys[depth + 1]):
                    raise ConfigError(_no_list(keys[: depth + 1], keys[depth + 2 :], where), where)
                node[step] = {}
                located.values[path] = where
            node = node[step]
    return path


def _no_list(name: list[str], rest: list[str], where: str) -> str:
    """Why ``--set monitors.0.use=log`` cannot add to a list the pipeline does not have,
    and the ``--set`` that gives the whole list instead (a missing mapping is created; a
    list item cannot be: which items would come before it?)."""
    item = where.partition("=")[2].strip() or "..."
    for key in reversed(rest):
        item = f"{{{key}: {item}}}"
    joined = ".".join(name)
    return (
        f"the pipeline has no {joined}, so there is no item to set in it; give the whole "
        f"list instead: --set '{joined}=[{item}]'"
    )


def _expanded(section: str, value: Any) -> Any:
    """A section written in its short form (``precision: auto``) as the mapping it means
    (``{use: auto}``), so that a ``--set`` of a key inside it adds to it; any other value
    as it is (setting a key inside it is then refused, naming what it is)."""
    key = SHORT_FORMS.get(section)
    return {key: value} if key is not None else value


def _short_into_mapping(section: str, present: Any, value: Any) -> bool:
    """Whether ``--set precision=bfloat16`` lands on a section the file writes in full
    (``precision: {use: auto, gate: {min_cosine: 0.99999}}``): then the short form sets
    only the name it abbreviates (``use``) and the file's other keys stay. Replacing the
    whole section dropped a stricter gate without a word; a mapping given to ``--set``
    (``--set 'precision={use: bfloat16}'``) still replaces it all."""
    return section in SHORT_FORMS and isinstance(present, dict) and isinstance(value, str | list)


def _forget(located: Located, prefix: tuple[str | int, ...]) -> None:
    """Drop locations under a replaced value: they point at text that no longer applies.

    The replaced strings' record of interpolated variables goes too: the override's
    value came from the command line, not from the environment.
    """
    for table in (located.values, located.keys):
        for path in [p for p in table if p[: len(prefix)] == prefix and p != prefix]:
            del table[path]
    for path in [p for p in located.interpolated if p[: len(prefix)] == prefix]:
        del located.interpolated[path]
    for path in [p for p in located.scalars if p[: len(prefix)] == prefix]:
        del located.scalars[path]
    for path in [p for p in located.typed if p[: len(prefix)] == prefix]:
        del located.typed[path]
