"""Where an output came from: every stage's component, its distribution and version, and
the hashes of the pipeline that chose them, and the environment variables that change what
the compiled steps compute (``XLA_FLAGS`` and the like, by name: :data:`NUMERICS_VARIABLES`).

A reader of an index (or an auditor of a run) can tell from this alone which code
produced it: the component named at each stage, the installed distribution that
provided it and that distribution's version, the sha256 of the pipeline file's bytes
(did someone edit the file?) and of the resolved spec (the file after ``${VAR}`` and
``--set``: did the run do what the file says?). It goes into every manifest and every
run summary.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from seamline.contracts.component import AddedLater
from seamline.contracts.executor import Served
from seamline.contracts.manifest import MAX_SERVED_SHAPES
from seamline.contracts.untrusted import cut
from seamline.contracts.versions import installed_version
from seamline.contracts.workdir import absolute
from seamline.core.code_digest import code_digest
from seamline.core.config import ComponentChoice, ResolvedPipeline
from seamline.core.fingerprint import settled_spec
from seamline.core.precision.decision import float32_decision


def spec_sha256(pipeline: ResolvedPipeline) -> str:
    """sha256 of the resolved spec as what runs (:func:`~.fingerprint.settled_spec`: each
    component's settings as validated, defaults left out) as canonical JSON (sorted keys,
    no spaces): spelling out a default does not change it."""
    data = settled_spec(pipeline)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def corpus_root(pipeline: ResolvedPipeline) -> str | None:
    """The absolute folder the loader reads from, when its config has a ``root`` field.

    Recorded for whoever reads the provenance; nothing opens files because of it. In a
    published manifest it is as easily edited as the rest, so ``seamline search`` never
    reads a snippet back from a document's file under it: it shows the text the output
    stores (sink contract 1.2).
    """
    root = getattr(pipeline.loader.config, "root", None)
    if not isinstance(root, str | os.PathLike):
        return None
    return os.path.abspath(os.fspath(root))


def recorded_config(config: BaseModel) -> dict[str, Any]:
    """``config`` as a manifest records it (JSON data), each relative path in it made
    absolute against the working directory (:func:`~seamline.contracts.workdir.absolute`).

    ``seamline search``, ``serve`` and ``open_index`` rebuild the model from this record,
    from whatever folder they run in: a model's ``weights: qwen3-st`` recorded as written
    was looked up there, and read another folder of that name (other vectors for the
    queries, no warning) or none. So the host records what this run opened, for every
    model, instead of each author making its paths absolute. A setting held as a path (a
    ``Path``, ``NamedPath``, or a list of them) is one; text is recorded as written (a
    model whose paths are text makes them absolute itself). The spec's hashes are not
    taken from this record: a relative path stays relative there (a moved folder resumes).

    Every setting is recorded, defaults included (a later change of a default cannot change
    the model rebuilt from it), except one marked :class:`~seamline.contracts.AddedLater`
    while it holds its default (:func:`unrecorded_defaults`): an older seamline, which
    refuses a setting it does not know, still reads the output and resumes its checkpoint.
    """
    dumped = config.model_dump(mode="json", exclude=unrecorded_defaults(config))
    for name in type(config).model_fields:
        value = getattr(config, name)
        many = isinstance(value, list | tuple)
        paths = list(value) if many else [value]
        if name not in dumped or not paths or not all(isinstance(p, Path) for p in paths):
            continue
        made = [str(p if p.is_absolute() else absolute(p)) for p in paths]
        dumped[name] = made if many else made[0]
    return dumped


def unrecorded_defaults(config: BaseModel) -> dict[str, Any]:
    """The fields of ``config`` a record leaves out, as pydantic's ``exclude`` takes them:
    each marked :class:`~seamline.contracts.AddedLater` that holds its default (whose
    default computes what was computed before it existed), in nested models too.

    A setting added to ``bert-encoder`` (``window_edges``, default ``tokens``) was recorded
    in every manifest, and the seamline of the day before refused every output this one
    wrote (``unknown field 'model.with.window_edges'``), though it computes them alike.
    """
    left: dict[str, Any] = {}
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        marked = any(isinstance(m, AddedLater) for m in field.metadata)
        if marked and value == field.get_default(call_default_factory=True):
            left[name] = True
        elif isinstance(value, BaseModel) and (inner := unrecorded_defaults(value)):
            left[name] = inner
    return left


VERSIONED = ("seamline-core", "seamline-contracts", "jax", "jaxlib", "numpy", "tokenizers")
"""The distributions whose versions decide an output's numbers besides the components'
(whose own versions are in the provenance): the runtime, and the library that cuts text."""


def run_versions() -> dict[str, str]:
    """The manifest's ``versions``: those of :data:`VERSIONED` installed here, and
    ``seamline-code``, the digest of seamline's code (its versions stay 0.1.0 while the code
    changes). ``--resume`` and the merge modes refuse an output whose versions differ;
    ``seamline search`` warns of one."""
    found = {dist: installed_version(dist, "") for dist in VERSIONED}
    found["seamline-code"] = code_digest()
    return {dist: version for dist, version in found.items() if version}


NUMERICS_VARIABLES = (
    "XLA_FLAGS",
    "LIBTPU_INIT_ARGS",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "JAX_ENABLE_X64",
    "JAX_DISABLE_JIT",
    "NVIDIA_TF32_OVERRIDE",
)
"""The environment variables that change what the compiled steps compute, read by XLA, the
TPU runtime, JAX's configuration and cuBLAS: the flags XLA compiles with, a matmul's
precision, 64-bit types, running without compiling, TF32 products. Two runs of one pipeline
under different values can write different vectors; only these named ones are recorded
(never the whole environment, which holds secrets)."""

MAX_VARIABLE_CHARS = 4096
"""The most characters of one variable's value the record keeps (its length is said)."""


