"""Run the hostile corpus through a real loader and the real ``jsonl`` sink.

The model is the fixture model of ``tests.core.toy`` (it tokenises by words and
raises on one text, standing in for a tokenizer failure), so a run takes seconds,
not the minutes the real encoder's compilations would; the loaders, the
orchestrator and the sink are the ones a user runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seamline.components.attention.native import NativeAttention
from seamline.components.loaders.jsonl import JsonlLoader
from seamline.components.loaders.parquet import ParquetLoader
from seamline.components.loaders.text_files import TextFilesLoader
from seamline.components.sinks.jsonl import JsonlSink
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator, RunSummary
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import ToyModel
from tests.hostile.corpus import MAX_BYTES, Corpus

if TYPE_CHECKING:
    from pathlib import Path


LOADERS = ("text-files", "jsonl", "parquet")
"""Every loader the hostile corpus runs through, in the table's order: the one list the
tests (test_hostile_corpus.py) and the table (outcomes.py) read. A new loader adds its
name here, its class to :func:`registry`, its ``with:`` block to :func:`loader_block` and
its cases (``Case(loader=...)``) to :mod:`tests.hostile.corpus`."""


@dataclass(frozen=True)
class Result:
    """What one run of the corpus left: its summary, and the output files read back."""

    summary: RunSummary
    records: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    output: Path


def registry() -> Registry:
    """The real loaders and sink, the native attention, and the fixture model."""
    components: list[type[Any]] = [
        TextFilesLoader,
        JsonlLoader,
        ParquetLoader,
        JsonlSink,
        ToyModel,
        NativeAttention,
    ]
    return Registry(
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.0"
        )
        for c in components
    )


def loader_block(corpus: Corpus, loader: str) -> str:
    """The pipeline's loader, as YAML: each sets ``max_bytes`` below the corpus's big document."""
    options: dict[str, Any]
    if loader == "text-files":
        options = {"root": str(corpus.files_root), "max_bytes": MAX_BYTES}
    elif loader == "parquet":
        options = {"path": str(corpus.parquet_root / "*.parquet"), "max_bytes": MAX_BYTES}
    else:
        options = {"path": str(corpus.jsonl_path), "max_bytes": MAX_BYTES}
        options["metadata_fields"] = ["score"]
    return json.dumps({"use": loader, "with": options})


def run(corpus: Corpus, loader: str, out: Path) -> Result:
    """Run ``loader`` over its part of the corpus into ``out/emb.jsonl``; read the output back."""
    output = out / "emb.jsonl"
    sink = json.dumps({"use": "jsonl", "with": {"path": str(output)}})
    text = (
        "pipeline: hostile\n"
        f"loader: {loader_block(corpus, loader)}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {sink}\n"
        "run: {batch_size: 64, buckets: [4, 16]}\n"
    )
    reg = registry()
    orchestrator = Orchestrator(parse_pipeline(text, "hostile.yaml", reg), reg)
    summary = orchestrator.run()
    return Result(
        summary,
        strict_json_lines(output),
        strict_json_lines(output.with_name("emb.errors.jsonl")),
        output,
    )


def strict_json_lines(path: Path) -> list[dict[str, Any]]:
    """Each line of ``path`` as strict JSON: a bare ``NaN`` or ``Infinity`` fails the read."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{path.name} holds {constant}, which is not JSON")

    text = path.read_bytes().decode("utf-8")  # strict: the file must be valid UTF-8
    return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]
