"""Embed a model's examples in padded batches, as the golden tests of every encoder do.

Eight consecutive windows a batch, padded to a shared power-of-two length: a golden
test that reproduces the reference this way also proves that padding changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
import numpy.typing as npt

from seamline.contracts import Example, Model

BATCH = 8


def bucket(length: int, max_length: int, shortest: int) -> int:
    """Round a batch length up to a power of two (at least ``shortest``), so few shapes compile."""
    return min(max_length, max(shortest, 1 << (length - 1).bit_length()))


def embed_padded(
    model: Model[Any],
    apply: Callable[..., jax.Array],
    params: Any,
    examples: Sequence[Example],
    *,
    shortest: int,
) -> npt.NDArray[np.float32]:
    """Every example's vector, in order, from batches of :data:`BATCH` padded together."""
    outputs = []
    for start in range(0, len(examples), BATCH):
        group = examples[start : start + BATCH]
        batch = model.collate(
            group, BATCH, bucket(max(e.length for e in group), model.max_length, shortest)
        )
        out = np.asarray(apply(params, batch.arrays))
        assert np.all(np.isfinite(out)), "padding rows must stay finite"
        outputs.append(out[list(batch.example_rows)])
    return np.concatenate(outputs).astype(np.float32)
