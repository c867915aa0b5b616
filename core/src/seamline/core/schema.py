"""JSON Schema of pipeline files, including every installed component's ``with:`` block.

Editors (VS Code's YAML extension, for one) use it for completion and inline
errors: a ``use:`` picks the component and its config schema applies to ``with:``.
"""

from __future__ import annotations

from typing import Any

from seamline.contracts import Kind
from seamline.core.config.spec import PipelineSpec
from seamline.core.registry import Registry


def _component_ref(registry: Registry, kind: Kind, description: str) -> dict[str, Any]:
    names = registry.names(kind)
    variants = []
    for name in names:
        config = registry.config_model(kind, name).model_json_schema()
        variants.append(
            {
                "if": {"properties": {"use": {"const": name}}, "required": ["use"]},
                "then": {"properties": {"with": config}},
            }
        )
    return {
        "type": "object",
        "description": description,
        "properties": {
            "use": {"enum": names, "description": f"Registered name of the {kind}."},
            "with": {"type": "object", "description": f"The {kind}'s configuration."},
        },
        "required": ["use"],
        "additionalProperties": False,
        "allOf": variants,
    }


def pipeline_schema(registry: Registry) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a pipeline file for the installed components."""
    base = PipelineSpec.model_json_schema(by_alias=True)
    properties = base["properties"]
    for kind in ("loader", "model", "sink"):
        properties[kind] = _component_ref(registry, kind, properties[kind].get("description", ""))
    properties["monitors"] = {
        "type": "array",
        "description": properties["monitors"].get("description", ""),
        "items": _component_ref(registry, "monitor", "A monitor."),
    }
    run = base.get("$defs", {}).get("RunSettings", {}).get("properties", {})
    if "executor" in run:
        run["executor"] = _component_ref(
            registry, "executor", run["executor"].get("description", "")
        )
    attention_names = registry.names("attention")
    properties["attention"] = {
        "type": "object",
        "description": "The attention behind the model's seam.",
        "properties": {
            "use": {
                "anyOf": [
                    {"enum": ["auto", *attention_names]},
                    {"type": "array", "items": {"enum": attention_names}, "minItems": 1},
                ]
            },
            "with": {"type": "object"},
        },
        "additionalProperties": False,
    }
    return {
        **base,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "seamline pipeline",
    }
