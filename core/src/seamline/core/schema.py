"""JSON Schema of pipeline files, including every installed component's ``with:`` block.

Editors (VS Code's YAML extension, for one) use it for completion and inline
errors: a ``use:`` picks the component and its config schema applies to ``with:``.

The schema must accept what ``seamline validate`` accepts, and its references must
resolve: a component's config schema keeps its own ``$defs`` (a nested model, such as
the lancedb sink's vector index), whose ``$ref``\\s point at the document's root, so
they are moved there, each under a name of its component's (``sink.lancedb.…``); the
short forms the spec reads (``precision: auto``) and every field of the ``attention``
section are described as they are written, not as the model stores them.

A third party's ``Config`` that has no JSON schema (a ``Callable`` field) made the whole
command fail with pydantic's traceback, for every other component too: that component's
``with:`` is left unchecked (any mapping), and the caller is told, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import structlog

from seamline.contracts import Kind
from seamline.core.config.spec import AUTO, PRECISION_NAMES, PipelineSpec
from seamline.core.registry import Registry

DEFS = "#/$defs/"
INTERPOLATED = {
    "type": "string",
    "pattern": r"\$\{",
    "description": "Filled from the environment (${VAR} or ${VAR:-default}) before the "
    "value is checked.",
}
"""Text that names an environment variable: seamline fills it before types are checked, so
``"${BATCH:-32}"`` may stand where a number, a boolean or a choice goes."""
TYPED = frozenset(["integer", "number", "boolean"])
NAMED_SCHEMAS = frozenset(["properties", "$defs", "patternProperties"])
LISTED_SCHEMAS = frozenset(["anyOf", "allOf", "oneOf", "prefixItems"])
ONE_SCHEMA = frozenset(["items", "additionalProperties", "not", "then", "else"])
"""The keywords whose values are schemas (by name, in a list, or one), walked into; ``if``
is not: it is the condition on a component's exact ``use``."""


