"""The model a whole-process benchmark measures, read from the pipeline it runs.

A benchmark that compares ``seamline run PIPELINE`` with sentence-transformers must give
the reference the same checkpoint, the same maximum length and the same windows, and
count the same work. All of that follows from the pipeline's ``model:`` section (with
the benchmark's ``--set`` overrides applied, as the run applies them), so it is read from
there once, through seamline's own resolution, rather than kept in a second table per
model: all-MiniLM-L6-v2 for ``embed-docs.yaml``, all-mpnet-base-v2 for
``embed-docs-mpnet.yaml``, and whichever checkpoint a user's pipeline names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class ModelUnderTest:
    """A pipeline's model, built; where its checkpoint is; and what a token costs in it."""

    component: str
    """The model component's name (``bert-encoder``, ``mpnet-encoder``, ...)."""
    encoder: Any
    """The built component: its ``prepare`` makes the windows the run embeds."""
    checkpoint: Path
    """The sentence-transformers folder (``modules.json``, ``1_Pooling/``) the reference loads."""
    tokenizer: Path
    max_length: int
    layers: int
    hidden: int
    feed_forward: int

    @property
    def dense_flops_per_token(self) -> int:
        """Every layer's four projections and two feed-forward matmuls, per token."""
        return self.layers * 2 * (4 * self.hidden**2 + 2 * self.hidden * self.feed_forward)

    @property
    def attention_flops_per_pair(self) -> int:
        """``q.k`` and ``p.v`` over all heads, per pair of tokens in one window."""
        return self.layers * 2 * 2 * self.hidden

    def useful_flops(self, lengths: Sequence[int]) -> float:
        """FLOPs that real tokens need (no padding): dense layers per token, attention per pair."""
        return float(
            sum(
                self.dense_flops_per_token * n + self.attention_flops_per_pair * n * n
                for n in lengths
            )
        )


def model_under_test(pipeline: Path, overrides: Sequence[str] = ()) -> ModelUnderTest:
    """Resolve ``pipeline`` (with ``overrides``) as ``seamline run`` would, and build its model."""
    from seamline.components.models.weights import read_model_files, resolve_source
    from seamline.core import load_trusted

    resolved, registry = load_trusted(pipeline, overrides)
    encoder: Any = registry.create("model", resolved.model.name, resolved.model.config)
    weights = getattr(resolved.model.config, "weights", None)
    if not isinstance(weights, str):
        raise ValueError(
            f"{pipeline}: model {resolved.model.name!r} names no 'weights' folder, so the "
            "reference cannot load the same checkpoint; use a sentence encoder's pipeline"
        )
    files = read_model_files(resolve_source(weights))
    shape = encoder.architecture
    return ModelUnderTest(
        component=resolved.model.name,
        encoder=encoder,
        checkpoint=files.root,
        tokenizer=files.tokenizer_path,
        max_length=int(encoder.max_length),
        layers=shape.num_layers,
        hidden=shape.hidden_size,
        feed_forward=shape.intermediate_size,
    )
