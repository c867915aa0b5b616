"""The docs' tables of a component's ``with:`` fields say what its ``Config`` says.

docs/pipelines.md gives each first-party component a section (``### sink `jsonl```) with a
table ``| field | type | default | description |`` of its ``with:`` fields, written by
hand. Nothing tied the tables to the code, and they drifted: the ``bert-encoder`` table's
``weights`` row never learned of ``split-zip:<name>`` weights, a default was written with a
gloss no other row has, and ``mpnet-encoder`` had no section at all. Here every row is
checked against the Config of the installed component its section names:

- the rows name every field and no other (a field whose value is a nested config, such as
  ``bert-encoder``'s ``prefix``, has a table of its own below, after a line `` `prefix:` ``);
- the default is ``required`` for a required field, else the JSON of the default in
  backticks (a nested config's default is written by the fields it sets: ``{}``);
- the type is the annotation in the page's words (``integer or null``; a ``Literal`` as
  its choices, each in backticks, so that none is left out);
- a ``scheme:<...>`` source that the field's description names (``package:<module>``,
  ``split-zip:<name>``) is named in the row too.

The description itself may say more than the code's and is not compared. A few pages
show a component's fields in a shorter table, ``| field | default | meaning |`` with the
defaults in words (``unset``, ``1 MiB``): those are checked for names and for defaults
that can be read as a value. Attention implementations are listed on pipelines.md in a
table ``| name | settings |``, in prose: each row must name every field of each
implementation it lists (and every choice of a ``Literal``), and every first-party
implementation must have a row. Every first-party loader, model, monitor, sink and
executor must have its section on pipelines.md.
"""

from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from seamline.core.registry import Registry
from seamline.core.trust import EVERYONE
from tests.docs.workdir import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PIPELINES = ROOT / "docs" / "pipelines.md"
FIRST_PARTY = {"seamline-components", "seamline-adapters"}
SECTIONED_KINDS = ("loader", "model", "monitor", "sink", "executor")

SECTION = re.compile(r"^#{2,6} (attention|model|loader|sink|monitor|executor) `([\w-]+)`\s*$")
HEADING = re.compile(r"^#{1,6} ")
FULL_HEADER = re.compile(r"^\| field \| type \| default \| (description|meaning) \|\s*$")
SETTINGS_HEADER = re.compile(r"^\| name \| settings \|\s*$")
SHORT_HEADER = re.compile(r"^\| field \| default \| meaning \|\s*$")
NESTED_LABEL = re.compile(r"^`(\w+):`")
FIELD_CELL = re.compile(r"^`(\w+)`$")
SOURCE_PREFIX = re.compile(r"'([a-z][a-z0-9-]*):<")

SHORT_TABLES = {
    ("docs/scaling.md", "## `run.executor` fields"): ("executor", "ray"),
    ("docs/observability.md", "## The memory monitor"): ("monitor", "memory"),
}
"""Shorter tables of a component's fields on pages whose headings do not name it: the
heading they lie under, and the component."""

SIZES = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


@dataclass(frozen=True)
class Row:
    where: str
    field: str
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """One table of fields: the component it documents and, for a nested table, the path of
    field names that leads to its config (``("prefix",)``)."""

    where: str
    kind: str
    name: str
    nested: tuple[str, ...]
    short: bool
    rows: tuple[Row, ...]

    def __str__(self) -> str:
        inner = "".join(f".{part}" for part in self.nested)
        return f"{self.where} {self.kind}:{self.name}{inner}"


def _cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1])


def _rows(page: Path, lines: list[str], header: int) -> tuple[Row, ...]:
    """The body rows of the table whose header is ``lines[header]``."""
    rows = []
    number = header + 2  # past the |---| line
    while number < len(lines) and lines[number].startswith("|"):
        cells = _cells(lines[number])
        match = FIELD_CELL.match(cells[0])
        where = f"{page.relative_to(ROOT)}:{number + 1}"
        rows.append(Row(where, match.group(1) if match else cells[0], cells))
        number += 1
    return tuple(rows)


def _label(lines: list[str], header: int) -> str | None:
    """The nested field a table is of: the line `` `prefix:` `` before it, if that is one."""
    for line in reversed(lines[:header]):
        if line.strip():
            match = NESTED_LABEL.match(line.strip())
            return match.group(1) if match else None
    return None