def pipeline_schema(
    registry: Registry, warn: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a pipeline file for the installed components.

    ``warn`` is told of each component whose configuration has no JSON schema (logged as a
    warning when None)."""
    base = PipelineSpec.model_json_schema(by_alias=True)
    builder = _Builder(registry, base.setdefault("$defs", {}), warn or _logged)
    properties = base["properties"]
    for kind in ("loader", "model", "sink"):
        properties[kind] = builder.component(kind, properties[kind].get("description", ""))
    properties["monitors"] = {
        "type": "array",
        "description": properties["monitors"].get("description", ""),
        "items": builder.component("monitor", "A monitor."),
    }
    run = base["$defs"].get("RunSettings", {}).get("properties", {})
    if "executor" in run:
        run["executor"] = builder.component("executor", run["executor"].get("description", ""))
    builder.attention(base["$defs"]["AttentionSpecConfig"])
    properties["precision"] = _precision(base["$defs"]["PrecisionSettings"], properties)
    return {
        **_interpolable(base),
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "seamline pipeline",
    }


class _Builder:
    """Writes the components' parts of the schema; their own definitions go to ``defs``."""

    def __init__(
        self, registry: Registry, defs: dict[str, Any], warn: Callable[[str], None]
    ) -> None:
        self.registry = registry
        self.defs = defs
        self.warn = warn

    def config(self, kind: Kind, name: str) -> dict[str, Any]:
        """The schema of component ``name``'s ``with:`` block, its definitions moved to the
        root (``kind.name.Definition``) and its references pointed there (any mapping, said
        to ``warn``, when its ``Config`` has none)."""
        try:
            schema = self.registry.config_model(kind, name).model_json_schema(by_alias=True)
        except Exception as err:  # a plugin's Config: one component, not the whole schema
            return self._unchecked(kind, name, err)
        own: dict[str, Any] = schema.pop("$defs", {})
        moved = {DEFS + _token(key): DEFS + _token(f"{kind}.{name}.{key}") for key in own}
        for key, definition in own.items():
            self.defs[f"{kind}.{name}.{key}"] = _pointed(definition, moved)
        pointed: dict[str, Any] = _pointed(schema, moved)
        return pointed

    def _unchecked(self, kind: Kind, name: str, err: Exception) -> dict[str, Any]:
        info = self.registry.get(kind, name)
        why = str(err).strip().splitlines()[0] if str(err).strip() else "(no message)"
        self.warn(
            f"{kind} '{name}' (from {info.distribution} {info.version}): its Config has no "
            f"JSON schema ({type(err).__name__}: {why}), so the schema accepts any mapping as "
            "its 'with:' (seamline validate still checks it); ask its author to give each "
            "field a type JSON Schema can describe"
        )
        return {"type": "object", "description": f"The {kind}'s configuration (not described)."}

    def component(self, kind: Kind, description: str) -> dict[str, Any]:
        """``{use: <a registered name>, with: <that component's config>}``."""
        names = self.registry.names(kind)
        return {
            "type": "object",
            "description": description,
            "properties": {
                "use": {"enum": names, "description": f"Registered name of the {kind}."},
                "with": {"type": "object", "description": f"The {kind}'s configuration."},
            },
            "required": ["use"],
            "additionalProperties": False,
            "allOf": [_when_named(name, self.config(kind, name)) for name in names],
        }

    def attention(self, section: dict[str, Any]) -> None:
        """The ``attention`` section's definition, completed in place: ``use`` names the
        installed implementations; ``with`` is the named one's config, or for ``auto`` or
        a list, a mapping from candidate to its config; every other field as the spec's."""
        names = self.registry.names("attention")
        fields = section["properties"]
        fields["use"] = {
            "description": fields["use"].get("description", ""),
            "anyOf": [
                {"enum": [AUTO, *names]},
                # each once, as the spec's validator says (an editor passed [native, native])
                {"type": "array", "items": {"enum": names}, "minItems": 1, "uniqueItems": True},
            ],
        }
        fields["reference"] = {
            "description": fields["reference"].get("description", ""),
            "anyOf": [{"enum": names}, {"type": "null"}],
        }
        configs = {name: self.config("attention", name) for name in names}
        several = {
            "if": {"properties": {"use": {"anyOf": [{"const": AUTO}, {"type": "array"}]}}},
            "then": {
                "properties": {
                    "with": {
                        "type": "object",
                        "properties": {
                            name: {"anyOf": [config, {"type": "null"}]}
                            for name, config in configs.items()
                        },
                        "additionalProperties": False,
                    }
                }
            },
        }
        section["allOf"] = [
            *(_when_named(name, config) for name, config in configs.items()),
            several,
        ]


def _precision(settings: dict[str, Any], properties: Mapping[str, Any]) -> dict[str, Any]:
    """``precision`` as it may be written: a name, a preference list, or the mapping."""
    fields = settings["properties"]
    short = [
        {"enum": [*PRECISION_NAMES, AUTO]},
        {
            "type": "array",
            "items": {"enum": list(PRECISION_NAMES)},
            "minItems": 1,
            "uniqueItems": True,  # each once, as the spec's validator says
        },
    ]
    fields["use"] = {"description": fields["use"].get("description", ""), "anyOf": short}
    return {
        "description": properties["precision"].get("description", ""),
        "anyOf": [*short, {"$ref": DEFS + "PrecisionSettings"}],
    }


def _when_named(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """``with`` is ``config`` where ``use`` is ``name``; and ``with`` is required where that
    config has a required field (``model: {use: bert-encoder}`` without ``weights`` passed the
    schema, while ``validate`` refused it)."""
    then: dict[str, Any] = {"properties": {"with": config}}
    if config.get("required"):
        then["required"] = ["with"]
    return {"if": {"properties": {"use": {"const": name}}, "required": ["use"]}, "then": then}


def _interpolable(schema: Any) -> Any:
    """``schema`` with each number, boolean or choice also taking text that names a variable
    (:data:`INTERPOLATED`); the conditions that pick a component's ``with:`` (``if``) keep
    their exact names, and values (``default``, ``enum``) are left as they are."""
    if not isinstance(schema, dict):
        return schema  # ``true``/``false`` as a schema
    walked = dict(schema)
    for key, value in schema.items():
        if key in NAMED_SCHEMAS:
            walked[key] = {name: _interpolable(item) for name, item in value.items()}
        elif key in LISTED_SCHEMAS:
            walked[key] = [_interpolable(item) for item in value]
        elif key in ONE_SCHEMA:
            walked[key] = _interpolable(value)
    if walked.get("type") in TYPED or "enum" in walked or "const" in walked:
        described = {key: walked[key] for key in ("description", "title") if key in walked}
        return {**described, "anyOf": [walked, INTERPOLATED]}
    return walked


def _token(key: str) -> str:
    """``key`` as a JSON Pointer token (RFC 6901): ``~`` and ``/`` escaped."""
    return key.replace("~", "~0").replace("/", "~1")


def _pointed(node: Any, moved: Mapping[str, str]) -> Any:
    """``node`` with each ``$ref`` to a moved definition pointing at its new place."""
    if isinstance(node, dict):
        return {
            key: moved.get(value, value)
            if key == "$ref" and isinstance(value, str)
            else _pointed(value, moved)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_pointed(item, moved) for item in node]
    return node


def _logged(message: str) -> None:
    """The default ``warn`` of :func:`pipeline_schema`."""
    structlog.get_logger(__name__).warning("component_left_out_of_schema", note=message)