def numerics_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The :data:`NUMERICS_VARIABLES` set in ``environ`` (the process's by default), each
    value cut to :data:`MAX_VARIABLE_CHARS`: the provenance's ``environment``."""
    source = os.environ if environ is None else environ
    return {
        name: cut(source[name], MAX_VARIABLE_CHARS) for name in NUMERICS_VARIABLES if name in source
    }


def _component(choice: ComponentChoice) -> dict[str, str]:
    return {
        "use": choice.name,
        "distribution": choice.distribution or "unknown",
        "version": choice.version or "?",
    }


def attention_served(served: Served) -> dict[str, str | list[str]]:
    """The manifest's ``attention_served``: shape signature → the attention implementation
    that served it, known once the run has run (the manifest's ``attention`` is the setting
    as asked, ``use: auto`` say). Implementations agree within verification's tolerance,
    not bit for bit, so reproducing an output's vectors exactly takes the one that served
    them. At most :data:`~seamline.contracts.manifest.MAX_SERVED_SHAPES` (a run plans one
    per bucket and batch size: a few dozen), by signature. A shape whose rows several
    implementations computed (a resumed run, shards on two workers) lists them all."""
    return {
        signature: (chosen if isinstance(chosen, str) else list(chosen))
        for signature in sorted(served)[:MAX_SERVED_SHAPES]
        for chosen in [served[signature]]
    }


def provenance(pipeline: ResolvedPipeline) -> dict[str, Any]:
    """The provenance record of ``pipeline`` (plain JSON data)."""
    components: dict[str, Any] = {
        "loader": _component(pipeline.loader),
        "model": _component(pipeline.model),
        "attention": [_component(c) for c in pipeline.attention.candidates],
        "sink": _component(pipeline.sink),
        "monitors": [_component(m) for m in pipeline.monitors],
    }
    if pipeline.attention.reference is not None:
        components["attention_reference"] = _component(pipeline.attention.reference)
    if pipeline.executor is not None:
        components["executor"] = _component(pipeline.executor)
    return {
        "corpus_root": corpus_root(pipeline),
        "pipeline_file": pipeline.source,
        "pipeline_sha256": pipeline.file_sha256,
        "spec_sha256": spec_sha256(pipeline),
        "components": components,
        "precision": (pipeline.precision or float32_decision()).record(),
        "environment": numerics_environment(),
    }


def describe(record: dict[str, Any]) -> list[str]:
    """A provenance record as short lines for a terminal (``seamline run``, ``validate``)."""
    components = record.get("components", {})

    def one(entry: dict[str, str]) -> str:
        return f"{entry['use']} ({entry['distribution']} {entry['version']})"

    parts = []
    for stage in ("loader", "model", "sink", "executor"):
        if stage in components:
            parts.append(f"{stage} {one(components[stage])}")
    for stage in ("attention", "monitors"):
        if components.get(stage):
            parts.append(f"{stage} {', '.join(one(e) for e in components[stage])}")
    precision = record.get("precision")
    if isinstance(precision, dict) and precision.get("chosen") not in (None, "float32"):
        parts.append(f"precision {precision['chosen']}")
    file_hash = record.get("pipeline_sha256") or "-"
    lines = [
        f"pipeline sha256 {file_hash} (file), {record.get('spec_sha256', '-')} (resolved spec)",
        "components: " + "; ".join(parts),
    ]
    environment = record.get("environment")
    if isinstance(environment, dict) and environment:
        lines.append("environment: " + ", ".join(f"{k}={v}" for k, v in environment.items()))
    return lines