def page_tables(page: Path) -> tuple[list[Table], list[tuple[str, str, str]]]:
    """The field tables of a page, and its component sections as ``(page:line, kind, name)``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    relative = str(page.relative_to(ROOT))
    tables: list[Table] = []
    sections = []
    component: tuple[str, str] | None = None
    fenced = False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        if HEADING.match(line):
            match = SECTION.match(line)
            component = SHORT_TABLES.get((relative, line.strip()))
            if match:
                component = (match.group(1), match.group(2))
                sections.append((f"{relative}:{index + 1}", *component))
        short = bool(SHORT_HEADER.match(line))
        if not (FULL_HEADER.match(line) or short):
            continue
        where = f"{relative}:{index + 1}"
        if component is None:
            if short:
                continue  # a short table of something else: run, telemetry, trust ...
            raise AssertionError(f"{where}: a field table outside a component's section")
        label = _label(lines, index)
        nested = (label,) if label else ()
        tables.append(Table(where, *component, nested, short, _rows(page, lines, index)))
    return tables, sections


def all_tables() -> list[Table]:
    return [table for page in PAGES for table in page_tables(page)[0]]


def all_rows() -> list[Any]:
    """``(table, row)`` of every row, each named by its page and line."""
    return [pytest.param(table, row, id=row.where) for table in all_tables() for row in table.rows]


def pipelines_sections() -> list[tuple[str, str, str]]:
    """``(page:line, kind, name)`` of each component's section on pipelines.md."""
    return page_tables(PIPELINES)[1]


def section_params() -> list[Any]:
    return [
        pytest.param(*section, id=f"{section[0]} {section[1]}:{section[2]}")
        for section in pipelines_sections()
    ]


def settings_rows() -> list[Any]:
    """The rows of the ``| name | settings |`` tables of the attention implementations."""
    found = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            if SETTINGS_HEADER.match(line):
                found.extend(pytest.param(row, id=row.where) for row in _rows(page, lines, index))
    return found


# What the code says, in the page's words.


def _arms(annotation: Any) -> list[Any]:
    """The alternatives of a union (``X | None``), each without its ``Annotated`` metadata."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _arms(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [arm for part in typing.get_args(annotation) for arm in _arms(part)]
    return [annotation]


def _words(annotation: Any) -> list[str]:
    """One alternative's words: ``integer``, or each choice of a ``Literal``."""
    if annotation is type(None):
        return ["null"]
    if typing.get_origin(annotation) is typing.Literal:
        return [f"`{choice}`" for choice in typing.get_args(annotation)]
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return [f"list of {_words(item)[0]}s"]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel | dict):
        return ["mapping"]
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    if annotation in names:
        return [names[annotation]]
    raise AssertionError(f"no words for the type {annotation!r}: add them to this test")


def type_words(field: FieldInfo) -> str:
    """``integer or null``; ```mean``, ``cls``, ``max`` or null``."""
    words = [word for arm in _arms(field.annotation) for word in _words(arm)]
    nulls = [word for word in words if word == "null"]
    words = [word for word in words if word != "null"] + nulls[:1]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def default_words(field: FieldInfo) -> str:
    """``required``, or the JSON of the default in backticks."""
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_defaults=True)
    return f"`{json.dumps(to_jsonable_python(value))}`"


def nested_model(annotation: Any) -> type[BaseModel] | None:
    """The config model a field's value is (``PrefixConfig``, or ``X | None`` of one)."""
    models = [arm for arm in _arms(annotation) if isinstance(arm, type)]
    models = [arm for arm in models if issubclass(arm, BaseModel)]
    return models[0] if models else None


def read_short_default(cell: str) -> tuple[bool, Any]:
    """A short table's default in words: ``(True, value)``, or ``(False, None)`` when the
    words are prose this test cannot read (``actors``)."""
    text = cell.replace("`", "").strip()
    if text.split(":")[0] in {"unset", "none", "null"}:
        return True, None
    size = re.fullmatch(r"(\d+) (KiB|MiB|GiB)", text)
    if size:
        return True, int(size.group(1)) * SIZES[size.group(2)]
    try:
        return True, json.loads(text)
    except json.JSONDecodeError:
        return False, None


# The tests.


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.discover(EVERYONE)


