"""Environment variables a pipeline would send off this machine, refused unless the user allows.

``${TOKEN}`` is a convenience for local values: a path, a batch size. In a value that
leaves the machine it is a way out for a secret: ``otlp_endpoint:
"http://host/${AWS_SECRET_ACCESS_KEY}"`` sends the key to any host in the URL's
path, and a host name carries it to a DNS resolver. Fields whose value leaves the
machine are marked with :class:`~seamline.contracts.LeavesMachine` (the pipeline's
own sections, and any component's ``Config``); after a section is validated, two
things are refused, each at its ``file:line:column`` and naming the variable, never
its value:

* a variable filled into a marked field (or anything inside it);
* a variable the destination a marked field names would be sent anyway
  (``LeavesMachine.carries``: the OTLP exporters send ``OTEL_EXPORTER_OTLP_HEADERS``
  to whatever receiver they are given), when the pipeline file sets that field. The
  same variable beside a receiver the environment chose is the user's own doing.

unless the user's config names the variable in ``trust.network_variables``. A value
given on the command line (``--set``) is the user's too, and is not checked.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from seamline.contracts import ConfigError, LeavesMachine
from seamline.contracts.home import home_directory
from seamline.core.config.located import Located
from seamline.core.config.located import Path as DataPath
from seamline.core.config.overrides import is_override
from seamline.core.config.user import user_config_path
from seamline.core.trust import TrustPolicy


def network_problems(
    located: Located,
    model: type[BaseModel],
    base: DataPath,
    trust: TrustPolicy,
    environ: Mapping[str, str],
) -> list[ConfigError]:
    """What ``model``'s section at ``base`` (already validated) would send that it may not."""
    data = _at(located.data, base)
    problems = []
    for path, marker in _marked(model, data, base):
        dotted = ".".join(str(p) for p in path)
        where = located.where(path)
        used = {
            name
            for at, variables in located.interpolated.items()
            if at[: len(path)] == path
            for name in variables
        }
        for name in sorted(used - trust.network_variables):
            problems.append(
                ConfigError(
                    f"{dotted}: ${{{name}}} would be sent off this machine ({marker.what}); "
                    f"a pipeline may fill such a value from the environment only with the "
                    f"variables the user config lists in trust.network_variables: "
                    f"{_fix(name, trust)}, or write the value itself",
                    where,
                )
            )
        if _at(located.data, path) is None or is_override(where):
            continue
        for name in sorted(set(marker.carries) - trust.network_variables):
            if environ.get(name):
                problems.append(
                    ConfigError(
                        f"{dotted} ({marker.what}) is set by the pipeline file, and ${name} "
                        f"(set in the environment) would be sent along to it: "
                        f"{_fix(name, trust)} to send it to receivers pipeline files name, "
                        f"or name the receiver in the environment instead, or unset {name}",
                        where,
                    )
                )
    return problems


def _fix(name: str, trust: TrustPolicy) -> str:
    """Where to allow ``name``: the list in force, else the user config file (``~`` for home;
    ``$SEAMLINE_CONFIG`` where there is no home, so no default file)."""
    place = trust.network_source
    if not place:
        path = user_config_path()[0]
        home = home_directory()
        if path is None:
            place = "name one with $SEAMLINE_CONFIG: there is no home for the default one"
        elif home is not None and path.is_relative_to(home):
            place = f"~/{path.relative_to(home)}"
        else:
            place = str(path)
    return f"add {name} to trust.network_variables in the user config ({place})"


def _at(data: Any, path: DataPath) -> Any:
    """The value at ``path`` in ``data``, None when there is none."""
    for step in path:
        found = (isinstance(data, dict) and step in data) or (
            isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data)
        )
        if not found:
            return None
        data = data[step]
    return data


def _marked(annotation: Any, data: Any, path: DataPath) -> Iterator[tuple[DataPath, LeavesMachine]]:
    """Each place in ``data`` whose type in ``annotation`` is marked :class:`LeavesMachine`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        marker = next((m for m in annotation.__metadata__ if isinstance(m, LeavesMachine)), None)
        if marker is not None:
            yield path, marker
            return
        yield from _marked(typing.get_args(annotation)[0], data, path)
    elif origin in (typing.Union, types.UnionType):
        seen: set[DataPath] = set()
        for arm in typing.get_args(annotation):
            for found in _marked(arm, data, path):
                if found[0] not in seen:
                    seen.add(found[0])
                    yield found
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if isinstance(data, dict):
            yield from _fields(annotation, data, path)
    elif origin in (list, tuple, set, frozenset) and isinstance(data, list):
        (item, *_) = typing.get_args(annotation) or (Any,)
        for i, value in enumerate(data):
            yield from _marked(item, value, (*path, i))
    elif origin in (dict, Mapping) and isinstance(data, dict):
        args = typing.get_args(annotation)
        for key, value in data.items():
            yield from _marked(args[1] if len(args) == 2 else Any, value, (*path, key))


def _fields(
    model: type[BaseModel], data: dict[str, Any], path: DataPath
) -> Iterator[tuple[DataPath, LeavesMachine]]:
    for name, field in model.model_fields.items():
        key = next((k for k in (field.alias, name) if k and k in data), None)
        if key is None:
            continue
        marker = next((m for m in field.metadata if isinstance(m, LeavesMachine)), None)
        if marker is not None:
            yield (*path, key), marker
        else:
            yield from _marked(field.annotation, data[key], (*path, key))
