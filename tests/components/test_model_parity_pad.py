"""A literal pad token inside a text, against sentence-transformers (``tests/golden/parity.npz``).

The tokenizer turns a ``<pad>`` written in the text into the pad id, with an attention
mask of 1: it is a token of the text, attended and pooled. transformers' MPNet numbers
positions from the ids (``create_position_ids_from_input_ids``), so that token gets the
padding position and every token after it one less than its index; seamline once
counted positions up regardless, and missed the reference by 2.75e-2 on
all-mpnet-base-v2. BERT numbers positions 0, 1, ... whatever the ids: the same texts
must match there too. ``tests/golden/make_parity_golden.py`` made the goldens.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models import bert, mpnet
from seamline.components.models.encoder import SentenceEncoder
from seamline.contracts import Document, Example
from tests.components.padded_batches import embed_padded

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"
META: dict[str, Any] = json.loads((GOLDEN / "parity.meta.json").read_text(encoding="utf-8"))
ATOL = 1e-5
CASES = {
    "mpnet_pad": (mpnet.MpnetEncoder, mpnet.Config),
    "bert_pad": (bert.BertEncoder, bert.Config),
}


def golden(case: str) -> dict[str, Any]:
    with np.load(GOLDEN / "parity.npz") as npz:
        return {key[len(case) + 1 :]: npz[key] for key in npz.files if key.startswith(case + "_")}


def encoder_for(case: str) -> SentenceEncoder[Any]:
    kind, config = CASES[case]
    weights = str(GOLDEN.parent.parent / META["cases"][case]["checkpoint"])
    return kind(config(weights=weights))  # type: ignore[no-any-return]


def first_windows(encoder: SentenceEncoder[Any], texts: Any) -> list[Example]:
    return [encoder.prepare(Document(str(i), str(text)))[0] for i, text in enumerate(texts)]


def apply_of(encoder: SentenceEncoder[Any]) -> Any:
    return jax.jit(functools.partial(encoder.apply, attention=NativeAttention(NativeConfig())))


@pytest.mark.parametrize("case", sorted(CASES))
def test_literal_pad_tokens_match_the_reference(case: str) -> None:
    found = golden(case)
    encoder = encoder_for(case)
    examples = first_windows(encoder, found["texts"])
    ids = np.split(found["input_ids_flat"], np.cumsum(found["num_tokens"])[:-1])
    for example, want in zip(examples, ids, strict=True):
        assert example.features["input_ids"].tolist() == want.tolist()
    pad_id = META["cases"][case]["pad_id"]
    assert any(pad_id in e.features["input_ids"].tolist() for e in examples)
    got = embed_padded(encoder, apply_of(encoder), encoder.load(), examples, shortest=16)
    assert float(np.max(np.abs(got - found["embedding"]))) <= ATOL


def test_packed_rows_number_pad_positions_per_example() -> None:
    """Positions restart per packed example: a pad token counts within its own example only."""
    found = golden("mpnet_pad")
    encoder = encoder_for("mpnet_pad")
    examples = first_windows(encoder, found["texts"])
    length = 128
    assert sum(e.length for e in examples) <= length
    batch = encoder.collate(examples, 2, length, rows=[0] * len(examples))
    out = np.asarray(apply_of(encoder)(encoder.load(), batch.arrays))[list(batch.output_rows)]
    assert float(np.max(np.abs(out - found["embedding"]))) <= ATOL