def config_of(registry: Registry, table: Table) -> type[BaseModel]:
    info = next(
        (i for i in registry.entries() if (i.kind, i.name) == (table.kind, table.name)), None
    )
    if info is None or not info.usable:
        pytest.skip(f"{table.kind} {table.name!r} is not installed here")
    model: type[BaseModel] = registry.config_model(info.kind, info.name)
    for name in table.nested:
        assert name in model.model_fields, f"{table}: {model.__name__} has no field {name!r}"
        inner = nested_model(model.model_fields[name].annotation)
        assert inner is not None, f"{table}: {name!r} is not a nested config, so has no table"
        model = inner
    return model


def test_the_pages_have_field_tables_to_check() -> None:
    tables = all_tables()
    assert sum(not table.short for table in tables) >= 15, "the pattern no longer finds them"
    found = {(table.kind, table.name) for table in tables if table.short}
    assert found == set(SHORT_TABLES.values()), "a short table was not found under its heading"


@pytest.mark.parametrize("table", all_tables(), ids=str)
def test_a_table_names_every_field_once(table: Table, registry: Registry) -> None:
    model = config_of(registry, table)
    named = [row.field for row in table.rows]
    assert sorted(named) == sorted(set(named)), f"{table}: a field has two rows"
    missing = [field for field in model.model_fields if field not in named]
    assert not missing, f"{table}: no row for {missing} of {model.__name__}"


@pytest.mark.parametrize(("table", "row"), all_rows())
def test_a_row_says_what_the_config_says(table: Table, row: Row, registry: Registry) -> None:
    model = config_of(registry, table)
    field = model.model_fields.get(row.field)
    assert field is not None, f"{row.where}: {model.__name__} has no field {row.field!r}"
    if table.short:
        readable, value = read_short_default(row.cells[1])
        if readable:
            default = None if field.is_required() else field.get_default()
            assert value == default, f"{row.where}: the default is {default!r}"
        return
    _, type_cell, default_cell, description = row.cells
    assert default_cell == default_words(field), f"{row.where}: the default cell is wrong"
    assert type_cell == type_words(field), f"{row.where}: the type cell is wrong"
    for prefix in SOURCE_PREFIX.findall(field.description or ""):
        assert f"{prefix}:" in description, f"{row.where}: the row never names '{prefix}:'"


@pytest.mark.parametrize(("where", "kind", "name"), section_params())
def test_a_section_has_a_table_of_each_config_it_holds(
    where: str, kind: str, name: str, registry: Registry
) -> None:
    """A component with fields has its table; a field that is a nested config, one more."""
    tables = [t for t in all_tables() if (t.kind, t.name) == (kind, name) and not t.short]
    model = config_of(registry, Table(where, kind, name, (), False, ()))
    expected = {()} if model.model_fields else set()
    expected |= {
        (field,) for field, info in model.model_fields.items() if nested_model(info.annotation)
    }
    assert {table.nested for table in tables} == expected, f"{where}: tables missing or extra"


@pytest.mark.parametrize("row", settings_rows())
def test_an_attention_row_names_its_settings(row: Row, registry: Registry) -> None:
    """Each implementation a row names has its fields named there (``none`` when it has none),
    with every choice of a ``Literal`` field."""
    names = re.findall(r"`([\w-]+)`", row.cells[0])
    settings = row.cells[1]
    for name in names:
        model = registry.config_model("attention", name)
        if not model.model_fields:
            assert settings.startswith("none"), f"{row.where}: {name} has no settings"
        for field, info in model.model_fields.items():
            assert f"`{field}`" in settings, f"{row.where}: {name}'s {field!r} is not named"
            choices = [c for arm in _arms(info.annotation) for c in _words(arm) if "`" in c]
            missing = [choice for choice in choices if choice not in settings]
            assert not missing, f"{row.where}: {name}'s {field!r} may also be {missing}"


def test_every_first_party_attention_has_its_settings_named(registry: Registry) -> None:
    named = {
        name
        for param in settings_rows()
        for name in re.findall(r"`([\w-]+)`", param.values[0].cells[0])
    }
    missing = [
        info.name
        for info in registry.entries("attention")
        if info.distribution in FIRST_PARTY | {"seamline-cpu-flash"} and info.name not in named
    ]
    assert not missing, f"no settings row names {missing}"


def test_every_first_party_component_has_a_section(registry: Registry) -> None:
    sections = {(kind, name) for _, kind, name in pipelines_sections()}
    missing = [
        f"{info.kind} {info.name}"
        for info in registry.entries()
        if info.distribution in FIRST_PARTY
        and info.kind in SECTIONED_KINDS
        and (info.kind, info.name) not in sections
    ]
    assert not missing, f"docs/pipelines.md has no section for {missing}"
